"""Workload bounds: entries whose answers could overflow, and memory checked before allocating."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from fastmwem._validation import MEMORY_LIMIT_ENV, ResourceLimitError
from fastmwem.data import Domain
from fastmwem.workloads import (
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
    cuboids,
)
from fastmwem.workloads.base import MAX_QUERY_VALUE
from fastmwem.workloads.spec import parse_workload

D = Domain(["a", "b", "c"], [2, 3, 2])
WIDE = Domain([f"a{i}" for i in range(200)], [2] * 200)


@pytest.mark.parametrize("make", [np.asarray, sp.csr_array], ids=["dense", "sparse"])
@pytest.mark.parametrize("value", [1e308, -1e308, 1e201])
def test_matrix_entries_whose_answers_could_overflow_are_refused(make, value):
    matrix = np.zeros((2, D.size))
    matrix[1, 3] = value
    with pytest.raises(ValueError, match=r"within \+-1e\+200"):
        MatrixWorkload(D, make(matrix))


@pytest.mark.parametrize("make", [np.asarray, sp.csr_array], ids=["dense", "sparse"])
def test_matrix_entries_at_the_bound_are_accepted(make):
    matrix = np.zeros((2, D.size))
    matrix[0, 1] = -MAX_QUERY_VALUE
    w = MatrixWorkload(D, make(matrix))
    assert w.query_sensitivity == MAX_QUERY_VALUE
    assert np.all(np.isfinite(w.answer(np.full(D.size, 2.0**63))))


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_matrix_entries_must_be_finite(value):
    matrix = np.ones((2, D.size))
    matrix[1, 1] = value
    with pytest.raises(ValueError, match="finite"):
        MatrixWorkload(D, matrix)


def test_nonnegative_queries_flag():
    marg = Marginals.all_kway(D, 2)
    assert marg.nonnegative_queries
    assert RangeQueries(D, "b", [0], [1]).nonnegative_queries
    assert RandomCountingQueries(D, 3, rng=0).nonnegative_queries
    assert not Parities(D, [["a"]]).nonnegative_queries
    assert MatrixWorkload(D, marg.dense()).nonnegative_queries
    assert MatrixWorkload(D, sp.csr_array(marg.dense())).nonnegative_queries
    assert not MatrixWorkload(D, -marg.dense()).nonnegative_queries
    assert Concatenate([marg, RangeQueries(D, "b", [0], [1])]).nonnegative_queries
    assert not Concatenate([marg, Parities(D, [["a"]])]).nonnegative_queries


# -- memory, estimated before anything is allocated -----------------------------------------------
def test_random_counting_queries_check_memory_first(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1M")
    with pytest.raises(ResourceLimitError, match="10000000 random counting queries would need"):
        RandomCountingQueries(D, 10_000_000, rng=0)


def test_random_range_queries_check_memory_first(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1M")
    with pytest.raises(ResourceLimitError, match="random range queries"):
        RangeQueries.random(D, ["a", "b"], 10_000_000, rng=0)


@pytest.mark.parametrize("make", [
    lambda: Marginals.all_kway(WIDE, 5),
    lambda: Parities.all_kway(WIDE, 5),
    lambda: cuboids(WIDE, 5),
    lambda: parse_workload("marginals:1-6", WIDE),
    lambda: parse_workload("marginals:5", WIDE),
    lambda: parse_workload("parities:5", WIDE),
], ids=["marginals", "parities", "cuboids", "spec range", "spec marginals", "spec parities"])
def test_subset_enumerations_are_sized_before_they_start(make):
    """C(200, 5) = 2.5e9 subsets would take terabytes (and hours) to enumerate."""
    with pytest.raises(ResourceLimitError, match="would need about .* TB of memory"):
        make()


def test_counting_spec_checks_memory(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "64M")
    with pytest.raises(ResourceLimitError, match="random counting queries"):
        parse_workload("counting:100000000", D, seed=0)


def test_a_marginal_beyond_the_dense_limit_is_refused():
    """Its cell count used to be an int64 product, which wraps around silently."""
    huge = Domain(list("abcd"), [10**6] * 4)
    with pytest.raises(ValueError, match="10{24} cells, more than the dense limit"):
        Marginals(huge, [["a", "b", "c", "d"]])


def test_marginals_answer_keeps_few_partial_sums():
    """All 3-way marginals of 16 binary attributes: at most two histograms of scratch memory
    (the trie of partial sums used to keep about 7.5)."""
    d = Domain([f"a{i}" for i in range(16)], [2] * 16)
    w = Marginals.all_kway(d, 3)
    hist = np.random.default_rng(0).random(d.size)
    tracemalloc.start()
    try:
        w.answer(hist)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 2 * hist.nbytes


def test_marginals_answer_in_any_order_of_attribute_sets():
    d = Domain(["a", "b", "c", "e", "f"], [2, 3, 2, 4, 2])
    sets = [("e", "a"), ("b",), ("a", "b", "f"), ("f", "e", "c"), ("a",), ("c", "b"),
            tuple(d.attributes), ("b", "e"), ("a", "c"), ("e",), ("b", "e", "f"), ("a", "f")]
    w = Marginals(d, sets)
    hist = np.random.default_rng(1).random(d.size)
    np.testing.assert_allclose(w.answer(hist), w.dense() @ hist, rtol=1e-12)
