"""The shared oracle helpers, and answer_queries on the paths the contract suite rarely takes."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import fastmwem.workloads
from fastmwem.data.domain import Domain
from fastmwem.workloads import (
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
)
from fastmwem.workloads import counting as counting_module
from fastmwem.workloads import matrix as matrix_module
from fastmwem.workloads import oracles as oracles_module
from fastmwem.workloads.oracles import ConcatenatedOracle, check_k, check_query_vectors, top_k


def _binary(d: int) -> Domain:
    return Domain([f"b{i}" for i in range(d)], [2] * d)


def test_workloads_never_import_indices() -> None:
    """Workloads meet the oracle protocol structurally; the two packages stay independent."""
    root = pathlib.Path(fastmwem.workloads.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            assert not any(n.startswith("fastmwem.indices") for n in names), path.name


def test_top_k_pads_and_orders() -> None:
    scores, ids = top_k(np.array([1.0, 3.0, 2.0]), 5)
    assert scores.tolist() == [3.0, 2.0, 1.0, -np.inf, -np.inf]
    assert ids.tolist() == [1, 2, 0, -1, -1] and ids.dtype == np.int64
    scores, ids = top_k(np.array([1.0, 3.0, 2.0, 3.0]), 2)
    assert scores.tolist() == [3.0, 3.0] and sorted(ids.tolist()) == [1, 3]


@pytest.mark.parametrize("bad,error", [(0, ValueError), (-2, ValueError), (1.0, TypeError),
                                       (True, TypeError), ("3", TypeError), (None, TypeError)])
def test_check_k(bad: object, error: type) -> None:
    with pytest.raises(error, match="k must be"):
        check_k(bad)


def test_check_query_vectors() -> None:
    assert check_query_vectors([1, 2, 3], 3).shape == (1, 3)
    for bad in (np.zeros((2, 4)), np.zeros((0, 3)), np.zeros((1, 1, 3))):
        with pytest.raises(ValueError, match="shape"):
            check_query_vectors(bad, 3)
    with pytest.raises(TypeError, match="queries"):
        check_query_vectors([["a", "b", "c"]], 3)
    with pytest.raises(TypeError, match="complex"):
        check_query_vectors(np.ones(3) * 1j, 3)


def test_score_refuses_bad_query_and_ids() -> None:
    oracle = Parities.all_kway(_binary(3), 2).top_k_oracle()
    with pytest.raises(ValueError, match="one vector"):
        oracle.score([0], np.zeros((2, 8)))
    with pytest.raises(ValueError, match="finite"):
        oracle.score([0], np.full(8, np.nan))
    with pytest.raises(ValueError, match="ids"):
        oracle.score([7], np.zeros(8))
    with pytest.raises(TypeError, match="ids"):
        oracle.score([0.5], np.zeros(8))


def test_scan_oracle_score_follows_a_vector_changed_in_place() -> None:
    """The cached answers are keyed by content: a vector changed after search is rescored."""
    w = RandomCountingQueries(Domain(["a"], [16]), 30, rng=1)
    oracle = w.top_k_oracle()
    v = np.random.default_rng(0).normal(size=16)
    _, ids = oracle.search(v, 5)
    np.testing.assert_array_equal(oracle.score(ids[0], v), w.answer(v)[ids[0]])
    v[:] = np.arange(16.0)
    np.testing.assert_allclose(oracle.score(ids[0], v), w.answer(v)[ids[0]], rtol=1e-12)


def test_scan_oracle_without_cache_room_is_still_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oracles_module, "MAX_CACHED_SCORES", 10)
    w = RangeQueries.random(Domain(["a", "b"], [9, 3]), ["a", "b"], 40, rng=2)
    oracle = w.top_k_oracle()
    v = np.random.default_rng(1).normal(size=27)
    scores, ids = oracle.search(np.stack([v, -v]), 6)
    np.testing.assert_allclose(oracle.score(ids[0], v), scores[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(oracle.score(ids[1], -v), scores[1], rtol=1e-12, atol=1e-12)


def test_concatenated_oracle_refuses_mixed_dimensions() -> None:
    a = Parities.all_kway(_binary(2), 1).top_k_oracle()
    b = Parities.all_kway(_binary(3), 1).top_k_oracle()
    with pytest.raises(ValueError, match="dimension"):
        ConcatenatedOracle([a, b])


class _PlainWorkload:
    """A workload-like part with no answer_queries or top_k_oracle of its own."""

    def __init__(self, matrix: np.ndarray, domain: Domain) -> None:
        self.inner = MatrixWorkload(domain, matrix)
        self.domain = domain
        for name in ("answer", "answer_group", "answer_transpose", "multiply_group", "row",
                     "group_offsets", "query_sensitivity", "group_sensitivity", "n_queries"):
            setattr(self, name, getattr(self.inner, name))


def test_concatenate_falls_back_for_parts_without_oracles() -> None:
    d = Domain(["a"], [5])
    rng = np.random.default_rng(3)
    plain = _PlainWorkload(rng.normal(size=(4, 5)), d)
    w = Concatenate([plain, Marginals.all_kway(d, 1)])
    h = rng.normal(size=5)
    np.testing.assert_allclose(w.answer_queries(h, [0, 3, 6]), w.answer(h)[[0, 3, 6]], rtol=1e-12)
    scores, ids = w.top_k_oracle().search(h, 9)
    np.testing.assert_allclose(scores[0], np.sort(w.answer(h))[::-1], rtol=1e-12)
    np.testing.assert_allclose(w.answer(h)[ids[0]], scores[0], rtol=1e-12)


def test_marginals_answer_few_groups_one_by_one() -> None:
    """Few chosen marginals out of many: answered per group, equal to answer()."""
    d = _binary(7)
    w = Marginals.all_kway(d, 3)  # 35 groups
    h = np.random.default_rng(4).random(d.size)
    ids = np.array([0, 5, 3, 8 * 20 + 2])
    np.testing.assert_allclose(w.answer_queries(h, ids), w.answer(h)[ids], rtol=1e-12)


def test_parities_answer_few_by_differencing() -> None:
    d = Domain(["a", "n", "b", "c"], [2, 3, 2, 2])
    w = Parities(d, [["a"], ["b", "c"], ["a", "b", "c"], []])
    h = np.random.default_rng(5).normal(size=d.size)
    for ids in ([1], [2, 2], [0, 1, 2], [3]):
        np.testing.assert_allclose(w.answer_queries(h, ids), w.answer(h)[ids], rtol=1e-12, atol=1e-12)


def test_counting_answers_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting_module, "_UNPACKED_CELLS", 20)
    d = Domain(["a", "b"], [5, 3])
    w = RandomCountingQueries(d, 25, rng=6)
    h = np.random.default_rng(6).random(d.size)
    ids = np.arange(25)[::-1]
    np.testing.assert_allclose(w.answer_queries(h, ids), w.answer(h)[ids], rtol=1e-12)


def test_dense_matrix_answers_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matrix_module, "_CHUNK_ENTRIES", 10)
    d = Domain(["a"], [6])
    rng = np.random.default_rng(7)
    w = MatrixWorkload(d, rng.normal(size=(9, 6)))
    h = rng.random(6)
    ids = np.array([8, 0, 4, 4, 1])
    np.testing.assert_allclose(w.answer_queries(h, ids), w.answer(h)[ids], rtol=1e-12)
