"""The protocols of a round's selection: what it is (public), what it reads, how it chooses.

A :class:`RoundSelection` is public configuration: it names the private mechanism a round uses
and the privacy event one round costs, so a release can charge its whole plan before the data is
read. Only after the charge does ``prepare`` look at the private data (:class:`PrivateData`),
returning a :class:`Chooser` that picks one group (or query) per round.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from fastmwem.accounting import PrivacyEvent
from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    from fastmwem.models.state import SyntheticState

__all__ = ["Chooser", "PrivateData", "RoundSelection", "SCORE_CAP"]


class PrivateData(Protocol):
    """What a chooser may read from the private data (after the charge)."""

    def histogram(self) -> np.ndarray:
        """The private histogram over every cell (dense domains only)."""
        ...

    def answers(self) -> np.ndarray:
        """The private answers of every query that may ever be selected (others NaN)."""
        ...


class Chooser(Protocol):
    """A prepared selection: one private choice per call."""

    def choose(self, state: SyntheticState, available: np.ndarray | None,
               rng: np.random.Generator) -> int:
        """Index of the group (or query) to measure next.

        Args:
            state: the synthetic state of the current round (a
                :class:`~fastmwem.models.state.SyntheticState`: ``answer_groups``, ``total``).
            available: boolean mask of the candidates that may be chosen, or ``None`` for all.
            rng: the run's generator.
        """
        ...

    def true_answers(self, queries: slice) -> np.ndarray:
        """The private answers of the queries ``queries`` (what a measurement adds noise to)."""
        ...


@runtime_checkable
class RoundSelection(Protocol):
    """Public description of a round's selection: its name, privacy event and preparation.

    A selection may also define ``bind(workload)``, returning the same selection with whatever
    it builds from the (public) workload built, for ``check`` and ``prepare`` to use; plans call
    it once, before ``check``.
    """

    @property
    def name(self) -> str: ...

    def event(self, epsilon: float | Fraction) -> PrivacyEvent:
        """The privacy event of one round run at ``epsilon``."""
        ...

    def check(self, workload: LinearWorkload, *, epsilon: float, group_mode: bool,
              sensitivities: np.ndarray) -> None:
        """Raise ``ValueError``/``TypeError`` if this selection cannot run on ``workload``.

        Runs before any budget is charged, so nothing can fail on public input after it.
        """
        ...

    def prepare(self, workload: LinearWorkload, private: PrivateData, *, epsilon: float,
                group_mode: bool, sensitivities: np.ndarray, penalties: np.ndarray) -> Chooser:
        """Bind to the private data (after the charge) and return the round's chooser.

        Args:
            workload: the (public) workload.
            private: the private data: its histogram (dense domains) or true answers.
            epsilon: the epsilon of one round's selection.
            group_mode: whether candidates are groups (True) or single queries.
            sensitivities: the L1 sensitivity of each candidate.
            penalties: a data-independent amount subtracted from each candidate's score.
        """
        ...


#: Scores are capped at this magnitude. Only the data-independent penalty can come near it (a
#: huge penalty or a tiny measurement epsilon); capping is 1-Lipschitz, so the sensitivity, and
#: privacy, are unchanged.
SCORE_CAP = 1e300
