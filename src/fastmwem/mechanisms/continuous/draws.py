"""What a continuous sampler returns: the released point(s) and what producing them cost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastmwem.accounting import PrivacyEvent

__all__ = ["ContinuousDraw", "ContinuousDraws"]


@dataclass(frozen=True)
class ContinuousDraw:
    """One released point and what producing it cost.

    Attributes:
        value: the released point, shape (d,).
        proposals: number of proposals (evaluations of the loss inside the chain); for
            ``random-atom`` the ``n_points`` discrete scores are counted in ``loss_evaluations``.
        runs: number of Algorithm-1 runs (atom samplers, up to and including the first that
            ends in the space) or 1 (one Metropolis chain).
        loss_evaluations: every point the loss was evaluated at (proposals inside the space plus,
            for ``random-atom``, the discrete candidate points).
        from_discrete: ``random-atom`` only: whether the value came from the discrete mechanism.
        privacy: the privacy event of this draw.
        method: the sampler used.
    """

    value: np.ndarray
    proposals: int
    runs: int
    loss_evaluations: int
    from_discrete: bool
    privacy: PrivacyEvent
    method: str


@dataclass(frozen=True)
class ContinuousDraws:
    """``n`` independent draws (arrays indexed by draw).

    ``privacy`` is the event of one draw; the batch costs its ``n``-fold composition (the
    accountant is charged ``n`` times, atomically).
    """

    values: np.ndarray
    proposals: np.ndarray
    runs: np.ndarray
    loss_evaluations: np.ndarray
    from_discrete: np.ndarray
    privacy: PrivacyEvent
    method: str

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __getitem__(self, i: int) -> ContinuousDraw:
        return ContinuousDraw(
            value=self.values[i].copy(), proposals=int(self.proposals[i]), runs=int(self.runs[i]),
            loss_evaluations=int(self.loss_evaluations[i]),
            from_discrete=bool(self.from_discrete[i]), privacy=self.privacy, method=self.method,
        )
