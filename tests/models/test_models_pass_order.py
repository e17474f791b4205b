"""The reuse passes' order over measurements of a factored state."""

from __future__ import annotations

import numpy as np

from fastmwem.data import Domain
from fastmwem.models.factored import FactoredState
from fastmwem.workloads import Marginals


def test_pass_order_of_groups_not_yet_absorbed() -> None:
    # Measurements whose cliques the state does not hold yet (the first measurement found
    # within its noise leaves the state untouched): ordering them absorbs them first, and
    # every measurement gets a place (it raised KeyError for cliques made on the way).
    domain = Domain(["a", "b", "c", "d"], [2, 3, 2, 4])
    workload = Marginals.all_kway(domain, 2)
    state = FactoredState(domain, 100.0)
    groups = list(range(int(workload.n_groups)))
    before = state.answer(workload)
    order = state.pass_order(workload, groups)
    assert sorted(order) == groups
    np.testing.assert_allclose(state.answer(workload), before, atol=1e-12)


def test_pass_order_groups_measurements_by_clique() -> None:
    domain = Domain(["a", "b", "c"], [2, 2, 2])
    workload = Marginals(domain, [("a", "b"), ("b", "c"), ("a",)])
    state = FactoredState(domain, 10.0)
    for g, cells in ((0, 4), (1, 4), (2, 2)):
        state.update_group(workload, g, np.full(cells, 10.0 / cells))
    order = state.pass_order(workload, [0, 1, 2])
    assert sorted(order) == [0, 1, 2]
    assert abs(order.index(0) - order.index(2)) == 1  # (a) lies in the clique of (a, b)
