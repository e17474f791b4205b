"""Workloads with a marginal structure: each group is a function of one marginal."""

import numpy as np
import pytest

from fastmwem.data import Domain
from fastmwem.workloads import (
    AllIntervals,
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
    cuboids,
)
from fastmwem.workloads.base import groups_of_queries, queries_of_groups

DOMAIN = Domain(["a", "b", "c", "d"], [3, 2, 4, 2])

STRUCTURED = {
    "marginals": lambda d: Marginals.all_kway(d, 2),
    "cuboids": lambda d: cuboids(d, 3),
    "ranges-1d": lambda d: RangeQueries.random(d, "c", 6, rng=0),
    "ranges-2d": lambda d: RangeQueries.random(d, ["c", "a"], 6, rng=1),
    "intervals": lambda d: AllIntervals(d, "c"),
    "concatenated": lambda d: Concatenate([Marginals.all_kway(d, 1), AllIntervals(d, "a")]),
}


def marginal_of(hist: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    other = tuple(a for a in range(len(DOMAIN)) if a not in axes)
    return hist.reshape(DOMAIN.shape).sum(axis=other)


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_groups_are_answered_from_their_marginal(name):
    w = STRUCTURED[name](DOMAIN)
    hist = np.random.default_rng(0).random(DOMAIN.size)
    full = w.answer(hist)
    for g in range(w.n_groups):
        axes = w.group_attributes(g)
        assert axes == tuple(sorted(axes))
        np.testing.assert_allclose(w.answer_on_marginal(g, marginal_of(hist, axes)),
                                   full[w.group_queries(g)])


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_group_on_a_larger_marginal_updates_like_the_full_workload(name):
    """Multiplying a clique table by a group's factors, then summing out, is the dense update."""
    w = STRUCTURED[name](DOMAIN)
    rng = np.random.default_rng(1)
    for g in range(w.n_groups):
        axes = tuple(sorted(set(w.group_attributes(g)) | {1}))
        sub, local = w.group_on_marginal(g, axes)
        assert sub.domain == DOMAIN.project([DOMAIN.attributes[a] for a in axes])
        hist = rng.random(DOMAIN.size)
        table = np.ascontiguousarray(marginal_of(hist, axes)).reshape(-1)
        np.testing.assert_allclose(sub.answer_group(table, local),
                                   w.answer_group(hist, g))
        factors = rng.normal(size=int(w.group_sizes()[g]))
        w.multiply_group(hist, g, factors)
        sub.multiply_group(table, local, factors)
        np.testing.assert_allclose(table, marginal_of(hist, axes).reshape(-1))


@pytest.mark.parametrize("make", [
    lambda d: MatrixWorkload(d, np.eye(d.size)[:3]),
    lambda d: RandomCountingQueries(d, 3, rng=0),
    lambda d: Parities(Domain(["x", "y"], [2, 2]), [["x"]]),
])
def test_unstructured_workloads_say_so(make):
    w = make(DOMAIN)
    assert w.group_attributes(0) is None
    with pytest.raises(TypeError, match="no marginal structure"):
        w.group_on_marginal(0, (0,))
    with pytest.raises(TypeError, match="no marginal structure"):
        w.answer_on_marginal(0, np.ones(3))


def test_axes_must_contain_the_group():
    w = Marginals(DOMAIN, [("a", "c")])
    with pytest.raises(ValueError, match="contain the group's axes"):
        w.group_on_marginal(0, (0, 1))
    with pytest.raises(ValueError, match="sorted"):
        w.group_on_marginal(0, (2, 0))
    with pytest.raises(ValueError, match="12 cells"):
        w.answer_on_marginal(0, np.ones(5))


def test_query_and_group_ids():
    offsets = np.array([0, 2, 3, 7])
    np.testing.assert_array_equal(groups_of_queries(offsets, np.array([0, 1, 2, 6])),
                                  [0, 0, 1, 2])
    np.testing.assert_array_equal(queries_of_groups(offsets, np.array([2, 0])),
                                  [3, 4, 5, 6, 0, 1])
    assert queries_of_groups(offsets, np.array([], dtype=np.int64)).size == 0


def test_a_bare_string_of_attribute_sets_is_refused():
    # "ab" was iterated as the one-way marginals on "a" and "b", though it names an attribute.
    d = Domain(["a", "b", "ab"], [2, 3, 4])
    for bad in ("ab", b"ab"):
        with pytest.raises(TypeError, match=r"bare .*\['ab'\].*list\('ab'\)|bare bytes"):
            Marginals(d, bad)
    assert Marginals(d, ["ab"]).attribute_sets == (("ab",),)
    assert Marginals(d, list("ab")).attribute_sets == (("a",), ("b",))
    assert Marginals(d, [("a", "b")]).attribute_sets == (("a", "b"),)
