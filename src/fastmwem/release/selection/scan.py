"""The scan selections: score every candidate each round, then sample a private choice.

The exponential mechanism (Gumbel-max) or permute-and-flip over every candidate's score, on a
dense histogram or by inference on a factored state: MWEM as published.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.accounting import BoundedRange, PrivacyEvent, PureDP
from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.release.selection.base import SCORE_CAP, Chooser, PrivateData
from fastmwem.workloads.base import LinearWorkload, groups_of_queries, queries_of_groups

if TYPE_CHECKING:
    from fastmwem.models.state import SyntheticState

__all__ = ["ScanSelection", "ScanMechanism"]


@dataclass(frozen=True)
class ScanSelection:
    """Score every candidate each round and sample ``mechanism`` over the scores.

    The score of a group is the L1 error of its answers on the synthetic histogram minus
    ``penalty`` per query (data-independent); of a single query its absolute error. Its
    sensitivity is the largest group (or query) sensitivity of the workload.

    Args:
        mechanism: ``"exponential"`` (Gumbel-max; ``BoundedRange`` per round) or
            ``"permute-and-flip"`` (``PureDP`` per round).
    """

    mechanism: str = "exponential"

    def __post_init__(self) -> None:
        if self.mechanism not in _SCAN_MECHANISMS:
            raise ValueError(
                f"mechanism must be one of {sorted(_SCAN_MECHANISMS)}, got {self.mechanism!r}")

    @property
    def name(self) -> str:
        return self.mechanism

    def event(self, epsilon: float | Fraction) -> PrivacyEvent:
        return BoundedRange(epsilon) if self.mechanism == "exponential" else PureDP(epsilon)

    def _selector(self, epsilon: float, sensitivities: np.ndarray) -> ScanMechanism:
        return _SCAN_MECHANISMS[self.mechanism](epsilon=epsilon,
                                                sensitivity=float(sensitivities.max()))

    def check(self, workload: LinearWorkload, *, epsilon: float, group_mode: bool,
              sensitivities: np.ndarray) -> None:
        self._selector(epsilon, sensitivities)

    #: An adaptive run may retune the chooser every round (``_ScanChooser.retuned``).
    adaptive = True

    def prepare(self, workload: LinearWorkload, private: PrivateData, *, epsilon: float,
                group_mode: bool, sensitivities: np.ndarray, penalties: np.ndarray) -> Chooser:
        return _ScanChooser(workload, private.answers(), self._selector(epsilon, sensitivities),
                            group_mode, penalties)


ScanMechanism = ExponentialMechanism | PermuteAndFlip

_SCAN_MECHANISMS: dict[str, type[ScanMechanism]] = {
    "exponential": ExponentialMechanism,
    "permute-and-flip": PermuteAndFlip,
}


@dataclass
class _ScanChooser:
    workload: LinearWorkload
    answers: np.ndarray
    selector: ScanMechanism
    group_mode: bool
    penalties: np.ndarray
    weights: np.ndarray | None = None

    def retuned(self, epsilon: float, penalties: np.ndarray, weights: np.ndarray | None,
                sensitivity: float) -> _ScanChooser:
        """The same chooser at another epsilon, with new penalties and score weights.

        The score of a candidate becomes ``weight * (L1 error - penalty)``; ``sensitivity`` must
        bound ``weight * (group sensitivity)`` over the candidates. Adaptive runs retune every
        round; the private answers are shared, not copied.
        """
        selector = type(self.selector)(epsilon=epsilon, sensitivity=sensitivity)
        return _ScanChooser(self.workload, self.answers, selector, self.group_mode, penalties,
                            weights)

    def choose(self, state: SyntheticState, available: np.ndarray | None,
               rng: np.random.Generator) -> int:
        offsets = np.asarray(self.workload.group_offsets)
        n = offsets.size - 1 if self.group_mode else int(offsets[-1])
        candidates = np.arange(n) if available is None else np.flatnonzero(available)
        scores = self._scores(state, candidates, offsets)
        return int(candidates[self.selector.select(scores, rng=rng)])

    def _scores(self, state: SyntheticState, candidates: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Each candidate's L1 error on the data (capped at ``SCORE_CAP``) less its penalty.

        A dense state answers every query at once (sharing work between groups); any other
        state answers only the candidates' groups, which may be far fewer and cheaper.
        """
        if getattr(state, "distribution", None) is not None:
            errors = state.answer(self.workload)
            true, starts = self.answers, offsets[:-1]
            picked = candidates
        else:
            groups = (candidates if self.group_mode
                      else np.unique(groups_of_queries(offsets, candidates)))
            queries = queries_of_groups(offsets, groups)
            errors = state.answer_groups(self.workload, groups)
            true = self.answers[queries]
            starts = np.concatenate([[0], np.cumsum(offsets[groups + 1] - offsets[groups])[:-1]])
            picked = (np.arange(groups.size) if self.group_mode
                      else np.searchsorted(queries, candidates))
        errors *= state.total
        errors -= true
        np.abs(errors, out=errors)
        if self.group_mode:
            errors = np.add.reduceat(errors, starts)
        np.minimum(errors, SCORE_CAP, out=errors)
        errors = errors[picked]
        errors -= self.penalties[candidates]
        if self.weights is not None:
            errors *= self.weights[candidates]
        return errors

    def true_answers(self, queries: slice) -> np.ndarray:
        return self.answers[queries]
