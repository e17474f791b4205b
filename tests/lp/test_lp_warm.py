"""WarmStartIndex: an exact top-k oracle whatever the query sequence; private, never saved."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import TopKOracle
from fastmwem.lp import WarmStartIndex
from fastmwem.lp.oracles import scalar_oracle


def _keys(index_A: np.ndarray, offsets: np.ndarray, E=None, f=None) -> np.ndarray:
    keys = np.hstack([index_A.astype(np.float64), offsets[:, None]])
    if E is not None:
        keys = np.vstack([keys, np.hstack([E, f[:, None]])])
    return keys


def _walk(rng: np.random.Generator, d: int, steps: int, jump: float = 0.15):
    """Queries as MWU makes them (small multiplicative steps on the simplex), with jumps to
    fresh simplex points and, now and then, arbitrary real vectors."""
    x = rng.dirichlet(np.ones(d))
    for _ in range(steps):
        r = rng.random()
        if r < 1 - jump:
            x = x * np.exp(rng.normal(size=d) * 0.05)
            x /= x.sum()
        else:
            x = rng.dirichlet(np.ones(d))
        yield np.append(x, 1.0) if rng.random() < 0.9 else rng.normal(size=d + 1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("ties", [False, True])
def test_search_is_an_exact_top_k_along_any_query_sequence(dtype, ties):
    rng = np.random.default_rng(0 if ties else 1)
    m, d = 6000, 6
    A = rng.random((m, d)).astype(dtype)
    if ties:
        A = (np.round(A * 2) / 2).astype(dtype)
    b = np.round(rng.random(m) * 4) / 10 if ties else rng.random(m) * 0.3
    E, f = rng.random((2, d)), rng.random(2)
    index = WarmStartIndex(A, -b, extra_rows=E, extra_offsets=-f)
    keys = _keys(A, -b, E, -f)
    for v in _walk(rng, d, 150):
        k = int(rng.integers(1, 300))
        scores, ids = index.search(v[None, :], k)
        truth = np.sort(keys @ v)[::-1][:k]
        np.testing.assert_allclose(scores[0], truth, rtol=0, atol=1e-12)
        np.testing.assert_allclose(keys[ids[0]] @ v, scores[0], rtol=0, atol=1e-12)
        # the lazy mechanism compares search and score: identical bits
        np.testing.assert_array_equal(scores[0], index.score(ids[0], v))
    assert index.rescans >= 2 and index.region_rescans + index.rescans < 150  # the cache ran


def test_mwu_like_walk_uses_both_levels_and_stays_exact():
    rng = np.random.default_rng(6)
    m, d = 6000, 10
    A = rng.random((m, d))
    b = A @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05
    index = WarmStartIndex(A, -b)
    keys = _keys(A, -b)
    x = rng.dirichlet(np.ones(d))
    for _ in range(100):
        x = x * np.exp(rng.normal(size=d) * 0.05)
        x /= x.sum()
        v = np.append(x, 1.0)
        scores, _ = index.search(v[None, :], 78)
        np.testing.assert_allclose(scores[0], np.sort(keys @ v)[::-1][:78], rtol=0, atol=1e-12)
    assert index.region_rescans >= 3 and 2 <= index.rescans <= 20


def test_tiny_region_and_forced_cache_on_few_keys():
    rng = np.random.default_rng(2)
    A, b = rng.random((300, 4)), rng.random(300)
    index = WarmStartIndex(A, -b, region=20, brute_force_below=0)
    keys = _keys(A, -b)
    for v in _walk(rng, 4, 100, jump=0.3):
        for k in (1, 5, 18):
            scores, _ = index.search(v[None, :], k)
            np.testing.assert_allclose(scores[0], np.sort(keys @ v)[::-1][:k], atol=1e-12)


def test_siblings_share_keys_and_statistics():
    rng = np.random.default_rng(3)
    A, b = rng.random((5000, 3)), rng.random(5000)
    base = WarmStartIndex(A, -b)
    sibling = base.with_extra_rows(np.ones((1, 3)), np.array([0.5]))
    assert sibling.n_keys == 5001 and sibling._A is base._A and sibling._stats is base._stats
    v = np.array([0.2, 0.3, 0.5, 1.0])
    scores, ids = sibling.search(v[None, :], 3)
    assert ids[0, 0] == 5000 and scores[0, 0] == pytest.approx(1.5)


def test_is_a_private_topk_oracle_that_refuses_to_save(tmp_path):
    rng = np.random.default_rng(4)
    A, b = rng.random((50, 3)), rng.random(50)
    index = WarmStartIndex(A, -b)
    assert isinstance(index, TopKOracle) and index.exact and index.certified_gap == 0.0
    assert index.private
    target = tmp_path / "index.npz"
    with pytest.raises(ValueError, match="private"):
        index.save(target)
    assert not target.exists()


@pytest.mark.parametrize("spec", ["warm", "flat", "faiss:Flat"])
def test_scalar_oracles_holding_b_refuse_to_save(tmp_path, spec):
    if spec.startswith("faiss"):
        pytest.importorskip("faiss")
    rng = np.random.default_rng(5)
    A, b = rng.random((40, 3)), rng.random(40)
    oracle = scalar_oracle(A, b, spec, objective=None if spec == "warm" else np.ones(3))
    target = tmp_path / "keys.npz"
    with pytest.raises(ValueError, match="private"):
        oracle.save(target)
    assert not target.exists() and not any(tmp_path.iterdir())


@pytest.mark.parametrize("kwargs,match", [
    ({"A": np.zeros((0, 3)), "offsets": np.zeros(0)}, "A"),
    ({"A": np.zeros((4, 3)), "offsets": np.zeros(3)}, "offsets"),
    ({"A": np.zeros((4, 3)), "offsets": [0, 0, np.nan, 0]}, "offsets"),
    ({"A": np.zeros((4, 3)), "offsets": np.zeros(4), "extra_rows": np.ones((1, 3))}, "extra"),
    ({"A": np.zeros((4, 3)), "offsets": np.zeros(4), "region": 0}, "region"),
])
def test_bad_construction_is_refused(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        WarmStartIndex(**kwargs)


def test_bad_queries_are_refused():
    index = WarmStartIndex(np.eye(3), np.zeros(3))
    with pytest.raises(ValueError):
        index.search(np.zeros((1, 3)), 1)
    with pytest.raises(ValueError):
        index.search([[0.0, np.inf, 0.0, 1.0]], 1)
    with pytest.raises((ValueError, TypeError), match="k"):
        index.search(np.zeros((1, 4)), 0)
    with pytest.raises(ValueError, match="ids"):
        index.score([3], np.zeros(4))
