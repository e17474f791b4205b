"""BranchAndBoundOracle: exact top-k against brute force, pruning on structure, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data.domain import Domain
from fastmwem.workloads import BranchAndBoundOracle, RandomCountingQueries


def _vectors(rng: np.random.Generator, d: int) -> list[np.ndarray]:
    spike = np.zeros(d)
    spike[rng.integers(d)] = 5.0
    return [rng.normal(size=d), np.ones(d), np.zeros(d), spike, -np.ones(d),
            np.where(np.arange(d) % 2 == 0, 1.0, -1.0), rng.integers(-1, 2, size=d) * 1.0,
            rng.normal(size=d) * 10.0 ** rng.integers(-8, 8, size=d)]


def _clustered(rng: np.random.Generator, m: int, d: int, flip: float) -> np.ndarray:
    centers = rng.random((5, d)) < 0.5
    return centers[rng.integers(0, 5, size=m)] ^ (rng.random((m, d)) < flip)


def _intervals(n: int) -> np.ndarray:
    lo, hi = np.triu_indices(n)
    cells = np.arange(n)
    return (cells >= lo[:, None]) & (cells <= hi[:, None])


def _check_every_k(keys: np.ndarray, leaf_size: int, rng: np.random.Generator) -> None:
    oracle = BranchAndBoundOracle(keys, leaf_size=leaf_size)
    dense = keys.astype(np.float64)
    m = keys.shape[0]
    for v in _vectors(rng, keys.shape[1]):
        truth = np.sort(dense @ v)[::-1]
        tol = 1e-9 * (1.0 + np.abs(v).sum())
        for k in range(1, m + 2):
            scores, ids = oracle.search(v, k)
            n = min(k, m)
            assert np.unique(ids[0, :n]).size == n and np.all(ids[0, n:] == -1)
            np.testing.assert_allclose(scores[0, :n], truth[:n], rtol=0, atol=tol)
            np.testing.assert_allclose(scores[0, :n], dense[ids[0, :n]] @ v, rtol=0, atol=tol)
            np.testing.assert_array_equal(oracle.score(ids[0, :n], v), scores[0, :n])


@pytest.mark.parametrize("leaf_size", [1, 3, 8, 100])
def test_every_k_on_random_keys(leaf_size: int) -> None:
    rng = np.random.default_rng(leaf_size)
    _check_every_k(rng.random((37, 19)) < 0.4, leaf_size, rng)


@pytest.mark.parametrize("leaf_size", [2, 6])
def test_every_k_on_clustered_keys(leaf_size: int) -> None:
    rng = np.random.default_rng(10 + leaf_size)
    _check_every_k(_clustered(rng, 45, 30, 0.05), leaf_size, rng)


def test_every_k_on_interval_keys_and_duplicates() -> None:
    rng = np.random.default_rng(20)
    keys = np.concatenate([_intervals(8), _intervals(8)[::3]])  # repeated keys too
    _check_every_k(keys, 4, rng)


def test_many_identical_keys_form_one_cluster() -> None:
    keys = np.tile(np.array([[1, 0, 1, 1, 0]]), (50, 1))
    oracle = BranchAndBoundOracle(keys, leaf_size=4)
    assert oracle.n_clusters == 1
    scores, ids = oracle.search(np.array([1.0, 9.0, 2.0, -1.0, 9.0]), 3)
    assert scores.tolist() == [[2.0, 2.0, 2.0]] and np.unique(ids).size == 3


def test_structure_prunes_clusters() -> None:
    """On interval keys and a vector with one positive bump, most clusters stay closed."""
    n = 64
    keys = _intervals(n)
    oracle = BranchAndBoundOracle(keys, leaf_size=16)
    v = -np.ones(n)
    v[30:34] = 5.0
    scores, ids = oracle.search(v, 10)
    truth = np.sort(keys.astype(float) @ v)[::-1][:10]
    np.testing.assert_allclose(scores[0], truth)
    assert oracle.clusters_opened < oracle.n_clusters // 4


def test_from_packed_matches_dense_keys_and_ignores_pad_bits() -> None:
    d = Domain(["a", "b"], [5, 3])  # 15 cells: one pad bit
    w = RandomCountingQueries(d, 40, rng=3)
    dense = w.dense()
    packed = w.packed.copy()
    packed[:, -1] |= 1  # set the pad bit: it is no cell
    oracle = BranchAndBoundOracle.from_packed(packed, d.size, leaf_size=4)
    assert (oracle.n_keys, oracle.dimension) == (40, 15)
    v = np.random.default_rng(3).normal(size=15)
    for k in (1, 5, 40):
        scores, ids = oracle.search(v, k)
        np.testing.assert_allclose(scores[0], np.sort(dense @ v)[::-1][:k], atol=1e-12)
        np.testing.assert_allclose(dense[ids[0]] @ v, scores[0], atol=1e-12)


@pytest.mark.parametrize("keys,error,match", [
    ([[0, 2, 1]], ValueError, "only 0 and 1"),
    ([[0, np.nan, 1]], ValueError, "only 0 and 1"),
    ([0, 1, 1], ValueError, "2-D"),
    (np.zeros((0, 3)), ValueError, "2-D"),
    (np.zeros((3, 0)), ValueError, "2-D"),
    ([["0", "1"]], TypeError, "0/1"),
    ("0101", TypeError, "0/1"),
    ([[1, 0], [1]], ValueError, "0/1"),
])
def test_bad_keys_are_refused(keys: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        BranchAndBoundOracle(keys)


def test_bad_leaf_size_and_packed_are_refused() -> None:
    with pytest.raises(ValueError, match="leaf_size"):
        BranchAndBoundOracle([[0, 1]], leaf_size=0)
    with pytest.raises(TypeError, match="leaf_size"):
        BranchAndBoundOracle([[0, 1]], leaf_size=2.0)
    with pytest.raises(TypeError, match="uint8"):
        BranchAndBoundOracle.from_packed(np.zeros((2, 1), dtype=np.int64), 8)
    with pytest.raises(ValueError, match="shape"):
        BranchAndBoundOracle.from_packed(np.zeros((2, 2), dtype=np.uint8), 8)
    with pytest.raises(ValueError, match="dimension"):
        BranchAndBoundOracle.from_packed(np.zeros((2, 1), dtype=np.uint8), 0)
