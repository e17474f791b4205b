"""The factored state's structure lookups (fastmwem.models.factored)."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data import Domain
from fastmwem.models.factored import FactoredState


def test_the_clique_of_a_group_is_found_again_after_an_absorption_merges_it() -> None:
    # The clique ids of measured groups are remembered between reuse passes; closing the
    # cycle a-b, b-c, c-a merges the clique of (b, c) into that of (a, b), which grows to
    # (a, b, c): the id remembered for (b, c) must not outlive that merge.
    state = FactoredState(Domain(["a", "b", "c", "d"], [2, 3, 2, 4]), 100.0)
    state._clique_for((0, 1))
    first = state._clique_for((1, 2))
    assert state._clique_for((1, 2)) == first
    merged = state._clique_for((0, 2))
    assert state.tree.cliques[merged].axes == (0, 1, 2) and first not in state.tree.cliques
    again = state._clique_for((1, 2))
    assert again == merged == state.tree.holder((1, 2))


def _random_axes(rng, d):
    return tuple(sorted(int(a) for a in rng.choice(d, size=int(rng.integers(2, 4)), replace=False)))


@pytest.mark.parametrize("product", [False, True])
def test_a_plan_s_growth_is_what_its_absorption_adds_to_the_model(product: bool) -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        shape = [int(s) for s in rng.integers(2, 5, size=7)]
        state = FactoredState(Domain([f"x{i}" for i in range(7)], shape), 10.0,
                              max_clique_cells=10**9, product=product)
        for _step in range(6):
            axes = _random_axes(rng, 7)
            plan = state.tree.plan(axes)
            before = state.model_cells
            state._clique_for(axes)
            assert state.model_cells - before <= plan.growth  # a bound: see Plan
            assert plan.growth == 0 or not plan.covered
            if not plan.merges or all(not additions for _, additions in plan.merges):
                assert state.model_cells - before == plan.growth  # joins alone: exact


def test_the_model_cap_leaves_out_what_would_grow_the_model_past_it() -> None:
    domain = Domain(["a", "b", "c", "d"], [4, 4, 4, 4])
    state = FactoredState(domain, 100.0, max_model_cells=16 + 16 + 8)  # 1-ways: 16 cells
    assert state.fits((0, 1))  # 16 + 16 - 8 = 24 cells
    state._clique_for((0, 1))
    assert state.model_cells == 24
    assert state.fits((2, 3)) is True  # 24 + 8 = 32... within 40
    state._clique_for((2, 3))
    assert state.model_cells == 32
    assert not state.fits((1, 2))  # a new clique (b, c) of 16: 48 > 40
    assert state.fits((0,)) and state.fits((0, 1))  # what a clique holds stays measurable
    with pytest.raises(ValueError, match="a model of 48 cells, above max_model_cells = 40"):
        state._clique_for((1, 2))
    with pytest.raises(ValueError, match="max_model_cells must be"):
        FactoredState(domain, 100.0, max_model_cells=15)
