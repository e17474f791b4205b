"""AllIntervals and its exact top-k oracle, against brute force from the codes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastmwem.data.domain import Domain
from fastmwem.workloads import AllIntervals
from fastmwem.workloads import intervals as intervals_module
from fastmwem.workloads.intervals import largest_differences
from fastmwem.workloads.spec import parse_workload


def _brute_pairs(values: np.ndarray) -> np.ndarray:
    """Every values[j] - values[i] with i < j, sorted down."""
    return np.sort([values[j] - values[i] for i, j in itertools.combinations(range(values.size), 2)])[::-1]


def test_queries_are_every_interval_in_order() -> None:
    d = Domain(["x", "y"], [2, 4])
    w = AllIntervals(d, "y")
    codes = np.array(list(np.ndindex(*d.shape)))
    expected = [(lo, hi) for lo in range(4) for hi in range(lo, 4)]
    assert w.n_queries == len(expected) == 10
    for q, (lo, hi) in enumerate(expected):
        assert w.describe(q) == f"y in [{lo}, {hi}]"
        np.testing.assert_array_equal(w.row(q), ((codes[:, 1] >= lo) & (codes[:, 1] <= hi)).astype(float))
    lo, hi = w.bounds(np.arange(w.n_queries))
    np.testing.assert_array_equal(np.column_stack([lo, hi]), expected)
    np.testing.assert_array_equal(w.query_id(lo, hi), np.arange(w.n_queries))


def test_group_offsets_are_cached_and_read_only() -> None:
    w = AllIntervals(Domain(["a"], [6]), "a")
    offsets = w.group_offsets
    assert offsets is w.group_offsets
    np.testing.assert_array_equal(offsets, np.arange(22))
    with pytest.raises(ValueError):
        offsets[0] = 1


def test_bad_arguments_are_refused() -> None:
    d = Domain(["a", "b"], [3, 2])
    with pytest.raises(TypeError, match="attribute"):
        AllIntervals(d, ["a"])
    with pytest.raises(ValueError, match="unknown attribute"):
        AllIntervals(d, "c")
    with pytest.raises(TypeError, match="domain"):
        AllIntervals("a", "a")


def test_too_many_intervals_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intervals_module, "MAX_INTERVALS", 20)
    AllIntervals(Domain(["a"], [5]), "a")  # 15 intervals
    with pytest.raises(ValueError, match="MAX_INTERVALS"):
        AllIntervals(Domain(["a"], [6]), "a")  # 21


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 17])
def test_largest_differences_every_k(n: int) -> None:
    rng = np.random.default_rng(n)
    cases = [rng.normal(size=n), np.zeros(n), np.arange(n, dtype=float), -np.arange(n, dtype=float),
             rng.integers(-2, 3, size=n).astype(float), np.cumsum(rng.normal(size=n))]
    for values in cases:
        truth = _brute_pairs(values)
        for k in range(1, truth.size + 3):
            scores, i, j = largest_differences(values, k)
            assert scores.size == min(k, truth.size)
            assert np.all(i < j) and len(set(zip(i.tolist(), j.tolist()))) == scores.size
            np.testing.assert_array_equal(scores, values[j] - values[i])
            np.testing.assert_allclose(scores, truth[:scores.size], rtol=0, atol=1e-12)


def test_largest_differences_of_one_value_is_empty() -> None:
    scores, i, j = largest_differences(np.array([3.0]), 4)
    assert scores.size == i.size == j.size == 0


def test_oracle_searches_v_and_minus_v_on_a_wide_axis() -> None:
    """Non-power-of-two axis inside a 2-attribute domain, against answer() for all intervals."""
    rng = np.random.default_rng(5)
    d = Domain(["t", "x"], [3, 37])
    w = AllIntervals(d, "x")
    oracle = w.top_k_oracle()
    v = rng.normal(size=d.size)
    full = w.answer(v)
    for k in (1, 7, 100, w.n_queries, w.n_queries + 4):
        scores, ids = oracle.search(np.stack([v, -v]), k)
        n = min(k, w.n_queries)
        np.testing.assert_allclose(scores[0, :n], np.sort(full)[::-1][:n], atol=1e-12)
        np.testing.assert_allclose(scores[1, :n], np.sort(-full)[::-1][:n], atol=1e-12)
        np.testing.assert_allclose(full[ids[0, :n]], scores[0, :n], atol=1e-12)
        np.testing.assert_array_equal(oracle.score(ids[1, :n], -v), scores[1, :n])


def test_spec_names_all_intervals() -> None:
    d = Domain(["age", "sex"], [6, 2])
    w = parse_workload("intervals:age", d)
    assert isinstance(w, AllIntervals) and w.n_queries == 21
    for spec in ("intervals:", "intervals:age,sex"):
        with pytest.raises(ValueError, match="one attribute"):
            parse_workload(spec, d)
    with pytest.raises(ValueError, match="unknown attribute"):
        parse_workload("intervals:height", d)
