"""The record a private LP solve returns (in the spirit of scipy's ``OptimizeResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from fastmwem.accounting import ZCDP, ApproxDP, LedgerEntry, PrivacyEvent, PureDP, ledger_records
from fastmwem.lp._checks import BLOCK

__all__ = ["LPResult", "LPRound", "LPProbe", "violation_summary", "total_event"]


@dataclass(frozen=True)
class LPRound:
    """One multiplicative-weights round.

    ``selected`` (the constraint or vertex the exponential mechanism chose) is what the private
    run released. No wall time is kept: under the lazy and warm-start oracles a round's time
    depends on the private data. ``violated_fraction`` and ``max_violation`` of the running
    average are diagnostics computed on the private data, present only with ``track=True``.
    """

    probe: int
    round: int
    selected: int
    violated_fraction: float | None = None
    max_violation: float | None = None


@dataclass(frozen=True)
class LPProbe:
    """One step of the private objective search: the target value ``c @ x <= target`` tried,
    the noisy test statistic (a private release), the threshold, and the decision."""

    probe: int
    target: float
    statistic: float
    threshold: float
    accepted: bool


@dataclass(frozen=True)
class LPResult:
    """The output of a private LP solve.

    Attributes:
        x: the solution (post-processing of the private selections).
        objective: ``c @ x`` (``c`` is public); None for a pure feasibility solve.
        violated_fraction: fraction of the constraints with ``A_i x > b_i``. A diagnostic
            computed on the private data: not private, left out of :meth:`report` by default.
        max_violation: ``max(0, max_i (A_i x - b_i))``; a diagnostic, like ``violated_fraction``.
        trace: one :class:`LPRound` per round, over every probe.
        probes: the objective search's steps (empty for a feasibility solve).
        target: the objective value ``x`` was solved for (None for a feasibility solve, or when no
            target was accepted).
        privacy: what this solve spent, in the accountant's currency.
        ledger: the accountant entries this solve charged.
        setup: the public parameters of the solve (neighbouring relation, epsilon0, width, ...).
        status: 0 when ``x`` answers the requested problem; 2 when the objective search accepted
            no target and ``x`` is the fallback (see ``message``).
        message: what happened, in words.
        rng_provenance: why the noise is not private
            (:func:`~fastmwem.mechanisms.seeding.rng_provenance`): ``("seeded",)``,
            ``("caller_rng",)``, or ``()`` for the operating system's.
    """

    x: np.ndarray
    objective: float | None
    violated_fraction: float
    max_violation: float
    trace: tuple[LPRound, ...]
    probes: tuple[LPProbe, ...]
    target: float | None
    privacy: PrivacyEvent
    ledger: tuple[LedgerEntry, ...]
    setup: dict[str, object] = field(default_factory=dict)
    status: int = 0
    message: str = ""
    rng_provenance: tuple[str, ...] = ()

    @property
    def seeded(self) -> bool:
        """Whether the noise came from an integer seed."""
        return "seeded" in self.rng_provenance

    @property
    def fun(self) -> float | None:
        """``c @ x``, scipy's name for the objective."""
        return self.objective

    @property
    def success(self) -> bool:
        return self.status == 0

    @property
    def nit(self) -> int:
        """Rounds run, over every probe."""
        return len(self.trace)

    def report(self, *, evaluate: bool = False) -> dict[str, object]:
        """A JSON-ready record of the private outputs and the privacy ledger.

        ``evaluate=True`` adds the diagnostics computed on the private data and marks the record
        ``"private": false``, as does a seeded run or one on a caller's generator; the seed
        itself is never recorded.
        """
        reasons = [*self.rng_provenance] + (["evaluated"] if evaluate else [])
        out: dict[str, object] = {
            "private": not reasons,
            "not_private_because": reasons,
            "privacy": {"spent": repr(self.privacy), "ledger": ledger_records(self.ledger)},
            "setup": dict(self.setup),
            "x": [float(v) for v in self.x],
            "objective": self.objective,
            "target": self.target,
            "status": self.status,
            "message": self.message,
            "probes": [vars(p).copy() for p in self.probes],
            "rounds": [{"probe": r.probe, "round": r.round, "selected": r.selected}
                       for r in self.trace],
        }
        if evaluate:
            out["violated_fraction"] = self.violated_fraction
            out["max_violation"] = self.max_violation
            out["rounds_diagnostics"] = [
                {"violated_fraction": r.violated_fraction, "max_violation": r.max_violation}
                for r in self.trace]
        return out


def violation_summary(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Fraction of rows with ``A_i x > b_i`` and ``max(0, max_i (A_i x - b_i))`` (blockwise)."""
    count = 0
    worst = 0.0
    for s in range(0, A.shape[0], BLOCK):
        v = np.asarray(A[s:s + BLOCK], dtype=np.float64) @ x - b[s:s + BLOCK]
        count += int(np.count_nonzero(v > 0))
        worst = max(worst, float(v.max()))
    return count / A.shape[0], worst


def total_event(entries: tuple[LedgerEntry, ...], kind: str) -> PrivacyEvent:
    """The sum of ledger entries' costs as one event in the accountant's currency ``kind``."""
    width = 2 if kind == "approx" else 1
    sums = [sum((e.cost[j] for e in entries), Fraction(0)) for j in range(width)]
    if kind == "zcdp":
        return ZCDP(sums[0])
    return ApproxDP(sums[0], sums[1]) if kind == "approx" else PureDP(sums[0])
