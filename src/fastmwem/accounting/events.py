"""Privacy events: what a mechanism costs, in each currency an accountant may hold.

* :class:`PureDP` -- ``epsilon``-differential privacy.
* :class:`BoundedRange` -- ``epsilon``-bounded range (the exponential mechanism): it implies
  ``epsilon``-DP and ``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021).
* :class:`ApproxDP` -- ``(epsilon, delta)``-differential privacy.
* :class:`ZCDP` -- ``rho``-zero-concentrated DP; pure ``epsilon``-DP implies ``epsilon**2 / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Union

from fastmwem.accounting.exact_numbers import exact, show


@dataclass(frozen=True)
class PureDP:
    """``epsilon``-differential privacy."""

    epsilon: Fraction

    def __init__(self, epsilon: object) -> None:
        object.__setattr__(self, "epsilon", exact(epsilon, "epsilon", allow_zero=True))

    def __repr__(self) -> str:
        return f"PureDP(epsilon={show(self.epsilon)})"

    def pure_epsilon(self) -> Fraction | None:
        return self.epsilon

    def zcdp_rho(self) -> Fraction | None:
        return self.epsilon**2 / 2

    def approx(self) -> tuple[Fraction, Fraction]:
        return self.epsilon, Fraction(0)


@dataclass(frozen=True)
class BoundedRange:
    """``epsilon``-bounded range: ``epsilon``-DP, and ``epsilon**2 / 8``-zCDP."""

    epsilon: Fraction

    def __init__(self, epsilon: object) -> None:
        object.__setattr__(self, "epsilon", exact(epsilon, "epsilon", allow_zero=True))

    def __repr__(self) -> str:
        return f"BoundedRange(epsilon={show(self.epsilon)})"

    def pure_epsilon(self) -> Fraction | None:
        return self.epsilon

    def zcdp_rho(self) -> Fraction | None:
        return self.epsilon**2 / 8

    def approx(self) -> tuple[Fraction, Fraction]:
        return self.epsilon, Fraction(0)


@dataclass(frozen=True)
class ApproxDP:
    """``(epsilon, delta)``-differential privacy (``0 <= delta < 1``)."""

    epsilon: Fraction
    delta: Fraction

    def __init__(self, epsilon: object, delta: object) -> None:
        d = exact(delta, "delta", allow_zero=True)
        if d >= 1:
            raise ValueError(f"delta must be < 1, got {float(d)}")
        object.__setattr__(self, "epsilon", exact(epsilon, "epsilon", allow_zero=True))
        object.__setattr__(self, "delta", d)

    def __repr__(self) -> str:
        return f"ApproxDP(epsilon={show(self.epsilon)}, delta={show(self.delta)})"

    def pure_epsilon(self) -> Fraction | None:
        return self.epsilon if self.delta == 0 else None

    def zcdp_rho(self) -> Fraction | None:
        return self.epsilon**2 / 2 if self.delta == 0 else None

    def approx(self) -> tuple[Fraction, Fraction]:
        return self.epsilon, self.delta


@dataclass(frozen=True)
class ZCDP:
    """``rho``-zero-concentrated differential privacy."""

    rho: Fraction

    def __init__(self, rho: object) -> None:
        object.__setattr__(self, "rho", exact(rho, "rho", allow_zero=True))

    def __repr__(self) -> str:
        return f"ZCDP(rho={show(self.rho)})"

    def pure_epsilon(self) -> Fraction | None:
        return None if self.rho > 0 else Fraction(0)

    def zcdp_rho(self) -> Fraction | None:
        return self.rho

    def approx(self) -> tuple[Fraction, Fraction] | None:
        return None


PrivacyEvent = Union[PureDP, BoundedRange, ApproxDP, ZCDP]
_EVENT_TYPES = (PureDP, BoundedRange, ApproxDP, ZCDP)

#: The parameters of each event type, in constructor order (a ledger record's ``params``).
_EVENT_PARAMS: dict[type, tuple[str, ...]] = {
    PureDP: ("epsilon",), BoundedRange: ("epsilon",), ApproxDP: ("epsilon", "delta"),
    ZCDP: ("rho",),
}
