"""LinearWorkload defaults: the group structure of one query per group."""

from __future__ import annotations

import numpy as np

from fastmwem.data import Domain
from fastmwem.workloads import LinearWorkload, RandomCountingQueries


class _Huge(LinearWorkload):
    """A workload too large for its default offsets array ever to be built."""

    domain = Domain(["a"], [2])
    n_queries = 2**62  # type: ignore[assignment]
    query_sensitivity = 1.0  # type: ignore[assignment]

    def answer(self, histogram: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def test_n_groups_of_default_groups_does_not_build_the_offsets() -> None:
    # Group operations check ids against n_groups on every MW update; building n_queries + 1
    # offsets each time made MWEM's reuse passes over 10**6 counting queries 10x slower.
    assert _Huge().n_groups == 2**62


def test_n_groups_matches_offsets_default_and_overridden() -> None:
    w = RandomCountingQueries(Domain(["a", "b"], [4, 4]), 7, rng=0)
    assert w.n_groups == w.group_offsets.size - 1 == 7

    class Pairs(RandomCountingQueries):
        @property
        def group_offsets(self) -> np.ndarray:
            return np.arange(0, self.n_queries + 1, 2)

    p = Pairs(Domain(["a", "b"], [4, 4]), 6, rng=0)
    assert p.n_groups == 3
