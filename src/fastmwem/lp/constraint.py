"""Constraint-private LPs by dense multiplicative weights (Algorithms C1 and C2 of docs/lp.md;
Fast-MWEM, arXiv:2602.03732, s.4.2 and App. A, G, after Hsu, Roth, Roughgarden and Ullman,
arXiv 1402.3631).

Problem (a packing LP in scipy's form): ``c < 0`` public, ``0 <= A <= entry_bound``, ``b >= 0``;
neighbouring datasets differ by one constraint row ``(A_i, b_i)`` added or removed. For a public
target ``z = -(c @ x)`` the solver looks for ``x`` in ``K = {x >= 0 : c'x = z}`` (``c' = -c``)
violating at most ``s`` constraints by more than ``alpha``.

Each round projects the *cumulative* gains (lazy projection, so neighbours' pre-projection
weights agree on their shared rows) onto the ``s``-dense distributions, picks a vertex
``x_j = (z / c'_j) e_j`` of ``K`` by the exponential mechanism on
``q(j) = -<y, V_{:,j}>`` with ``V_ij = z A_ij / c'_j`` (sensitivity ``rho_A / s``,
``rho_A = z entry_bound / min c'``, by the neighbour lemma), and adds the gains
``(V_{i j} - b_i) / width``. The fast dual oracle (C2) runs the lazy exponential mechanism over the
vertex keys ``-A_{:,j} / c'_j`` with query ``z y``.

The learning rate ``sqrt(ln(M / s) / T)`` uses a public bound ``M`` on the number of constraints:
``m`` itself differs between neighbours, and a learning rate read from it would scale every
shared weight differently on the two sides.

:func:`dense_feasibility` runs one target; :func:`dense_linprog` searches the objective over
targets (the front end is :func:`~fastmwem.lp.private_linprog`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_int, check_probability
from fastmwem.lp import _checks
from fastmwem.lp._checks import (
    BLOCK,
    Budget,
    LPData,
    check_density,
    check_lp,
    check_real,
    check_rounds,
    check_width,
    row_width,
)
from fastmwem.lp._solve import Outcome, bisect_objective, solve
from fastmwem.lp.neighbors import ConstraintNeighbors
from fastmwem.lp.oracles import check_index_spec, dense_oracle
from fastmwem.lp.projection import project_log_weights
from fastmwem.lp.result import LPResult, LPRound, violation_summary
from fastmwem.lp.theory import dense_alpha
from fastmwem.mechanisms.exponential import ExponentialMechanism
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.mechanisms.lazy import LazyExponentialMechanism

if TYPE_CHECKING:
    from fastmwem.accounting import Accountant
    from fastmwem.indices.base import TopKOracle
    from fastmwem.lp.plan import PrivacyPlan
    from fastmwem.random import RNGLike

__all__ = ["DenseLP", "DenseMWU", "run_dense", "DenseTest", "vertex_selector", "dense_feasibility",
           "dense_linprog"]


@dataclass(frozen=True)
class DenseLP:
    """A checked packing LP: ``A >= 0`` (m x d), ``b``, and the positive costs ``c' = -c``."""

    A: np.ndarray
    b: np.ndarray
    c_pos: np.ndarray

    def values(self, j: int, target: float) -> np.ndarray:
        """``V_{:,j} = target A_{:,j} / c'_j``: every row's left-hand side at vertex ``j``."""
        return np.asarray(self.A[:, j], dtype=np.float64) * (target / self.c_pos[j])

    def weighted_columns(self, y: np.ndarray) -> np.ndarray:
        """``y @ A`` (length d), blockwise in float64."""
        out = np.zeros(self.A.shape[1])
        for s in range(0, self.A.shape[0], BLOCK):
            out += y[s:s + BLOCK] @ np.asarray(self.A[s:s + BLOCK], dtype=np.float64)
        return out


class DenseMWU:
    """Multiplicative weights over the constraints, projected onto ``s``-dense distributions.

    The state is the cumulative gain of each row; every round's distribution is the projection of
    ``eta * gains`` (lazy projection, docs/lp.md): never the previous projected
    distribution updated again.
    """

    def __init__(self, m: int, density: float, eta: float) -> None:
        self.gains = np.zeros(m)
        self.density = float(density)
        self.eta = float(eta)

    def log_weights(self) -> np.ndarray:
        return self.eta * self.gains

    def distribution(self) -> np.ndarray:
        return project_log_weights(self.log_weights(), self.density)

    def update(self, gains: np.ndarray) -> None:
        self.gains += gains


def vertex_selector(lp: DenseLP, *, target: float, epsilon0: float, score_sensitivity: float,
                    selection: str, oracle: TopKOracle | None = None
                    ) -> Callable[[np.ndarray, np.random.Generator], int]:
    """The dual oracle: a vertex ``j`` by the exponential mechanism on ``q(j) = -<y, V_{:,j}>``
    (``epsilon0``-DP, bounded range, score sensitivity ``score_sensitivity``).

    ``"exponential"`` scores the d vertices from ``y @ A``; ``"lazy"`` queries ``oracle`` (keys
    ``-A_{:,j} / c'_j``) with ``target * y``. The constant ``sum_i y_i b_i`` is left out of the
    score: it moves no probability but would add to the sensitivity.
    """
    if selection == "exponential":
        em = ExponentialMechanism(epsilon=epsilon0, sensitivity=score_sensitivity)
        return lambda y, g: em.select(-target * lp.weighted_columns(y) / lp.c_pos, rng=g)
    if oracle is None:
        raise ValueError("selection='lazy' needs an oracle")
    lazy = LazyExponentialMechanism(oracle, epsilon=epsilon0, sensitivity=score_sensitivity)
    return lambda y, g: lazy.select(target * y, rng=g)


def run_dense(lp: DenseLP, select: Callable[[np.ndarray, np.random.Generator], int], *,
              target: float, density: float, eta: float, rounds: int,
              width: float, generator: np.random.Generator, probe: int = 0,
              track: bool = False) -> tuple[np.ndarray, list[LPRound]]:
    """Algorithm C1/C2's loop; returns the average vertex and the round records."""
    mwu = DenseMWU(lp.A.shape[0], density, eta)
    counts = np.zeros(lp.A.shape[1])
    trace: list[LPRound] = []
    for t in range(1, rounds + 1):
        y = mwu.distribution()
        j = select(y, generator)
        counts[j] += 1
        # b_i is row i's own offset (the experts are the rows), not a shift common to every
        # expert: it stays, and neighbours' shared rows get bit-identical gains.
        mwu.update((lp.values(j, target) - lp.b) / width)
        frac = worst = None
        if track:
            frac, worst = violation_summary(lp.A, lp.b, target / lp.c_pos * counts / t)
        trace.append(LPRound(probe, t, int(j), frac, worst))
    return target / lp.c_pos * counts / rounds, trace


@dataclass(frozen=True)
class DenseTest:
    """The private acceptance test of a target under constraint neighbours.

    The statistic, the number of constraints with ``A_i xbar > b_i + tolerance``, changes by at
    most one when a row is added or removed; it is released with two-sided geometric noise at
    ``epsilon`` and the target accepted when the noisy count is at most
    ``density + ln(K / beta) / epsilon`` (``K`` tests).
    """

    epsilon: float
    tolerance: float
    density: float
    tests: int
    beta: float

    @property
    def threshold(self) -> float:
        return self.density + math.log(self.tests / self.beta) / self.epsilon

    def __call__(self, lp: DenseLP, x: np.ndarray,
                 generator: np.random.Generator) -> tuple[float, bool]:
        count = 0
        for s in range(0, lp.A.shape[0], BLOCK):
            v = np.asarray(lp.A[s:s + BLOCK], dtype=np.float64) @ x - lp.b[s:s + BLOCK]
            count += int(np.count_nonzero(v > self.tolerance))
        noisy = Geometric(epsilon=self.epsilon, sensitivity=1).release(count, rng=generator)
        return float(noisy), bool(noisy <= self.threshold)


# -- the solvers: feasibility at a target (C1/C2) and the objective search ------------------


@dataclass(frozen=True)
class _DenseSetup:
    lp: DenseLP
    neighbors: ConstraintNeighbors
    width: float
    rounds: int
    selection: str
    index: str | None

    @property
    def density(self) -> float:
        return self.neighbors.density

    @property
    def entry_bound(self) -> float:
        return self.neighbors.entry_bound

    @property
    def max_constraints(self) -> int:
        return self.neighbors.max_constraints

    @property
    def eta(self) -> float:
        return math.sqrt(math.log(self.max_constraints / self.density) / self.rounds)

    def score_sensitivity(self, z: float) -> float:
        """``rho_A / s`` with ``rho_A = z entry_bound / min c'`` (Fast-MWEM s.4.2, Thm 4.4)."""
        return z * self.entry_bound / (float(self.lp.c_pos.min()) * self.density)

    def describe(self) -> dict[str, object]:
        return {"neighbors": self.neighbors.name, "selection": self.selection,
                "index": self.index, "rounds": self.rounds, "width": self.width,
                **self.neighbors.parameters(), "learning_rate": self.eta}


def _dense_setup(data: LPData, neighbors: ConstraintNeighbors, *, width: float | None,
                 rounds: int | None, selection: str, index: str | None,
                 largest_target: float) -> _DenseSetup:
    c, A, b = data.objective, data.A, data.b
    if np.any(c >= 0):
        j = int(np.argmax(c >= 0))
        raise ValueError(f"neighbors='constraint' solves packing LPs (maximise -c @ x): c must be "
                         f"< 0, got c[{j}] = {c[j]}")
    bound, big_m = neighbors.entry_bound, neighbors.max_constraints
    s = check_density(neighbors.density, data.m)
    t = check_rounds(_checks.rounds(rounds), big_m / s, "max_constraints / density")
    sel = _checks.selection(selection, index)
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
    return _DenseSetup(DenseLP(A, b, -c), neighbors, w, t, sel, spec)


def _dense_probe(setup: _DenseSetup, oracle: TopKOracle | None, epsilon0: float,
                 generator: np.random.Generator, track: bool
                 ) -> Callable[[float, int], tuple[np.ndarray, list[LPRound]]]:
    def probe(target: float, j: int) -> tuple[np.ndarray, list[LPRound]]:
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
    budget = _checks.budget(epsilon, delta, composition, 0.1)
    data = check_lp(c, A_ub, b_ub)
    goal = check_real(target, "target")
    if goal >= 0:
        raise ValueError(f"target must be < 0 (c < 0, so c @ x < 0 for any x != 0), got {goal}")
    relation = ConstraintNeighbors(density, entry_bound, max_constraints)
    setup = _dense_setup(data, relation, width=width, rounds=rounds, selection=selection,
                         index=index, largest_target=-goal)
    track = _checks.flag(track, "track")

    def run(plan: PrivacyPlan, generator: np.random.Generator) -> Outcome:
        oracle = dense_oracle(data.A, setup.lp.c_pos, setup.index) if setup.index else None
        x, trace = _dense_probe(setup, oracle, plan.epsilon0, generator, track)(goal, 0)
        return Outcome(x, goal, trace, message=f"feasibility at c @ x = {goal:.6g}: "
                       f"{setup.rounds} rounds")
    return solve(budget=budget, em_rounds=setup.rounds, tests=0, rng=rng, accountant=accountant,
                 run=run, data_A=data.A, data_b=data.b, c=data.c,
                 setup=dict(setup.describe(), target=goal), name="dense_feasibility")


def dense_linprog(data: LPData, budget: Budget, neighbors: ConstraintNeighbors, *,
                  width: float | None,
                  rounds: int | None, selection: str, index: str | None, probes: int,
                  objective_range: tuple[float, float] | None, tolerance: float | None,
                  beta: float, track: bool, rng: RNGLike,
                  accountant: Accountant | None) -> LPResult:
    k = check_int(probes, "probes", minimum=1)
    lo, hi = _checks.objective_range(objective_range, None)
    if hi > 0:
        raise ValueError(f"objective_range must lie in (-inf, 0] for a packing LP (c < 0), got "
                         f"({lo}, {hi})")
    setup = _dense_setup(data, neighbors, width=width, rounds=rounds, selection=selection,
                         index=index, largest_target=-lo)
    tol = _checks.tolerance(tolerance)
    beta = check_probability(beta, "beta")
    track = _checks.flag(track, "track")

    def run(plan: PrivacyPlan, generator: np.random.Generator) -> Outcome:
        oracle = dense_oracle(data.A, setup.lp.c_pos, setup.index) if setup.index else None
        probe = _dense_probe(setup, oracle, plan.epsilon0, generator, track)

        def check(x: np.ndarray, target: float) -> tuple[float, float, bool]:
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
