"""Constraint-private LP solvers: feasibility at a target (C1/C2) and the objective search
(Fast-MWEM, arXiv:2602.03732, s.4.2; see docs/lp.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_int, check_positive, check_probability
from fastmwem.lp import _args
from fastmwem.lp._checks import (
    LPData,
    check_density,
    check_lp,
    check_real,
    check_rounds,
    check_width,
    row_width,
)
from fastmwem.lp._solve import Budget, Outcome, bisect_objective, solve
from fastmwem.lp.constraint import DenseLP, DenseTest, run_dense, vertex_selector
from fastmwem.lp.oracles import check_index_spec, dense_oracle
from fastmwem.lp.result import LPResult
from fastmwem.lp.theory import dense_alpha

if TYPE_CHECKING:
    from fastmwem.accounting import Accountant
    from fastmwem.indices.base import TopKOracle
    from fastmwem.random import RNGLike

__all__ = ["dense_feasibility", "dense_linprog"]


@dataclass(frozen=True)
class _DenseSetup:
    lp: DenseLP
    density: float
    entry_bound: float
    max_constraints: int
    width: float
    rounds: int
    selection: str
    index: str | None

    @property
    def eta(self) -> float:
        return math.sqrt(math.log(self.max_constraints / self.density) / self.rounds)

    def score_sensitivity(self, z: float) -> float:
        """``rho_A / s`` with ``rho_A = z entry_bound / min c'`` (Fast-MWEM s.4.2, Thm 4.4)."""
        return z * self.entry_bound / (float(self.lp.c_pos.min()) * self.density)

    def describe(self) -> dict[str, object]:
        return {"neighbors": "constraint", "selection": self.selection, "index": self.index,
                "rounds": self.rounds, "width": self.width, "density": self.density,
                "entry_bound": self.entry_bound, "max_constraints": self.max_constraints,
                "learning_rate": self.eta}


def _dense_setup(data: LPData, *, density, entry_bound, max_constraints, width, rounds,
                 selection, index, largest_target: float) -> _DenseSetup:
    c, A, b = data.objective, data.A, data.b
    if np.any(c >= 0):
        j = int(np.argmax(c >= 0))
        raise ValueError(f"neighbors='constraint' solves packing LPs (maximise -c @ x): c must be "
                         f"< 0, got c[{j}] = {c[j]}")
    for name, value in (("density", density), ("entry_bound", entry_bound),
                        ("max_constraints", max_constraints)):
        if value is None:
            raise ValueError(f"{name} is required for neighbors='constraint' (a public parameter)")
    bound = check_positive(entry_bound, "entry_bound")
    big_m = check_int(max_constraints, "max_constraints", minimum=1)
    s = check_density(density, data.m)
    t = check_rounds(_args.rounds(rounds), big_m / s, "max_constraints / density")
    sel = _args.selection(selection, index)
    spec = check_index_spec(index, data.m, scalar=False) if sel == "lazy" else None
    # The refusals against the data name the public bound only: the row count, the entries'
    # range and b's minimum are private.
    if data.m > big_m:
        raise ValueError(f"max_constraints = {big_m} is below the number of constraints: it must "
                         "be a public upper bound on the rows of A_ub")
    if float(A.min()) < 0 or float(A.max()) > bound:
        raise ValueError(f"A_ub entries must lie in [0, entry_bound] = [0, {bound}] (a packing "
                         "LP with a public entry bound); some do not")
    if float(b.min()) < 0:
        raise ValueError("b_ub must be >= 0 (a packing LP); some entries are negative")
    observable = row_width(A, b, largest_target / -c)
    w = check_width(width, observable, "max |z A_ij / c'_j - b_i| at the largest target z")
    return _DenseSetup(DenseLP(A, b, -c), s, bound, big_m, w, t, sel, spec)


def _dense_probe(setup: _DenseSetup, oracle: TopKOracle | None, epsilon0: float, generator, track: bool):
    def probe(target: float, j: int):
        z = -target
        select = vertex_selector(setup.lp, target=z, epsilon0=epsilon0,
                                 score_sensitivity=setup.score_sensitivity(z),
                                 selection=setup.selection, oracle=oracle)
        return run_dense(setup.lp, select, target=z, density=setup.density, eta=setup.eta,
                         rounds=setup.rounds, width=setup.width, generator=generator, probe=j,
                         track=track)
    return probe


def dense_feasibility(c: object, A_ub: object, b_ub: object, *, target: float, epsilon: float,
                      delta: float, density: float, entry_bound: float, max_constraints: int,
                      width: float, rounds: int | None = None, selection: str = "exponential",
                      index: str | None = None, composition: str = "advanced",
                      rng: RNGLike = None, accountant: Accountant | None = None,
                      track: bool = False) -> LPResult:
    """Constraint-private feasibility at one objective value (Algorithms C1/C2): ``x >= 0`` with
    ``c @ x = target`` and ``A x <= b + alpha`` on all but fewer than ``density`` rows.

    Privacy: ``(epsilon, delta)``-DP when neighbouring datasets differ by one row of
    ``(A_ub, b_ub)`` with entries in ``[0, entry_bound]``: each round's vertex choice is the
    exponential mechanism with score sensitivity ``rho_A / density`` (neighbour lemma,
    Fast-MWEM Lemma A.3) at ``epsilon0``, composed over the rounds. The learning rate uses the
    public ``max_constraints``, never the private row count.

    Args:
        c: public costs, all < 0 (a packing LP: maximise ``-c @ x``).
        A_ub, b_ub: private constraints, ``0 <= A_ub <= entry_bound``, ``b_ub >= 0``.
        target: the objective value ``c @ x`` to reach (< 0).
        density: ``s`` in ``[1, m]``: how many constraints may be violated.
        entry_bound: public bound on the entries of ``A_ub``.
        max_constraints: public bound ``M >= m`` on the number of constraints.
        width: public bound on ``max |target A_ij / c_j - b_i|``.
        rounds, selection, index, composition, rng, accountant, track: as in
            :func:`scalar_feasibility` (``index``: ``"flat"`` by default, or ``"faiss:Flat"``).
    """
    budget = _args.budget(epsilon, delta, composition, 0.1)
    data = check_lp(c, A_ub, b_ub)
    goal = check_real(target, "target")
    if goal >= 0:
        raise ValueError(f"target must be < 0 (c < 0, so c @ x < 0 for any x != 0), got {goal}")
    setup = _dense_setup(data, density=density, entry_bound=entry_bound,
                         max_constraints=max_constraints, width=width, rounds=rounds,
                         selection=selection, index=index, largest_target=-goal)
    track = _args.flag(track, "track")

    def run(plan, generator) -> Outcome:
        oracle = dense_oracle(data.A, setup.lp.c_pos, setup.index) if setup.index else None
        x, trace = _dense_probe(setup, oracle, plan.epsilon0, generator, track)(goal, 0)
        return Outcome(x, goal, trace, message=f"feasibility at c @ x = {goal:.6g}: "
                       f"{setup.rounds} rounds")
    return solve(budget=budget, em_rounds=setup.rounds, tests=0, rng=rng, accountant=accountant,
                 run=run, data_A=data.A, data_b=data.b, c=data.c,
                 setup=dict(setup.describe(), target=goal), name="dense_feasibility")


def dense_linprog(data: LPData, budget: Budget, *, density, entry_bound, max_constraints, width,
                   rounds, selection, index, probes, objective_range, tolerance, beta, track,
                   rng, accountant) -> LPResult:
    k = check_int(probes, "probes", minimum=1)
    lo, hi = _args.objective_range(objective_range, None)
    if hi > 0:
        raise ValueError(f"objective_range must lie in (-inf, 0] for a packing LP (c < 0), got "
                         f"({lo}, {hi})")
    setup = _dense_setup(data, density=density, entry_bound=entry_bound,
                         max_constraints=max_constraints, width=width, rounds=rounds,
                         selection=selection, index=index, largest_target=-lo)
    tol = _args.tolerance(tolerance)
    beta = check_probability(beta, "beta")
    track = _args.flag(track, "track")

    def run(plan, generator) -> Outcome:
        oracle = dense_oracle(data.A, setup.lp.c_pos, setup.index) if setup.index else None
        probe = _dense_probe(setup, oracle, plan.epsilon0, generator, track)

        def check(x: np.ndarray, target: float):
            level = tol if tol is not None else dense_alpha(
                setup.width, setup.max_constraints, setup.density, setup.rounds,
                setup.score_sensitivity(-target), plan.epsilon0, data.d, beta)
            test = DenseTest(plan.epsilon_test, level, setup.density, k, beta)
            statistic, accepted = test(setup.lp, x, generator)
            return statistic, test.threshold, accepted
        fallback = Outcome(np.zeros(data.d), None, status=2,
                           message="no target accepted: x = 0 (feasible, as b >= 0)")
        return bisect_objective(probe, check, lower=lo, upper=hi, probes=k, fallback=fallback)
    described = dict(setup.describe(), probes=k, objective_range=(lo, hi), tolerance=tol,
                     beta=beta)
    return solve(budget=budget, em_rounds=k * setup.rounds, tests=k, rng=rng,
                 accountant=accountant, run=run, data_A=data.A, data_b=data.b, c=data.c,
                 setup=described, min_test_epsilon=2.0**-40)  # the geometric test's floor
