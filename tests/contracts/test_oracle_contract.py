"""Contract every top-k oracle (index or structured workload) must meet.

To cover a new oracle add one ``Case`` to ``CASES``: an id and a factory ``rng -> (oracle, keys)``
where ``keys`` is the dense ``(n_keys, dimension)`` matrix the oracle stands for. The suite checks
``search`` against a brute-force scan of ``keys`` (exact oracles only, since an inexact oracle has
no contract beyond shapes and exact ``score``), ties, ``k > n_keys`` padding, and bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
import scipy.sparse as sp

from fastmwem.data.domain import Domain
from fastmwem.indices import TopKOracle, make_index, numba_available
from fastmwem.workloads import (
    AllIntervals,
    BranchAndBoundOracle,
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
    cuboids,
)


class Case(NamedTuple):
    name: str
    make: Callable[[np.random.Generator], tuple[object, np.ndarray]]


class _Reference:
    """The brute-force oracle the suite itself is checked with."""

    exact = True
    certified_gap = 0.0

    def __init__(self, keys: np.ndarray) -> None:
        self.keys = np.asarray(keys, dtype=np.float64)

    @property
    def n_keys(self) -> int:
        return self.keys.shape[0]

    @property
    def dimension(self) -> int:
        return self.keys.shape[1]

    def search(self, queries, k):
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if queries.shape[1] != self.dimension:
            raise ValueError(f"queries must have {self.dimension} columns")
        if not np.all(np.isfinite(queries)):
            raise ValueError("queries must be finite")
        scores = queries @ self.keys.T
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        out_s = np.full((queries.shape[0], k), -np.inf)
        out_i = np.full((queries.shape[0], k), -1, dtype=np.int64)
        kk = order.shape[1]
        out_i[:, :kk] = order
        out_s[:, :kk] = np.take_along_axis(scores, order, axis=1)
        return out_s, out_i

    def score(self, ids, query):
        return self.keys[np.asarray(ids, dtype=np.int64)] @ np.asarray(query, dtype=np.float64)


def _reference(rng: np.random.Generator) -> tuple[object, np.ndarray]:
    keys = rng.normal(size=(40, 6))
    return _Reference(keys), keys


def _workload_case(build: Callable[[np.random.Generator], object]) -> Callable:
    """A workload's own oracle, with its dense query matrix as the keys."""
    def make(rng: np.random.Generator) -> tuple[object, np.ndarray]:
        w = build(rng)
        return w.top_k_oracle(), w.dense()
    return make


def _binary(d: int) -> Domain:
    return Domain([f"b{i}" for i in range(d)], [2] * d)


def _mixed() -> Domain:
    return Domain(["a", "b", "c"], [5, 2, 3])


def _clustered_keys(rng: np.random.Generator, m: int = 60, d: int = 24) -> np.ndarray:
    """Noisy copies of a few patterns: the structure branch and bound prunes on."""
    centers = rng.random((4, d)) < 0.5
    return centers[rng.integers(0, 4, size=m)] ^ (rng.random((m, d)) < 0.05)


def _interval_keys(n: int = 9) -> np.ndarray:
    lo, hi = np.triu_indices(n)
    cells = np.arange(n)
    return (cells >= lo[:, None]) & (cells <= hi[:, None])


def _branch_bound(keys_of: Callable[[np.random.Generator], np.ndarray], leaf_size: int) -> Callable:
    def make(rng: np.random.Generator) -> tuple[object, np.ndarray]:
        keys = keys_of(rng)
        return BranchAndBoundOracle(keys, leaf_size=leaf_size), keys.astype(np.float64)
    return make
def _indexed(spec: str, kind: str, **options) -> Callable[[np.random.Generator], tuple]:
    """A factory for ``make_index(spec)`` over random keys: "normal" (float64 storage),
    "small-int" (float32-exact) or "binary" (0/1, many ties)."""
    ann = spec.startswith("faiss") or spec == "hnswlib"

    def make(rng: np.random.Generator) -> tuple[object, np.ndarray]:
        if ann:
            pytest.importorskip(spec.split(":")[0])
        if kind == "normal":
            keys = rng.normal(size=(40, 6))
        elif kind == "small-int":
            keys = rng.integers(-3, 4, size=(40, 6)).astype(np.float64)
        else:
            keys = (rng.random((40, 11)) < 0.5).astype(np.float64)
        extra = {"progress": False} if ann else {}
        return make_index(spec, keys, **extra, **options), keys
    return make


def _warm_start(rng: np.random.Generator) -> tuple[object, np.ndarray]:
    """fastmwem.lp's WarmStartIndex on random keys, its cache on from the first query."""
    from fastmwem.lp import WarmStartIndex

    keys = rng.normal(size=(40, 6))
    return WarmStartIndex(keys[:, :-1], keys[:, -1], brute_force_below=0), keys


def _numba_bitpacked(rng: np.random.Generator) -> tuple[object, np.ndarray]:
    if not numba_available():
        pytest.skip("numba is not installed")
    return _indexed("bitpacked", "binary", backend="numba")(rng)


CASES: list[Case] = [
    Case("reference", _reference),
    Case("intervals", _workload_case(lambda rng: AllIntervals(_mixed(), "a"))),
    Case("intervals_one_value", _workload_case(lambda rng: AllIntervals(Domain(["a"], [1]), "a"))),
    Case("ranges_random_1d", _workload_case(lambda rng: RangeQueries.random(_mixed(), "a", 12, rng=rng))),
    Case("ranges_boxes", _workload_case(
        lambda rng: RangeQueries.random(_mixed(), ["c", "a"], 15, rng=rng))),
    Case("parities_all", _workload_case(lambda rng: Parities.all_kway(_binary(5), 5))),
    Case("parities_3way", _workload_case(lambda rng: Parities.all_kway(_binary(5), 3, include_lower=False))),
    Case("marginals_2way", _workload_case(lambda rng: Marginals.all_kway(_mixed(), 2))),
    Case("cuboids", _workload_case(lambda rng: cuboids(_mixed()))),
    Case("counting", _workload_case(lambda rng: RandomCountingQueries(_mixed(), 50, rng=rng))),
    Case("matrix_dense", _workload_case(
        lambda rng: MatrixWorkload(_mixed(), rng.normal(size=(30, 30))))),
    Case("matrix_sparse", _workload_case(
        lambda rng: MatrixWorkload(_mixed(), sp.random(30, 30, density=0.2, random_state=3)))),
    Case("concatenate", _workload_case(lambda rng: Concatenate([
        AllIntervals(_mixed(), "c"), Marginals.all_kway(_mixed(), 1),
        RandomCountingQueries(_mixed(), 7, rng=rng)]))),
    Case("branch_bound_random", _branch_bound(lambda rng: rng.random((70, 20)) < 0.5, 4)),
    Case("branch_bound_clustered", _branch_bound(_clustered_keys, 3)),
    Case("branch_bound_intervals", _branch_bound(lambda rng: _interval_keys(), 5)),
    Case("branch_bound_one_leaf", _branch_bound(lambda rng: rng.random((10, 9)) < 0.3, 64)),
    Case("flat-float64", _indexed("flat", "normal")),
    Case("flat-float32", _indexed("flat", "small-int")),
    Case("flat-binary", _indexed("flat", "binary")),
    Case("bitpacked-numpy", _indexed("bitpacked", "binary", backend="numpy")),
    Case("bitpacked-numba", _numba_bitpacked),
    Case("faiss-flat", _indexed("faiss:Flat", "normal")),
    Case("faiss-flat-binary", _indexed("faiss:Flat", "binary")),
    Case("faiss-ivf", _indexed("faiss:IVF4,Flat", "normal")),
    Case("faiss-hnsw", _indexed("faiss:HNSW8", "binary")),
    Case("hnswlib", _indexed("hnswlib", "normal")),
    Case("lp-warm-start", _warm_start),
]

pytestmark = pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])


def _queries(rng: np.random.Generator, d: int) -> list[np.ndarray]:
    """Random and adversarial query vectors: gaussian, all equal, one spike, alternating signs."""
    spike = np.zeros(d)
    spike[rng.integers(d)] = 3.0
    return [rng.normal(size=d), np.ones(d), np.zeros(d), spike,
            np.where(np.arange(d) % 2 == 0, 1.0, -1.0), -rng.exponential(size=d)]


def _check_topk(oracle, keys: np.ndarray, query: np.ndarray, k: int) -> None:
    scores, ids = oracle.search(query[None, :], k)
    assert scores.shape == (1, k) and ids.shape == (1, k)
    assert ids.dtype == np.int64 and scores.dtype == np.float64
    truth = np.sort(keys @ query)[::-1]
    n_real = min(k, keys.shape[0])
    got_ids = ids[0, :n_real]
    assert np.all(got_ids >= 0) and np.unique(got_ids).size == n_real
    # the returned scores are the keys' true scores, in descending order ...
    np.testing.assert_allclose(scores[0, :n_real], keys[got_ids] @ query, rtol=1e-9, atol=1e-9)
    assert np.all(np.diff(scores[0, :n_real]) <= 1e-9)
    # ... and they are a top-k multiset (any tie-break is fine)
    np.testing.assert_allclose(scores[0, :n_real], truth[:n_real], rtol=1e-9, atol=1e-9)
    assert np.all(ids[0, n_real:] == -1) and np.all(scores[0, n_real:] == -np.inf)


def test_is_a_topk_oracle(case):
    oracle, keys = case.make(np.random.default_rng(0))
    assert isinstance(oracle, TopKOracle)
    assert oracle.n_keys == keys.shape[0] and oracle.dimension == keys.shape[1]
    assert isinstance(oracle.exact, bool)


def test_exact_topk_for_every_k(case):
    rng = np.random.default_rng(1)
    oracle, keys = case.make(rng)
    if not oracle.exact:
        pytest.skip("inexact oracle: no top-k contract")
    n = keys.shape[0]
    ks = sorted({1, 2, 3, max(1, n // 2), n - 1 if n > 1 else 1, n, n + 5})
    for query in _queries(rng, keys.shape[1]):
        for k in ks:
            _check_topk(oracle, keys, query, k)


def test_batch_search_matches_single_queries(case):
    rng = np.random.default_rng(2)
    oracle, keys = case.make(rng)
    queries = np.stack(_queries(rng, keys.shape[1]))
    scores, ids = oracle.search(queries, 4)
    assert scores.shape == (queries.shape[0], 4)
    for row, query in enumerate(queries):
        single_scores, _ = oracle.search(query[None, :], 4)
        np.testing.assert_allclose(scores[row], single_scores[0], rtol=1e-9, atol=1e-9)


def test_score_is_exact(case):
    rng = np.random.default_rng(3)
    oracle, keys = case.make(rng)
    ids = rng.integers(0, keys.shape[0], size=min(25, keys.shape[0]))
    for query in _queries(rng, keys.shape[1]):
        got = np.asarray(oracle.score(ids, query))
        np.testing.assert_allclose(got, keys[ids] @ query, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_k_is_refused(case, k):
    oracle, keys = case.make(np.random.default_rng(4))
    with pytest.raises((ValueError, TypeError), match="k"):
        oracle.search(np.zeros((1, keys.shape[1])), k)


def test_wrong_dimension_is_refused(case):
    oracle, keys = case.make(np.random.default_rng(5))
    with pytest.raises(ValueError):
        oracle.search(np.zeros((1, keys.shape[1] + 1)), 1)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_query_is_refused(case, bad):
    oracle, keys = case.make(np.random.default_rng(6))
    query = np.zeros((1, keys.shape[1]))
    query[0, 0] = bad
    with pytest.raises(ValueError):
        oracle.search(query, 1)


def test_search_abs_is_an_exact_top_k_by_absolute_value(case):
    rng = np.random.default_rng(7)
    oracle, keys = case.make(rng)
    if not hasattr(oracle, "search_abs"):
        pytest.skip("no search_abs: the lazy mechanism searches v and -v instead")
    n = keys.shape[0]
    for query in _queries(rng, keys.shape[1]):
        for k in sorted({1, 3, n // 2, n, n + 2}):
            scores, ids = oracle.search_abs(query[None, :], k)
            n_real = min(k, n)
            got = ids[0, :n_real]
            np.testing.assert_allclose(scores[0, :n_real], keys[got] @ query, rtol=1e-9, atol=1e-9)
            truth = np.sort(np.abs(keys @ query))[::-1][:n_real]
            np.testing.assert_allclose(np.abs(scores[0, :n_real]), truth, rtol=1e-9, atol=1e-9)
            assert np.unique(got).size == n_real and np.all(ids[0, n_real:] == -1)


def test_search_scores_equal_score_bit_for_bit(case):
    # The lazy mechanism compares scores from search (the top set) with scores from score (the
    # tail): they must round identically.
    rng = np.random.default_rng(8)
    oracle, keys = case.make(rng)
    for query in _queries(rng, keys.shape[1]):
        scores, ids = oracle.search(query[None, :], 10)
        real = ids[0] >= 0
        np.testing.assert_array_equal(scores[0, real], oracle.score(ids[0, real], query))
