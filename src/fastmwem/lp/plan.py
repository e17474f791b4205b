"""The privacy plan of an LP solve: per-round epsilon, test epsilon, and the events to charge.

A solve is ``em_rounds`` adaptive exponential-mechanism rounds (each ``epsilon0``-DP and
``epsilon0``-bounded range) plus ``tests`` noisy acceptance tests of the objective search (each
``epsilon_test``-DP). The plan depends on public parameters only and is charged to the accountant
in one atomic ``compose_all`` before the data is touched.

Compositions:

* ``"advanced"``: the largest ``epsilon0`` whose advanced composition (Fast-MWEM,
  arXiv:2602.03732, Thm B.1) over the rounds stays within the rounds' share of epsilon
  (bisection, never above it), or the basic ``epsilon / T`` when that is larger. Charged as one
  ``ApproxDP`` event for all rounds.
* ``"zcdp"``: each round costs ``epsilon0**2 / 8`` (bounded range), each test
  ``epsilon_test**2 / 2``; the plan's total ``rho`` converts to at most ``(epsilon, delta)``.
* ``"basic"``: ``epsilon0 = epsilon / T`` (pure DP when ``delta = 0``).

The tests get ``test_fraction`` of epsilon (of ``rho`` under zCDP), split evenly; the rounds get
the rest.

Epsilon is bounded by the public :data:`MAX_EPSILON`: past it a guarantee says nothing
(``e**epsilon`` is beyond the float range from about 710 on), and the conversions' float
arithmetic (squares of epsilon, ``exp`` of a round's epsilon) would leave the float range. A
larger epsilon is refused before anything is charged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from fastmwem.accounting import (
    ZCDP,
    Accountant,
    ApproxDP,
    BoundedRange,
    PrivacyEvent,
    PureDP,
    advanced_composition,
    approx_dp_to_zcdp_budget,
    exact,
    zcdp_to_approx_dp,
)

__all__ = ["PrivacyPlan", "plan_privacy", "accountant_kind", "check_epsilon_bound",
           "COMPOSITIONS", "MAX_EPSILON"]

COMPOSITIONS = ("advanced", "zcdp", "basic")

#: Largest epsilon of an LP solve. Every composition plans it within the float range.
MAX_EPSILON = 1e6

# A round's e0 that advanced composition fits in ``rest`` has T e0 (e^e0 - 1) <= rest; from
# e0 = 1 on that forces e0 < rest / T, basic composition's value. So advanced composition can
# only win below 1, and its bisection never looks past 1 (where e^e0 would soon overflow).
_ADVANCED_CEILING = 1.0


@dataclass(frozen=True)
class PrivacyPlan:
    """What a solve spends, fixed by public parameters before the data is read.

    Attributes:
        composition: the composition that sized ``epsilon0`` (``"basic"`` when basic composition
            beat advanced composition).
        epsilon0: epsilon of each exponential-mechanism round.
        epsilon_test: epsilon of each noisy acceptance test (0 without tests).
        em_rounds: number of exponential-mechanism rounds.
        tests: number of acceptance tests.
        events: the ``(event, label)`` pairs charged to the accountant, all at once.
    """

    composition: str
    epsilon0: float
    epsilon_test: float
    em_rounds: int
    tests: int
    events: tuple[tuple[PrivacyEvent, str], ...]


def accountant_kind(accountant: Accountant) -> str:
    """``"pure"``, ``"approx"`` or ``"zcdp"``: the currency ``accountant`` composes in."""
    budget = accountant.budget()
    if isinstance(budget, ZCDP):
        return "zcdp"
    return "pure" if isinstance(budget, PureDP) else "approx"


def _largest_float(fits: Callable[[float], bool], start: float) -> float:
    """The first float at or below ``start`` (stepping down by ulps) that ``fits``; 0 if none.

    ``start`` is a close float estimate of the answer, so only a few steps are ever taken.
    """
    x = start
    while x > 0.0 and not fits(x):
        x = math.nextafter(x, 0.0)
    return max(x, 0.0)


def check_epsilon_bound(epsilon: float | Fraction) -> None:
    """Refuse (ValueError) an epsilon above :data:`MAX_EPSILON` (or NaN), naming the bound.

    Compared exactly: a ``Fraction`` beyond the float range is refused, not converted.
    """
    if not epsilon <= MAX_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:,.0f} for an LP solve (a larger "
                         "epsilon promises nothing, and its composition leaves the float range)")


def _advanced_epsilon0(rest: float, rounds: int, delta: Fraction) -> float:
    """The largest float ``e0`` in ``[0, 1]`` whose advanced composition over ``rounds`` is at
    most ``rest``, by bisection (0 when none is); above 1 basic composition always wins."""
    lo, hi = 0.0, min(rest, _ADVANCED_CEILING)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if advanced_composition(mid, rounds, delta)[0] <= rest:
            lo = mid
        else:
            hi = mid
    if hi > lo and advanced_composition(hi, rounds, delta)[0] <= rest:
        lo = hi
    return lo


def _dec(x: float) -> Fraction:
    """A float as the accountant reads it (its shortest decimal)."""
    return Fraction(repr(x))


def _split_epsilon(total: Fraction, tests: int, test_fraction: float) -> tuple[float, Fraction]:
    """The epsilon of each test (a float) and the exact epsilon left to the rounds."""
    if tests == 0:
        return 0.0, total
    share = total * exact(test_fraction, "test_fraction") / tests
    eps_test = _largest_float(lambda x: _dec(x) <= share, float(share))
    return eps_test, total - tests * _dec(eps_test)


def _test_events(eps_test: float, tests: int) -> list[tuple[PrivacyEvent, str]]:
    return [(PureDP(eps_test), f"LP objective search: acceptance test {j + 1} (noisy statistic)")
            for j in range(tests)]


def _round_events(epsilon0: float, rounds: int) -> list[tuple[PrivacyEvent, str]]:
    return [(BoundedRange(epsilon0), f"LP round {t + 1}: exponential mechanism")
            for t in range(rounds)]


def _plan_linear(total: Fraction, delta: Fraction, rounds: int, tests: int, test_fraction: float,
                 composition: str) -> PrivacyPlan:
    """``"basic"`` and ``"advanced"``: both split epsilon linearly between rounds and tests."""
    eps_test, rest = _split_epsilon(total, tests, test_fraction)
    basic = _largest_float(lambda x: rounds * _dec(x) <= rest, float(rest / rounds))
    events = _test_events(eps_test, tests)
    if composition == "advanced":
        rest_float = _largest_float(lambda x: _dec(x) <= rest, float(rest))
        eps0 = _advanced_epsilon0(rest_float, rounds, delta)
        if eps0 > basic:
            composed, _ = advanced_composition(eps0, rounds, delta)
            label = (f"LP: {rounds} exponential-mechanism rounds at epsilon0 = {eps0!r} "
                     "(advanced composition)")
            return PrivacyPlan("advanced", eps0, eps_test, rounds, tests,
                               tuple([(ApproxDP(composed, delta), label), *events]))
    return PrivacyPlan("basic", basic, eps_test, rounds, tests,
                       tuple(_round_events(basic, rounds) + events))


def _plan_zcdp(total: Fraction, delta: Fraction, rounds: int, tests: int, test_fraction: float,
               kind: str) -> PrivacyPlan:
    rho = approx_dp_to_zcdp_budget(total, delta)
    eps_test = 0.0
    rest = rho
    if tests:
        share = rho * exact(test_fraction, "test_fraction") / tests
        eps_test = _largest_float(lambda x: _dec(x) ** 2 / 2 <= share,
                                  math.sqrt(2 * float(share)))
        rest = rho - tests * _dec(eps_test) ** 2 / 2
    eps0 = _largest_float(lambda x: rounds * _dec(x) ** 2 / 8 <= rest,
                          math.sqrt(8 * float(rest) / rounds))
    if kind == "zcdp":
        events = _round_events(eps0, rounds) + _test_events(eps_test, tests)
    else:  # an (epsilon, delta) accountant: charge the conversion of the whole plan at once
        spent = rounds * _dec(eps0) ** 2 / 8 + tests * _dec(eps_test) ** 2 / 2
        label = (f"LP: {rounds} exponential-mechanism rounds at epsilon0 = {eps0!r} and {tests} "
                 "tests, composed in zCDP")
        events = [(ApproxDP(zcdp_to_approx_dp(spent, delta), delta), label)]
    return PrivacyPlan("zcdp", eps0, eps_test, rounds, tests, tuple(events))


def plan_privacy(epsilon: float, delta: float, *, em_rounds: int, tests: int = 0,
                 composition: str = "advanced", test_fraction: float = 0.1,
                 kind: str = "approx") -> PrivacyPlan:
    """The privacy plan of ``em_rounds`` exponential-mechanism rounds and ``tests`` tests.

    Args:
        epsilon, delta: the budget of the whole solve (``delta = 0``: basic composition only).
        em_rounds: adaptive exponential-mechanism rounds.
        tests: noisy acceptance tests (pure DP each).
        composition: ``"advanced"``, ``"zcdp"`` or ``"basic"`` (module docstring).
        test_fraction: share of the budget spent on the tests (when there are any).
        kind: the accountant's currency, ``"pure"``, ``"approx"`` or ``"zcdp"`` (see
            :func:`accountant_kind`); it decides how the plan is written as events.

    Raises:
        ValueError: a composition the accountant cannot hold (only ``"zcdp"`` in a zCDP
            accountant, only ``"basic"`` in a pure one), one that needs delta without it, or an
            epsilon above :data:`MAX_EPSILON`.

    >>> plan = plan_privacy(1.0, 1e-6, em_rounds=200)
    >>> plan.composition, round(plan.epsilon0, 5)
    ('advanced', 0.01299)
    >>> plan_privacy(1.0, 0, em_rounds=10, composition="basic").epsilon0
    0.1
    """
    total = exact(epsilon, "epsilon")
    check_epsilon_bound(total)
    d = exact(delta, "delta", allow_zero=True)
    if composition not in COMPOSITIONS:
        raise ValueError(f"composition must be one of {COMPOSITIONS}, got {composition!r}")
    if composition != "basic" and d == 0:
        raise ValueError(f"composition={composition!r} needs delta > 0; use "
                         "composition='basic' for pure epsilon-DP")
    if kind == "pure" and composition != "basic":
        raise ValueError(f"composition={composition!r} needs an (epsilon, delta) accountant; "
                         "this accountant holds pure DP (use composition='basic')")
    if kind == "zcdp" and composition != "zcdp":
        raise ValueError(f"composition={composition!r} sizes epsilon0 for an (epsilon, delta) "
                         "budget, but this accountant composes in zCDP; use composition='zcdp'")
    if composition == "zcdp":
        return _plan_zcdp(total, d, em_rounds, tests, test_fraction, kind)
    return _plan_linear(total, d, em_rounds, tests, test_fraction, composition)
