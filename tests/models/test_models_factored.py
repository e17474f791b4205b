"""The factored state's structure lookups (fastmwem.models.factored)."""

from __future__ import annotations

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
