"""The privacy definition of a release: pure epsilon-DP or zCDP, its budget and its noise.

Pure DP measures with Laplace noise and composes epsilons; zCDP measures integer counts with the
discrete Gaussian (:class:`~fastmwem.mechanisms.DiscreteGaussian`) and composes rhos, the
exponential mechanism costing ``epsilon**2 / 8`` as bounded range. A zCDP budget is either
``rho`` or an ``(epsilon, delta)`` converted to the largest rho that implies it (the tight
conversion of Canonne, Kamath and Steinke, arXiv:2004.00010).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from fastmwem._validation import check_epsilon
from fastmwem.accounting import (
    ZCDP,
    Accountant,
    PrivacyEvent,
    PureDP,
    approx_dp_to_zcdp_budget,
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

__all__ = ["PRIVACY_DEFINITIONS", "PrivacyDefinition", "PureDefinition", "ZCDPDefinition",
           "definition_of", "check_budget", "check_zcdp_workload", "measurement",
           "measure_event", "guarantee", "plan_total", "check_accountant", "default_accountant",
           "integer_valued"]

#: Values of ``privacy=``.
PRIVACY_DEFINITIONS = ("pure", "zcdp")

# Workloads whose queries have integer coefficients, so that their answers on a histogram of
# counts are integers (the discrete Gaussian adds integer noise to integers).
_INTEGER_WORKLOADS = (Marginals, RangeQueries, AllIntervals, RandomCountingQueries, Parities)


def check_budget(privacy: object, epsilon: object, delta: object, rho: object) -> None:
    """Refuse a budget that does not fit ``privacy`` (before anything else is done)."""
    definition_of(privacy).check_budget(epsilon, delta, rho)


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


def measurement(privacy: object, share: float, sensitivity: float, *,
                integer: bool = True) -> Laplace | DiscreteGaussian:
    """The measurement mechanism of one share: Laplace at epsilon ``share`` (pure DP), or the
    discrete Gaussian at rho ``share`` (zCDP), for answers of (L1 resp. L2) ``sensitivity``.

    Both are sampled exactly: under pure DP, integer answers (``integer``, public: counts, or
    a workload of :func:`integer_valued`) get integer noise, other answers are rounded to a
    public grid first (see :class:`~fastmwem.mechanisms.Laplace`).

    A group's L1 sensitivity bounds its L2 one, so it calibrates the Gaussian too (a marginal's
    are both 1).
    """
    return definition_of(privacy).measurement(share, sensitivity, integer=integer)


def measurement_grid(mechanism: Laplace | DiscreteGaussian, entries: int) -> float | None:
    """The public grid a measurement of ``entries`` answers lies on; ``None`` for integers."""
    if isinstance(mechanism, Laplace) and not mechanism.integer:
        return float(mechanism.grid(entries))
    return None


def measure_event(privacy: object, share: float) -> PrivacyEvent:
    """What a measurement at ``share`` is charged: exactly the float's epsilon or rho.

    A discrete Gaussian's own rho is at most ``share`` (its ``sigma^2`` is rounded up), so the
    charge covers every group a round may measure.
    """
    return definition_of(privacy).event(share)


def plan_total(plan: list[tuple[PrivacyEvent, str]], privacy: str) -> Fraction:
    """The plan's total cost: the sum of its epsilons (pure) or rhos (zCDP)."""
    return definition_of(privacy).plan_total(plan)


def guarantee(privacy: object, spent: Fraction, delta: float | None = None) -> dict[str, object]:
    """The guarantee a run's charges give, for its report.

    Pure DP: ``{"definition": "pure", "epsilon": ...}``. zCDP: ``{"definition": "zcdp", "rho":
    ...}`` and, when a delta was given, the ``epsilon`` of ``(epsilon, delta)``-DP that rho
    implies (tight conversion, rounded up) with that ``delta``.
    """
    return definition_of(privacy, delta).guarantee(spent)


def default_accountant(privacy: object, budget: Fraction) -> Accountant:
    """A fresh accountant holding ``budget`` in ``privacy``'s currency."""
    return definition_of(privacy).default_accountant(budget)


def check_accountant(accountant: object, privacy: object) -> None:
    """Refuse an accountant that cannot compose ``privacy``'s events (before any charge)."""
    definition_of(privacy).check_accountant(accountant)


class PrivacyDefinition:
    """A privacy definition: its currency, its noise, its events and its guarantee.

    Use :class:`PureDefinition` or :class:`ZCDPDefinition`; :func:`definition_of` reads the
    strings ``"pure"`` and ``"zcdp"`` that every public function still accepts.
    """

    #: ``"pure"`` or ``"zcdp"``: the value of ``privacy=`` this definition stands for.
    name: str = ""
    #: What a budget is counted in: ``"epsilon"`` or ``"rho"``.
    currency: str = ""
    #: The measurement noise, for ledger labels.
    noise: str = ""

    def check_budget(self, epsilon: object, delta: object, rho: object) -> None:
        """Refuse a budget that does not fit this definition (before anything else is done)."""
        raise NotImplementedError

    def budget(self, epsilon: object = None, delta: object = None,
               rho: object = None) -> Fraction:
        """The whole budget, exact, in this definition's currency (checked first)."""
        raise NotImplementedError

    def measurement(self, share: float, sensitivity: float, *,
                    integer: bool = True) -> Laplace | DiscreteGaussian:
        """The measurement mechanism of one share (see :func:`measurement`)."""
        raise NotImplementedError

    def event(self, share: float | Fraction) -> PrivacyEvent:
        """What a measurement at ``share`` is charged: exactly its epsilon or rho."""
        raise NotImplementedError

    def noise_scale(self, share: float, sensitivity: float = 1.0) -> float:
        """The scale of a measurement's noise at ``share``: Laplace ``b`` or Gaussian sigma."""
        raise NotImplementedError

    def cost(self, event: PrivacyEvent) -> Fraction | None:
        """``event``'s cost in this definition's currency (``None``: it has none)."""
        raise NotImplementedError

    def guarantee(self, spent: Fraction) -> dict[str, object]:
        """The guarantee charges of ``spent`` give, for a run's report (see :func:`guarantee`)."""
        raise NotImplementedError

    def default_accountant(self, budget: Fraction) -> Accountant:
        """A fresh accountant holding ``budget`` in this definition's currency."""
        raise NotImplementedError

    def check_accountant(self, accountant: object) -> None:
        """Refuse an accountant that cannot compose this definition's events."""
        _as_accountant(accountant)

    def plan_total(self, plan: list[tuple[PrivacyEvent, str]]) -> Fraction:
        """The total cost of a plan of ``(event, label)``, exact."""
        total = Fraction(0)
        for event, _ in plan:
            cost = self.cost(event)
            if cost is None:
                raise ValueError(f"{event!r} has no {self.name} cost")
            total += cost
        return total


@dataclass(frozen=True)
class PureDefinition(PrivacyDefinition):
    """Pure epsilon-DP: Laplace measurements, epsilons add up."""

    name = "pure"
    currency = "epsilon"
    noise = "Laplace"

    def check_budget(self, epsilon: object, delta: object, rho: object) -> None:
        if delta is not None or rho is not None:
            raise ValueError("delta and rho are for privacy='zcdp'; a pure-DP run takes epsilon "
                             "only")
        if epsilon is None:
            raise ValueError("privacy='pure' needs epsilon")
        check_epsilon(epsilon)

    def budget(self, epsilon: object = None, delta: object = None,
               rho: object = None) -> Fraction:
        self.check_budget(epsilon, delta, rho)
        return exact(epsilon, "epsilon")

    def measurement(self, share: float, sensitivity: float, *,
                    integer: bool = True) -> Laplace | DiscreteGaussian:
        return Laplace(epsilon=share, sensitivity=sensitivity, integer=integer)

    def event(self, share: float | Fraction) -> PrivacyEvent:
        return PureDP(Fraction(share))

    def noise_scale(self, share: float, sensitivity: float = 1.0) -> float:
        return sensitivity / share

    def cost(self, event: PrivacyEvent) -> Fraction | None:
        return event.pure_epsilon()

    def guarantee(self, spent: Fraction) -> dict[str, object]:
        return {"definition": "pure", "epsilon": float(show(spent))}

    def default_accountant(self, budget: Fraction) -> Accountant:
        return Accountant(epsilon=budget)


@dataclass(frozen=True)
class ZCDPDefinition(PrivacyDefinition):
    """Zero-concentrated DP: discrete Gaussian measurements, rhos add up.

    Args:
        delta: the delta of the ``(epsilon, delta)``-DP guarantee a report states next to the
            rho spent (``None``: the report states rho alone).
    """

    delta: float | None = None
    name = "zcdp"
    currency = "rho"
    noise = "discrete Gaussian"

    def check_budget(self, epsilon: object, delta: object, rho: object) -> None:
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

    def budget(self, epsilon: object = None, delta: object = None,
               rho: object = None) -> Fraction:
        self.check_budget(epsilon, delta, rho)
        if rho is not None:
            return exact(rho, "rho")
        return approx_dp_to_zcdp_budget(epsilon, delta, conversion="tight")

    def measurement(self, share: float, sensitivity: float, *,
                    integer: bool = True) -> Laplace | DiscreteGaussian:
        return DiscreteGaussian(rho=Fraction(share), sensitivity=sensitivity)

    def event(self, share: float | Fraction) -> PrivacyEvent:
        return ZCDP(Fraction(share))

    def noise_scale(self, share: float, sensitivity: float = 1.0) -> float:
        return sensitivity / math.sqrt(2.0 * share)  # rho = sensitivity^2 / (2 sigma^2)

    def cost(self, event: PrivacyEvent) -> Fraction | None:
        return event.zcdp_rho()

    def guarantee(self, spent: Fraction) -> dict[str, object]:
        record: dict[str, object] = {"definition": "zcdp", "rho": float(show(spent)),
                                     "epsilon": None, "delta": None}
        if self.delta is not None:
            record["epsilon"] = zcdp_to_approx_dp(spent, self.delta, conversion="tight")
            record["delta"] = float(self.delta)
            record["conversion"] = "Canonne, Kamath and Steinke 2020 (arXiv:2004.00010), Cor. 13"
        return record

    def default_accountant(self, budget: Fraction) -> Accountant:
        return Accountant(rho=budget)

    def check_accountant(self, accountant: object) -> None:
        checked = _as_accountant(accountant)
        try:  # a pure or (epsilon, delta) accountant has no price for a zCDP event
            checked.can_afford(ZCDP(Fraction(1, 10**30)))
        except ValueError:
            raise ValueError("privacy='zcdp' needs an accountant that composes in zCDP: "
                             "Accountant(rho=...) or Accountant(epsilon=..., delta=..., "
                             "composition='zcdp')") from None


def _as_accountant(accountant: object) -> Accountant:
    """``accountant``, refused unless it is an :class:`~fastmwem.accounting.Accountant`."""
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    return accountant


def definition_of(privacy: object, delta: float | None = None) -> PrivacyDefinition:
    """The definition ``privacy`` names: ``"pure"``, ``"zcdp"`` (with ``delta`` for its
    report), or a :class:`PrivacyDefinition`, returned as it is.

    >>> definition_of("zcdp", 1e-9)
    ZCDPDefinition(delta=1e-09)
    """
    if isinstance(privacy, PrivacyDefinition):
        return privacy
    if privacy == "pure":
        return PureDefinition()
    if privacy == "zcdp":
        return ZCDPDefinition(delta=delta)
    raise ValueError(f"privacy must be one of {list(PRIVACY_DEFINITIONS)}, got {privacy!r}")
