"""The privacy definition of a release: pure epsilon-DP or zCDP, its budget and its noise.

Pure DP measures with Laplace noise and composes epsilons; zCDP measures integer counts with the
discrete Gaussian (:class:`~fastmwem.mechanisms.DiscreteGaussian`) and composes rhos, the
exponential mechanism costing ``epsilon**2 / 8`` as bounded range. A zCDP budget is either
``rho`` or an ``(epsilon, delta)`` converted to the largest rho that implies it (the tight
conversion of Canonne, Kamath and Steinke, arXiv:2004.00010).
"""

from __future__ import annotations

import math
from fractions import Fraction

from fastmwem._validation import check_epsilon
from fastmwem.accounting import (
    ZCDP,
    Accountant,
    PrivacyEvent,
    PureDP,
    exact,
    show,
    zcdp_to_approx_dp,
)
from fastmwem.mechanisms.gaussian import DiscreteGaussian
from fastmwem.mechanisms.laplace import Laplace
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.concatenate import Concatenate
from fastmwem.workloads.counting import RandomCountingQueries
from fastmwem.workloads.intervals import AllIntervals
from fastmwem.workloads.marginals import Marginals
from fastmwem.workloads.parities import Parities
from fastmwem.workloads.ranges import RangeQueries

__all__ = ["PRIVACY_DEFINITIONS", "check_budget", "check_zcdp_workload", "measurement",
           "measure_event", "guarantee", "plan_total", "check_accountant", "default_accountant",
           "integer_valued"]

#: Values of ``privacy=``.
PRIVACY_DEFINITIONS = ("pure", "zcdp")

# Workloads whose queries have integer coefficients, so that their answers on a histogram of
# counts are integers (the discrete Gaussian adds integer noise to integers).
_INTEGER_WORKLOADS = (Marginals, RangeQueries, AllIntervals, RandomCountingQueries, Parities)


def check_budget(privacy: str, epsilon: object, delta: object, rho: object) -> None:
    """Refuse a budget that does not fit ``privacy`` (before anything else is done)."""
    if privacy == "pure":
        if delta is not None or rho is not None:
            raise ValueError("delta and rho are for privacy='zcdp'; a pure-DP run takes epsilon "
                             "only")
        if epsilon is None:
            raise ValueError("privacy='pure' needs epsilon")
        check_epsilon(epsilon)
        return
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError("give privacy='zcdp' either rho, or epsilon and delta, not both")
        value = exact(rho, "rho")
        if not math.isfinite(float(value)):
            raise ValueError(f"rho must be finite, got {rho}")
        return
    if epsilon is None or delta is None:
        raise ValueError("privacy='zcdp' needs epsilon and delta (the (epsilon, delta)-DP "
                         "guarantee to convert), or rho")
    check_epsilon(epsilon)
    d = exact(delta, "delta")
    if not 0 < d < 1:
        raise ValueError(f"delta must lie in (0, 1), got {float(d)}")


def integer_valued(workload: LinearWorkload) -> bool:
    """Whether every query of ``workload`` has integer coefficients (public: its type)."""
    if isinstance(workload, Concatenate):
        return all(integer_valued(part) for part in workload.parts)
    return isinstance(workload, _INTEGER_WORKLOADS)


def check_zcdp_workload(workload: LinearWorkload) -> None:
    """Refuse, before any charge, a zCDP run whose answers are not integer counts."""
    if not integer_valued(workload):
        raise ValueError(
            "privacy='zcdp' measures integer counts with the discrete Gaussian: the workload's "
            "queries must have integer coefficients (marginals, ranges, intervals, counting "
            f"queries, parities); {type(workload).__name__} is not known to")


def measurement(privacy: str, share: float, sensitivity: float, *,
                integer: bool = True) -> Laplace | DiscreteGaussian:
    """The measurement mechanism of one share: Laplace at epsilon ``share`` (pure DP), or the
    discrete Gaussian at rho ``share`` (zCDP), for answers of (L1 resp. L2) ``sensitivity``.

    Both are sampled exactly: under pure DP, integer answers (``integer``, public: counts, or
    a workload of :func:`integer_valued`) get integer noise, other answers are rounded to a
    public grid first (see :class:`~fastmwem.mechanisms.Laplace`).

    A group's L1 sensitivity bounds its L2 one, so it calibrates the Gaussian too (a marginal's
    are both 1).
    """
    if privacy == "pure":
        return Laplace(epsilon=share, sensitivity=sensitivity, integer=integer)
    return DiscreteGaussian(rho=Fraction(share), sensitivity=sensitivity)


def measurement_grid(mechanism: Laplace | DiscreteGaussian, entries: int) -> float | None:
    """The public grid a measurement of ``entries`` answers lies on; ``None`` for integers."""
    if isinstance(mechanism, Laplace) and not mechanism.integer:
        return float(mechanism.grid(entries))
    return None


def measure_event(privacy: str, share: float) -> PrivacyEvent:
    """What a measurement at ``share`` is charged: exactly the float's epsilon or rho.

    A discrete Gaussian's own rho is at most ``share`` (its ``sigma^2`` is rounded up), so the
    charge covers every group a round may measure.
    """
    return PureDP(Fraction(share)) if privacy == "pure" else ZCDP(Fraction(share))


def plan_total(plan: list[tuple[PrivacyEvent, str]], privacy: str) -> Fraction:
    """The plan's total cost: the sum of its epsilons (pure) or rhos (zCDP)."""
    total = Fraction(0)
    for event, _ in plan:
        cost = event.pure_epsilon() if privacy == "pure" else event.zcdp_rho()
        if cost is None:
            raise ValueError(f"{event!r} has no {privacy} cost")
        total += cost
    return total


def guarantee(privacy: str, spent: Fraction, delta: object = None) -> dict[str, object]:
    """The guarantee a run's charges give, for its report.

    Pure DP: ``{"definition": "pure", "epsilon": ...}``. zCDP: ``{"definition": "zcdp", "rho":
    ...}`` and, when a delta was given, the ``epsilon`` of ``(epsilon, delta)``-DP that rho
    implies (tight conversion, rounded up) with that ``delta``.
    """
    if privacy == "pure":
        return {"definition": "pure", "epsilon": float(show(spent))}
    record: dict[str, object] = {"definition": "zcdp", "rho": float(show(spent)),
                                 "epsilon": None, "delta": None}
    if delta is not None:
        record["epsilon"] = zcdp_to_approx_dp(spent, delta, conversion="tight")
        record["delta"] = float(delta)  # type: ignore[arg-type]
        record["conversion"] = "Canonne, Kamath and Steinke 2020 (arXiv:2004.00010), Cor. 13"
    return record


def default_accountant(privacy: str, budget: Fraction) -> Accountant:
    """A fresh accountant holding ``budget`` in ``privacy``'s currency."""
    return Accountant(epsilon=budget) if privacy == "pure" else Accountant(rho=budget)


def check_accountant(accountant: object, privacy: str) -> None:
    """Refuse an accountant that cannot compose ``privacy``'s events (before any charge)."""
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if privacy == "zcdp":
        try:  # a pure or (epsilon, delta) accountant has no price for a zCDP event
            accountant.can_afford(ZCDP(Fraction(1, 10**30)))
        except ValueError:
            raise ValueError("privacy='zcdp' needs an accountant that composes in zCDP: "
                             "Accountant(rho=...) or Accountant(epsilon=..., delta=..., "
                             "composition='zcdp')") from None
