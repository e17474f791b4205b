"""Scalar-private LP solvers: feasibility (S1/S2) and the objective search (Fast-MWEM s.4)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_int, check_probability
from fastmwem.lp import _checks
from fastmwem.lp._checks import Budget, LPData, check_lp, check_rounds, check_width, row_width
from fastmwem.lp._solve import Outcome, bisect_objective, solve
from fastmwem.lp.neighbors import ScalarNeighbors
from fastmwem.lp.oracles import check_index_spec
from fastmwem.lp.result import LPResult, LPRound
from fastmwem.lp.scalar import (
    ScalarTest,
    build_oracle,
    objective_rows,
    run_primal,
    scalar_selector,
)
from fastmwem.lp.theory import scalar_alpha

if TYPE_CHECKING:
    from fastmwem.accounting import Accountant
    from fastmwem.indices.base import TopKOracle
    from fastmwem.lp.plan import PrivacyPlan
    from fastmwem.random import RNGLike

__all__ = ["scalar_feasibility", "scalar_linprog"]


@dataclass(frozen=True)
class _ScalarSetup:
    data: LPData
    neighbors: ScalarNeighbors
    width: float
    rounds: int
    selection: str
    index: str | None

    @property
    def sensitivity(self) -> float:
        return self.neighbors.sensitivity

    def describe(self) -> dict[str, object]:
        return {"neighbors": self.neighbors.name, "selection": self.selection,
                "index": self.index, "rounds": self.rounds, "width": self.width,
                **self.neighbors.parameters(),
                "learning_rate": math.sqrt(math.log(self.data.d) / self.rounds)}


def _scalar_setup(data: LPData, neighbors: ScalarNeighbors, *, width: object, rounds: object,
                  selection: object, index: object, extra_width: float = 0.0,
                  objective: bool = False) -> _ScalarSetup:
    t = check_rounds(_checks.rounds(rounds), data.d, "d")
    sel = _checks.selection(selection, index)
    spec = None
    if sel == "lazy":
        spec = check_index_spec(index, data.d + (2 if objective else 1), scalar=True)
    w = check_width(width, row_width(data.A, data.b), "max |A_ij - b_i| (the LP width on the "
                    "simplex)")
    return _ScalarSetup(data, neighbors, max(w, extra_width), t, sel, spec)


def _primal_probe(setup: _ScalarSetup, oracle: TopKOracle | None, epsilon0: float,
                  generator: np.random.Generator, track: bool
                  ) -> Callable[[float | None, int], tuple[np.ndarray, list[LPRound]]]:
    data = setup.data

    def probe(target: float | None, j: int) -> tuple[np.ndarray, list[LPRound]]:
        rows = objective_rows(data.A, data.b, data.c, target)
        select = scalar_selector(rows, epsilon0=epsilon0, sensitivity=setup.sensitivity,
                                 selection=setup.selection, oracle=oracle, target=target)
        return run_primal(rows, select, rounds=setup.rounds, width=setup.width,
                          generator=generator, probe=j, track=track)
    return probe


def scalar_feasibility(A_ub: object, b_ub: object, *, epsilon: float, delta: float,
                       sensitivity: float, width: float, rounds: int | None = None,
                       selection: str = "exponential", index: str | None = None,
                       composition: str = "advanced", rng: RNGLike = None,
                       accountant: Accountant | None = None, track: bool = False, A_lb: object = None,
                       b_lb: object = None) -> LPResult:
    """Scalar-private feasibility (Algorithms S1/S2): ``x`` in the simplex with
    ``A x <= b + alpha``.

    Privacy: ``(epsilon, delta)``-DP for neighbours with ``|b - b'|_inf <= sensitivity`` (``A``
    public): each round is the exponential mechanism on ``A_i x_t - b_i`` (sensitivity
    ``sensitivity``, since ``x_t`` depends only on earlier choices) at ``epsilon0``, composed over
    the rounds (see :func:`~fastmwem.lp.plan.plan_privacy`). With probability ``1 - beta``
    the output meets :func:`~fastmwem.lp.theory.scalar_alpha`.

    Args:
        A_ub, b_ub: constraints ``A_ub @ x <= b_ub`` (``b_ub`` private).
        epsilon, delta: the privacy budget of the solve.
        sensitivity: public bound on ``|b - b'|_inf`` between neighbours.
        width: public bound on ``max |A_ij - b_i|`` (refused if the data shows a larger one).
        rounds: T (default 200); needs ``T >= ln d``.
        selection: ``"exponential"`` (classic scan, S1) or ``"lazy"`` (S2).
        index: the exact oracle for ``"lazy"``: ``"warm"`` (default), ``"flat"``,
            ``"faiss:Flat"``. Approximate indices are refused.
        composition: ``"advanced"``, ``"zcdp"`` or ``"basic"``.
        rng: ``None`` for a release; an integer seed (tests) warns and marks the result seeded.
        accountant: charged the whole plan before the data is read (a fresh one by default).
        track: record each round's violation of the running average (non-private diagnostics;
            costs a full pass per round).
        A_lb, b_lb: constraints ``A_lb @ x >= b_lb``, handled as ``-A_lb @ x <= -b_lb``.
    """
    budget = _checks.budget(epsilon, delta, composition, 0.1)
    data = check_lp(None, A_ub, b_ub, A_lb, b_lb)
    setup = _scalar_setup(data, ScalarNeighbors(sensitivity), width=width, rounds=rounds,
                          selection=selection, index=index)
    track = _checks.flag(track, "track")

    def run(plan: PrivacyPlan, generator: np.random.Generator) -> Outcome:
        oracle = build_oracle(data.A, data.b, setup.index, None) if setup.index else None
        x, trace = _primal_probe(setup, oracle, plan.epsilon0, generator, track)(None, 0)
        return Outcome(x, None, trace, message=f"feasibility: {setup.rounds} rounds")
    return solve(budget=budget, em_rounds=setup.rounds, tests=0, rng=rng, accountant=accountant,
                 run=run, data_A=data.A, data_b=data.b, c=None, setup=setup.describe(),
                 name="scalar_feasibility")


def scalar_linprog(data: LPData, budget: Budget, neighbors: ScalarNeighbors, *,
                   width: float | None, rounds: int | None, selection: str, index: str | None,
                   probes: int, objective_range: tuple[float, float] | None,
                   tolerance: float | None, beta: float, track: bool, rng: RNGLike,
                   accountant: Accountant | None) -> LPResult:
    c = data.objective
    k = check_int(probes, "probes", minimum=0)
    lo, hi = _checks.objective_range(objective_range, (float(c.min()), float(c.max())))
    if objective_range is None and not lo < hi:
        k = 0  # a constant objective: every feasible x is optimal
    span = float(max(np.abs(c - lo).max(), np.abs(c - hi).max())) if k else 0.0
    setup = _scalar_setup(data, neighbors, width=width, rounds=rounds, selection=selection,
                          index=index, extra_width=span, objective=k > 0)
    tol = _checks.tolerance(tolerance)
    beta = check_probability(beta, "beta")
    track = _checks.flag(track, "track")

    def run(plan: PrivacyPlan, generator: np.random.Generator) -> Outcome:
        oracle = (build_oracle(data.A, data.b, setup.index, c if k else None)
                  if setup.index else None)
        probe = _primal_probe(setup, oracle, plan.epsilon0, generator, track)
        if k == 0:
            x, trace = probe(None, 0)
            return Outcome(x, None, trace, message=f"feasibility: {setup.rounds} rounds")
        level = tol if tol is not None else scalar_alpha(
            setup.width, data.d, data.m + 1, setup.rounds, setup.sensitivity, plan.epsilon0, beta)
        test = ScalarTest(plan.epsilon_test, setup.sensitivity, level, k, beta)

        def check(x: np.ndarray, target: float) -> tuple[float, float, bool]:
            statistic, accepted = test(objective_rows(data.A, data.b, c, target), x, generator)
            return statistic, test.threshold, accepted
        x0, trace0 = probe(hi, 0)
        fallback = Outcome(x0, None, trace0, status=2,
                           message=f"no target accepted: x solves c @ x <= {hi:.6g} only")
        return bisect_objective(probe, check, lower=lo, upper=hi, probes=k, fallback=fallback)
    described = dict(setup.describe(), probes=k, objective_range=(lo, hi), tolerance=tol,
                     beta=beta)
    return solve(budget=budget, em_rounds=(k + 1) * setup.rounds, tests=k, rng=rng,
                 accountant=accountant, run=run, data_A=data.A, data_b=data.b, c=c,
                 setup=described)
