"""Argument checks shared by the LP front ends (budget, selection, objective range, flags)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from fastmwem._validation import check_epsilon, check_probability
from fastmwem.lp._checks import check_choice, check_delta, check_real
from fastmwem.lp._solve import Budget
from fastmwem.lp.plan import COMPOSITIONS, check_epsilon_bound

__all__ = ["DEFAULT_ROUNDS", "budget", "selection", "objective_range", "tolerance", "rounds",
           "refuse", "flag"]

#: Rounds T when ``rounds=None`` (the instance of docs/lp.md's measurements, after Fast-MWEM s.5.2).
DEFAULT_ROUNDS = 200
_SELECTIONS = ("exponential", "lazy")


def budget(epsilon: object, delta: object, composition: object, test_fraction: object
           ) -> Budget:
    """The checked budget arguments of a solve (epsilon at most ``plan.MAX_EPSILON``)."""
    eps = check_epsilon(epsilon)
    check_epsilon_bound(eps)
    d = check_delta(delta)
    comp = check_choice(composition, "composition", COMPOSITIONS)
    if comp != "basic" and d == 0:
        raise ValueError(f"composition={comp!r} needs delta > 0; pass composition='basic' for "
                         "pure epsilon-DP")
    return Budget(eps, d, comp, check_probability(test_fraction, "test_fraction"))


def selection(value: object, index: object) -> str:
    """``"exponential"`` or ``"lazy"``; an index only goes with the lazy selection."""
    sel = check_choice(value, "selection", _SELECTIONS)
    if sel == "exponential" and index is not None:
        raise ValueError("index is used only with selection='lazy'")
    return sel


def objective_range(value: object, default: tuple[float, float] | None,
                    ) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo < hi``, or ``default`` when ``value`` is None."""
    if value is None:
        if default is None:
            raise ValueError("objective_range is required: a public interval (lo, hi) holding "
                             "the optimal value of c @ x")
        return default
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError("objective_range must be a pair (lo, hi)")
    pair = cast("Sequence[object]", value)  # a sized value, indexed as a pair
    lo = check_real(pair[0], "objective_range[0]")
    hi = check_real(pair[1], "objective_range[1]")
    if not lo < hi:
        raise ValueError(f"objective_range must have lo < hi, got ({lo}, {hi})")
    return lo, hi


def tolerance(value: object) -> float | None:
    return None if value is None else check_real(value, "tolerance")


def rounds(value: object) -> object:
    return DEFAULT_ROUNDS if value is None else value


def refuse(model: str, **given: object) -> None:
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"{name} does not apply to neighbors={model!r}")


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value
