"""Concatenate and cuboids: domain checks, renumbering, validation."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data.domain import Domain
from fastmwem.workloads import (
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RangeQueries,
    cuboids,
)


def test_domains_compared_by_equality_not_shape() -> None:
    d = Domain(["a", "b"], [2, 2])
    same_shape = Domain(["x", "y"], [2, 2])
    with pytest.raises(ValueError, match=r"workloads\[1\].domain"):
        Concatenate([Marginals.all_kway(d, 1), Marginals.all_kway(same_shape, 1)])


def test_renumbering_and_delegation() -> None:
    d = Domain(["a", "b", "c"], [2, 2, 2])
    m = Marginals.all_kway(d, 2)
    r = RangeQueries(d, ["a", "c"], [[0, 1], [1, 0]], [[1, 1], [1, 1]])
    p = Parities(d, [["a", "b"]])
    w = Concatenate([m, r, p])
    assert w.n_queries == m.n_queries + 3 and w.n_groups == m.n_groups + 3
    np.testing.assert_array_equal(w.group_offsets[: m.n_groups + 1], m.group_offsets)
    assert w.describe_group(m.n_groups) == r.describe_group(0)
    assert w.describe(w.n_queries - 1) == "parity(a, b)"
    h = np.random.default_rng(0).random(d.size)
    np.testing.assert_allclose(w.answer(h), np.concatenate([m.answer(h), r.answer(h), p.answer(h)]))
    np.testing.assert_array_equal(w.row(m.n_queries + 1), r.row(1))
    assert w.groups_partition_cells is False
    assert Concatenate([m, Marginals.all_kway(d, 1)]).groups_partition_cells is True


def test_sensitivities_are_the_parts() -> None:
    d = Domain(["a"], [3])
    w = Concatenate([Marginals(d, [["a"]]), MatrixWorkload(d, [[4.0, -1.0, 0.0], [1.0, 1.0, 0.0]], groups=[0, 2])])
    assert w.query_sensitivity == 4.0
    np.testing.assert_array_equal(w.group_sensitivity, [1.0, 5.0])


def test_bad_arguments_rejected() -> None:
    d = Domain(["a"], [3])
    with pytest.raises(ValueError, match="at least one"):
        Concatenate([])
    with pytest.raises(TypeError, match=r"workloads\[1\] is not a workload"):
        Concatenate([Marginals(d, [["a"]]), np.ones((2, 3))])
    with pytest.raises(TypeError, match="workloads"):
        Concatenate(Marginals(d, [["a"]]))
    w = Concatenate([Marginals(d, [["a"]])])
    with pytest.raises(ValueError, match="group"):
        w.answer_group(np.ones(3), 1)
    with pytest.raises(ValueError, match="query"):
        w.describe(3)


def test_cuboids() -> None:
    d = Domain(["a", "b", "c", "e"], [2, 3, 2, 4])
    assert cuboids(d).n_groups == 2**4 - 1
    two = cuboids(d, 2)
    assert two.n_groups == 4 + 6
    assert two.attribute_sets[:4] == (("a",), ("b",), ("c",), ("e",))
    assert cuboids(d, 3, min_size=3).attribute_sets == Marginals.all_kway(d, 3).attribute_sets
    with pytest.raises(ValueError, match="max_size"):
        cuboids(d, 5)
    with pytest.raises(ValueError, match="min_size"):
        cuboids(d, 2, min_size=3)
    with pytest.raises(TypeError, match="domain"):
        cuboids({"a": 2})
