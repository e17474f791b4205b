"""Workloads named by text: one marginal order is the range K..K, with the same subsets."""

from __future__ import annotations

import pytest

from fastmwem._validation import ResourceLimitError
from fastmwem.data import Domain
from fastmwem.release import defaults
from fastmwem.workloads import spec
from fastmwem.workloads.marginals import Marginals
from fastmwem.workloads.spec import parse_workload

D = Domain(["a", "b", "c", "d"], [2, 3, 2, 4])


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_one_order_gives_the_k_way_marginals_in_their_order(k):
    for text in (f"marginals:{k}", f"marginals:{k}-{k}"):
        assert parse_workload(text, D).attribute_sets == Marginals.all_kway(D, k).attribute_sets


def test_orders_follow_each_other_lexicographically():
    assert parse_workload("marginals:1-2", D).attribute_sets == (
        Marginals.all_kway(D, 1).attribute_sets + Marginals.all_kway(D, 2).attribute_sets)


@pytest.mark.parametrize("text, what", [("marginals:5", "2535650040 5-way marginals"),
                                        ("marginals:4-5", "marginals of order 4 to 5")])
def test_too_many_subsets_are_named_as_asked(text, what):
    wide = Domain([f"a{i}" for i in range(200)], [2] * 200)
    with pytest.raises(ResourceLimitError, match=what):
        parse_workload(text, wide)


def test_the_default_spec_is_the_one_the_release_defaults_name():
    assert defaults.default_workload_spec is spec.default_workload_spec
    assert defaults.DEFAULT_ORDER == spec.DEFAULT_ORDER
    assert spec.default_workload_spec(D) == f"marginals:{spec.DEFAULT_ORDER}"
    assert spec.default_workload_spec(Domain(["a"], [2])) == "marginals:1"
    assert f"Default marginals:{spec.DEFAULT_ORDER}" in spec.WORKLOAD_HELP
