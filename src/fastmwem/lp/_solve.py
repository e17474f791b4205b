"""What every LP solve shares: the accountant, the charge, the objective search, the result."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fastmwem.accounting import Accountant
from fastmwem.lp._checks import Budget
from fastmwem.lp.plan import PrivacyPlan, accountant_kind, plan_privacy
from fastmwem.lp.result import LPProbe, LPResult, LPRound, total_event, violation_summary
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.random import RNGLike, make_rng

__all__ = ["Outcome", "solve", "bisect_objective"]


@dataclass
class Outcome:
    """What a run produced, before the result record is assembled."""

    x: np.ndarray
    target: float | None
    trace: list[LPRound] = field(default_factory=list)
    probes: list[LPProbe] = field(default_factory=list)
    status: int = 0
    message: str = ""


def _accountant(accountant: Accountant | None, budget: Budget) -> Accountant:
    if accountant is None:
        if budget.composition == "zcdp":
            return Accountant(epsilon=budget.epsilon, delta=budget.delta, composition="zcdp")
        return Accountant(epsilon=budget.epsilon, delta=budget.delta)
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    return accountant


def solve(*, budget: Budget, em_rounds: int, tests: int, rng: RNGLike, accountant: Accountant | None,
          run: Callable[[PrivacyPlan, np.random.Generator], Outcome], data_A: np.ndarray,
          data_b: np.ndarray, c: np.ndarray | None, setup: dict[str, object],
          name: str = "private_linprog", min_test_epsilon: float = 0.0) -> LPResult:
    """Plan, charge (all or nothing, before the data is read), run, and record.

    Every argument has been checked by the caller; the only failure left before the charge is a
    plan the accountant cannot hold or afford, which spends nothing.
    """
    acc = _accountant(accountant, budget)
    kind = accountant_kind(acc)
    plan = plan_privacy(budget.epsilon, budget.delta, em_rounds=em_rounds, tests=tests,
                        composition=budget.composition, test_fraction=budget.test_fraction,
                        kind=kind)
    # Mechanisms refuse an epsilon of 0 (and the geometric one below 2**-40): refuse here, before
    # the charge, rather than fail after it.
    if (plan.epsilon0 < sys.float_info.min
            or (tests and plan.epsilon_test <= max(min_test_epsilon, sys.float_info.min))):
        raise ValueError(f"epsilon = {budget.epsilon} is too small for {em_rounds} rounds and "
                         f"{tests} tests: a round's or a test's epsilon would be "
                         f"{min(plan.epsilon0, plan.epsilon_test if tests else 1.0):.3g}")
    # the frames: check_rng, solve, the public solver (its helper), the caller
    provenance = check_rng(rng, name, stacklevel=4 if name != "private_linprog" else 5)
    generator = make_rng(rng)
    before = len(acc.ledger)
    acc.compose_all(list(plan.events))
    ours = {id(event) for event, _ in plan.events}
    entries = tuple(e for e in acc.ledger[before:] if id(e.event) in ours)
    outcome = run(plan, generator)
    frac, worst = violation_summary(data_A, data_b, outcome.x)
    objective = None if c is None else float(c @ outcome.x)
    record = dict(setup, composition=plan.composition, epsilon0=plan.epsilon0,
                  epsilon_test=plan.epsilon_test)
    return LPResult(outcome.x, objective, frac, worst, tuple(outcome.trace),
                    tuple(outcome.probes), outcome.target, total_event(entries, kind), entries,
                    record, outcome.status, outcome.message, provenance)


def bisect_objective(run_probe: Callable[[float, int], tuple[np.ndarray, list[LPRound]]],
                     test: Callable[[np.ndarray, float], tuple[float, float, bool]], *,
                     lower: float, upper: float, probes: int, fallback: Outcome) -> Outcome:
    """The private binary search over the objective value (the search for OPT of Fast-MWEM s.4).

    Probe ``j`` solves for ``c @ x <= mid`` and runs the noisy test; an accepted target moves the
    upper end down (a smaller objective is harder), a refused one moves the lower end up. The
    output is the solution of the smallest accepted target, else ``fallback``.
    """
    best = fallback
    trace = list(fallback.trace)
    records: list[LPProbe] = []
    lo, hi = lower, upper
    for j in range(1, probes + 1):
        mid = 0.5 * (lo + hi)
        x, rounds = run_probe(mid, j)
        trace.extend(rounds)
        statistic, threshold, accepted = test(x, mid)
        records.append(LPProbe(j, mid, statistic, threshold, accepted))
        if accepted:
            hi = mid
            best = Outcome(x, mid)
        else:
            lo = mid
    n_ok = sum(p.accepted for p in records)
    if best is fallback:
        return Outcome(fallback.x, fallback.target, trace, records, fallback.status,
                       fallback.message + f" (objective search: 0 of {probes} targets accepted)")
    return Outcome(best.x, best.target, trace, records, 0,
                   f"objective search: {n_ok} of {probes} targets accepted; the smallest "
                   f"accepted target is c @ x <= {best.target:.6g}")
