"""Private linear programs in the style of ``scipy.optimize.linprog``: minimise ``c @ x`` subject
to ``A_ub @ x <= b_ub`` (and ``A_lb @ x >= b_lb``), under one of two privacy models.

* ``privacy="scalar"`` (private-LP spec s.1, s.3): ``A`` and ``c`` are public, ``b`` is private,
  and neighbouring datasets have ``|b - b'|_inf <= sensitivity``. ``x`` ranges over the
  probability simplex (scale the variables to fit). Feasibility by S1/S2, the objective by a
  private binary search over the target ``c @ x <= w``.
* ``privacy="constraint"`` (spec s.4): neighbouring datasets differ by one constraint row. The LP
  must be a packing LP (``c < 0``, ``0 <= A_ub <= entry_bound``, ``b_ub >= 0``, ``x >= 0``); the
  answer may violate up to ``density`` constraints by more than ``alpha``. Dense MWU (C1/C2) for
  each target, and the same binary search with a noisy count as its test.

``selection="exponential"`` scores every candidate each round; ``selection="lazy"`` samples the
same law from an exact top-k oracle (``index``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_positive, check_probability
from fastmwem.lp._checks import (
    LPData,
    check_choice,
    check_delta,
    check_density,
    check_lp,
    check_real,
    check_rounds,
    check_width,
    row_width,
)
from fastmwem.lp._solve import Budget, Outcome, bisect_objective, solve
from fastmwem.lp.budget import COMPOSITIONS
from fastmwem.lp.dense import DenseLP, DenseTest, run_dense, vertex_selector
from fastmwem.lp.oracles import check_index_spec, dense_oracle
from fastmwem.lp.result import LPResult
from fastmwem.lp.scalar import (
    ScalarTest,
    build_oracle,
    objective_rows,
    run_primal,
    scalar_selector,
)
from fastmwem.lp.theory import dense_alpha, scalar_alpha

__all__ = ["private_linprog", "scalar_feasibility", "dense_feasibility", "DEFAULT_ROUNDS"]

#: Rounds T when ``rounds=None`` (the private-LP spec's s.6 default).
DEFAULT_ROUNDS = 200
_SELECTIONS = ("exponential", "lazy")


def _budget(epsilon: object, delta: object, composition: object,
            test_fraction: object) -> Budget:
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    comp = check_choice(composition, "composition", COMPOSITIONS)
    if comp != "basic" and d == 0:
        raise ValueError(f"composition={comp!r} needs delta > 0; pass composition='basic' for "
                         "pure epsilon-DP")
    return Budget(eps, d, comp, check_probability(test_fraction, "test_fraction"))


def _selection(selection: object, index: object) -> str:
    sel = check_choice(selection, "selection", _SELECTIONS)
    if sel == "exponential" and index is not None:
        raise ValueError("index is used only with selection='lazy'")
    return sel


def _range(objective_range: object, default: tuple[float, float] | None,
           ) -> tuple[float, float]:
    if objective_range is None:
        if default is None:
            raise ValueError("objective_range is required: a public interval (lo, hi) holding "
                             "the optimal value of c @ x")
        return default
    if isinstance(objective_range, (str, bytes)) or not hasattr(objective_range, "__len__") \
            or len(objective_range) != 2:
        raise TypeError("objective_range must be a pair (lo, hi)")
    lo = check_real(objective_range[0], "objective_range[0]")
    hi = check_real(objective_range[1], "objective_range[1]")
    if not lo < hi:
        raise ValueError(f"objective_range must have lo < hi, got ({lo}, {hi})")
    return lo, hi


def _tolerance(tolerance: object) -> float | None:
    return None if tolerance is None else check_real(tolerance, "tolerance")


def _rounds(rounds: object) -> object:
    return DEFAULT_ROUNDS if rounds is None else rounds


def _refuse(model: str, **given: object) -> None:
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"{name} does not apply to privacy={model!r}")


# -- scalar privacy ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _ScalarSetup:
    data: LPData
    sensitivity: float
    width: float
    rounds: int
    selection: str
    index: str | None

    def describe(self) -> dict[str, object]:
        return {"privacy": "scalar", "selection": self.selection, "index": self.index,
                "rounds": self.rounds, "width": self.width, "sensitivity": self.sensitivity,
                "learning_rate": math.sqrt(math.log(self.data.d) / self.rounds)}


def _scalar_setup(data: LPData, *, sensitivity: object, width: object, rounds: object,
                  selection: object, index: object, extra_width: float = 0.0,
                  objective: bool = False) -> _ScalarSetup:
    if sensitivity is None:
        raise ValueError("sensitivity is required for privacy='scalar': the public bound on "
                         "|b - b'|_inf between neighbouring datasets")
    sens = check_positive(sensitivity, "sensitivity")
    t = check_rounds(_rounds(rounds), data.d, "d")
    sel = _selection(selection, index)
    spec = None
    if sel == "lazy":
        spec = check_index_spec(index, data.d + (2 if objective else 1), scalar=True)
    w = check_width(width, row_width(data.A, data.b), "max |A_ij - b_i| (the LP width on the "
                    "simplex)")
    return _ScalarSetup(data, sens, max(w, extra_width), t, sel, spec)


def _primal_probe(setup: _ScalarSetup, oracle: object, epsilon0: float, generator,
                  track: bool):
    data = setup.data

    def probe(target: float | None, j: int):
        rows = objective_rows(data.A, data.b, data.c, target)
        select = scalar_selector(rows, epsilon0=epsilon0, sensitivity=setup.sensitivity,
                                 selection=setup.selection, oracle=oracle, target=target)
        return run_primal(rows, select, rounds=setup.rounds, width=setup.width,
                          generator=generator, probe=j, track=track)
    return probe


def scalar_feasibility(A_ub: object, b_ub: object, *, epsilon: float, delta: float,
                       sensitivity: float, width: float, rounds: int | None = None,
                       selection: str = "exponential", index: str | None = None,
                       composition: str = "advanced", rng: object = None,
                       accountant: object = None, track: bool = False, A_lb: object = None,
                       b_lb: object = None) -> LPResult:
    """Scalar-private feasibility (Algorithms S1/S2): ``x`` in the simplex with
    ``A x <= b + alpha``.

    Privacy: ``(epsilon, delta)``-DP for neighbours with ``|b - b'|_inf <= sensitivity`` (``A``
    public): each round is the exponential mechanism on ``A_i x_t - b_i`` (sensitivity
    ``sensitivity``, since ``x_t`` depends only on earlier choices) at ``epsilon0``, composed over
    the rounds (see :func:`~fastmwem.lp.budget.plan_privacy`). With probability ``1 - beta``
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
    budget = _budget(epsilon, delta, composition, 0.1)
    data = check_lp(None, A_ub, b_ub, A_lb, b_lb)
    setup = _scalar_setup(data, sensitivity=sensitivity, width=width, rounds=rounds,
                          selection=selection, index=index)
    track = _flag(track, "track")

    def run(plan, generator) -> Outcome:
        oracle = build_oracle(data.A, data.b, setup.index, None) if setup.index else None
        x, trace = _primal_probe(setup, oracle, plan.epsilon0, generator, track)(None, 0)
        return Outcome(x, None, trace, message=f"feasibility: {setup.rounds} rounds")
    return solve(budget=budget, em_rounds=setup.rounds, tests=0, rng=rng, accountant=accountant,
                 run=run, data_A=data.A, data_b=data.b, c=None, setup=setup.describe(),
                 name="scalar_feasibility")


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _scalar_linprog(data: LPData, budget: Budget, *, sensitivity, width, rounds, selection, index,
                    probes, objective_range, tolerance, beta, track, rng,
                    accountant) -> LPResult:
    c = data.c
    k = check_int(probes, "probes", minimum=0)
    lo, hi = _range(objective_range, (float(c.min()), float(c.max())))
    if objective_range is None and not lo < hi:
        k = 0  # a constant objective: every feasible x is optimal
    span = float(max(np.abs(c - lo).max(), np.abs(c - hi).max())) if k else 0.0
    setup = _scalar_setup(data, sensitivity=sensitivity, width=width, rounds=rounds,
                          selection=selection, index=index, extra_width=span, objective=k > 0)
    tol = _tolerance(tolerance)
    beta = check_probability(beta, "beta")
    track = _flag(track, "track")

    def run(plan, generator) -> Outcome:
        oracle = (build_oracle(data.A, data.b, setup.index, c if k else None)
                  if setup.index else None)
        probe = _primal_probe(setup, oracle, plan.epsilon0, generator, track)
        if k == 0:
            x, trace = probe(None, 0)
            return Outcome(x, None, trace, message=f"feasibility: {setup.rounds} rounds")
        level = tol if tol is not None else scalar_alpha(
            setup.width, data.d, data.m + 1, setup.rounds, setup.sensitivity, plan.epsilon0, beta)
        test = ScalarTest(plan.epsilon_test, setup.sensitivity, level, k, beta)

        def check(x: np.ndarray, target: float):
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


# -- constraint privacy -----------------------------------------------------------------------
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
        """``rho_A / s`` with ``rho_A = z entry_bound / min c'`` (private-LP spec s.4.2)."""
        return z * self.entry_bound / (float(self.lp.c_pos.min()) * self.density)

    def describe(self) -> dict[str, object]:
        return {"privacy": "constraint", "selection": self.selection, "index": self.index,
                "rounds": self.rounds, "width": self.width, "density": self.density,
                "entry_bound": self.entry_bound, "max_constraints": self.max_constraints,
                "learning_rate": self.eta}


def _dense_setup(data: LPData, *, density, entry_bound, max_constraints, width, rounds,
                 selection, index, largest_target: float) -> _DenseSetup:
    c, A, b = data.c, data.A, data.b
    if np.any(c >= 0):
        j = int(np.argmax(c >= 0))
        raise ValueError(f"privacy='constraint' solves packing LPs (maximise -c @ x): c must be "
                         f"< 0, got c[{j}] = {c[j]}")
    for name, value in (("density", density), ("entry_bound", entry_bound),
                        ("max_constraints", max_constraints)):
        if value is None:
            raise ValueError(f"{name} is required for privacy='constraint' (a public parameter)")
    bound = check_positive(entry_bound, "entry_bound")
    big_m = check_int(max_constraints, "max_constraints", minimum=1)
    s = check_density(density, data.m)
    t = check_rounds(_rounds(rounds), big_m / s, "max_constraints / density")
    sel = _selection(selection, index)
    spec = check_index_spec(index, data.m, scalar=False) if sel == "lazy" else None
    if data.m > big_m:
        raise ValueError(f"max_constraints ({big_m}) is below the number of constraints "
                         f"({data.m})")
    low, high = float(A.min()), float(A.max())
    if low < 0 or high > bound:
        raise ValueError(f"A_ub entries must lie in [0, entry_bound] = [0, {bound}] (a packing "
                         f"LP with public entry bound), got range [{low}, {high}]")
    if float(b.min()) < 0:
        raise ValueError(f"b_ub must be >= 0 (a packing LP), got min {float(b.min())}")
    observable = row_width(A, b, largest_target / -c)
    w = check_width(width, observable, "max |z A_ij / c'_j - b_i| at the largest target z")
    return _DenseSetup(DenseLP(A, b, -c), s, bound, big_m, w, t, sel, spec)


def _dense_probe(setup: _DenseSetup, oracle: object, epsilon0: float, generator, track: bool):
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
                      rng: object = None, accountant: object = None,
                      track: bool = False) -> LPResult:
    """Constraint-private feasibility at one objective value (Algorithms C1/C2): ``x >= 0`` with
    ``c @ x = target`` and ``A x <= b + alpha`` on all but fewer than ``density`` rows.

    Privacy: ``(epsilon, delta)``-DP when neighbouring datasets differ by one row of
    ``(A_ub, b_ub)`` with entries in ``[0, entry_bound]``: each round's vertex choice is the
    exponential mechanism with score sensitivity ``rho_A / density`` (neighbour lemma, spec
    s.4.2) at ``epsilon0``, composed over the rounds. The learning rate uses the public
    ``max_constraints``, never the private row count.

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
    budget = _budget(epsilon, delta, composition, 0.1)
    data = check_lp(c, A_ub, b_ub)
    goal = check_real(target, "target")
    if goal >= 0:
        raise ValueError(f"target must be < 0 (c < 0, so c @ x < 0 for any x != 0), got {goal}")
    setup = _dense_setup(data, density=density, entry_bound=entry_bound,
                         max_constraints=max_constraints, width=width, rounds=rounds,
                         selection=selection, index=index, largest_target=-goal)
    track = _flag(track, "track")

    def run(plan, generator) -> Outcome:
        oracle = dense_oracle(data.A, setup.lp.c_pos, setup.index) if setup.index else None
        x, trace = _dense_probe(setup, oracle, plan.epsilon0, generator, track)(goal, 0)
        return Outcome(x, goal, trace, message=f"feasibility at c @ x = {goal:.6g}: "
                       f"{setup.rounds} rounds")
    return solve(budget=budget, em_rounds=setup.rounds, tests=0, rng=rng, accountant=accountant,
                 run=run, data_A=data.A, data_b=data.b, c=data.c,
                 setup=dict(setup.describe(), target=goal), name="dense_feasibility")


def _dense_linprog(data: LPData, budget: Budget, *, density, entry_bound, max_constraints, width,
                   rounds, selection, index, probes, objective_range, tolerance, beta, track,
                   rng, accountant) -> LPResult:
    k = check_int(probes, "probes", minimum=1)
    lo, hi = _range(objective_range, None)
    if hi > 0:
        raise ValueError(f"objective_range must lie in (-inf, 0] for a packing LP (c < 0), got "
                         f"({lo}, {hi})")
    setup = _dense_setup(data, density=density, entry_bound=entry_bound,
                         max_constraints=max_constraints, width=width, rounds=rounds,
                         selection=selection, index=index, largest_target=-lo)
    tol = _tolerance(tolerance)
    beta = check_probability(beta, "beta")
    track = _flag(track, "track")

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
                 setup=described)


# -- the front end ----------------------------------------------------------------------------
def private_linprog(c: object, A_ub: object = None, b_ub: object = None, *, A_lb: object = None,
                    b_lb: object = None, epsilon: float, delta: float, privacy: str = "scalar",
                    selection: str = "exponential", index: str | None = None,
                    rounds: int | None = None, width: float | None = None, rng: object = None,
                    accountant: object = None, sensitivity: float | None = None,
                    density: float | None = None, entry_bound: float | None = None,
                    max_constraints: int | None = None,
                    objective_range: tuple[float, float] | None = None, probes: int = 8,
                    tolerance: float | None = None, beta: float = 0.05,
                    composition: str = "advanced", test_fraction: float = 0.1,
                    track: bool = False) -> LPResult:
    """Minimise ``c @ x`` subject to ``A_ub @ x <= b_ub`` (and ``A_lb @ x >= b_lb``) privately.

    Privacy: ``(epsilon, delta)``-DP (``epsilon``-DP with ``delta = 0`` and
    ``composition="basic"``) under the chosen model (module docstring). The whole plan
    (``(probes + 1) T`` rounds and ``probes`` tests for ``"scalar"``, ``probes T`` rounds and
    ``probes`` tests for ``"constraint"``) is charged to ``accountant`` before the data is read; a
    refused charge spends nothing. Every argument, including checks against the data (a width
    below the data's width, entries outside ``entry_bound``), is checked before that.

    The objective search (private-LP spec s.3) halves ``objective_range`` ``probes`` times. Probe
    ``j`` solves for ``c @ x <= mid`` and releases a noisy statistic: the largest violation
    (Laplace, sensitivity ``sensitivity``) under scalar privacy, the number of rows violated by
    more than ``tolerance`` (geometric, sensitivity 1) under constraint privacy. A target is
    accepted when the statistic is at most ``tolerance`` (resp. ``density``) plus the noise's
    ``ln(probes / beta)`` tail. ``tolerance=None`` uses the theoretical ``alpha``
    (:func:`~fastmwem.lp.theory.scalar_alpha`, :func:`~fastmwem.lp.theory.dense_alpha`), which
    is loose; a smaller public tolerance gives sharper answers.

    Args:
        c: public costs (length d).
        A_ub, b_ub: ``A_ub @ x <= b_ub``.
        A_lb, b_lb: ``A_lb @ x >= b_lb`` (stacked as ``-A_lb @ x <= -b_lb``).
        epsilon, delta: privacy budget of the whole solve.
        privacy: ``"scalar"`` (private ``b``, ``x`` in the simplex) or ``"constraint"``.
        selection: ``"exponential"`` (classic) or ``"lazy"`` (fast, same law).
        index: exact oracle of the lazy selection (``"warm"``, ``"flat"``, ``"faiss:Flat"``).
        rounds: T per probe (default 200).
        width: public LP width (``max |A_ij - b_i|``; for ``"constraint"``
            ``max |z A_ij / (-c_j) - b_i|`` at the largest target ``z = -objective_range[0]``).
        rng: ``None`` for a release; an integer seed warns and marks the result seeded.
        accountant: the :class:`~fastmwem.accounting.Accountant` to charge.
        sensitivity: ``"scalar"``: the public bound on ``|b - b'|_inf``.
        density, entry_bound, max_constraints: ``"constraint"``: ``s``, the public bound on
            ``A_ub``'s entries, and the public bound on the number of rows.
        objective_range: public ``(lo, hi)`` holding the optimal ``c @ x`` (``"scalar"``:
            default ``(min c, max c)``; ``"constraint"``: required, ``hi <= 0``).
        probes: binary-search steps (``"scalar"``: 0 solves feasibility only).
        tolerance, beta: the tests' level (see above) and failure probability.
        composition: ``"advanced"``, ``"zcdp"`` or ``"basic"``.
        test_fraction: share of the budget spent on the tests.
        track: per-round diagnostics on the private data (not private; slow).

    Returns:
        An :class:`~fastmwem.lp.result.LPResult`.

    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> res = private_linprog([1.0, 2.0], A, [0.9, 0.9], epsilon=1.0, delta=1e-6,
    ...                       sensitivity=0.01, width=1.0, rounds=50, probes=0, rng=0)
    >>> res.x.shape, round(float(res.x.sum()), 9), res.privacy
    ((2,), 1.0, ApproxDP(epsilon=0.999..., delta=1e-06))
    """
    model = check_choice(privacy, "privacy", ("scalar", "constraint"))
    budget = _budget(epsilon, delta, composition, test_fraction)
    common = dict(width=width, rounds=rounds, selection=selection, index=index, probes=probes,
                  objective_range=objective_range, tolerance=tolerance, beta=beta, track=track,
                  rng=rng, accountant=accountant)
    if model == "scalar":
        _refuse(model, density=density, entry_bound=entry_bound, max_constraints=max_constraints)
        data = check_lp(c, A_ub, b_ub, A_lb, b_lb)
        return _scalar_linprog(data, budget, sensitivity=sensitivity, **common)
    _refuse(model, sensitivity=sensitivity)
    if A_lb is not None or b_lb is not None:
        raise ValueError("A_lb and b_lb do not apply to privacy='constraint', which takes packing "
                         "constraints A_ub @ x <= b_ub only")
    data = check_lp(c, A_ub, b_ub)
    return _dense_linprog(data, budget, density=density, entry_bound=entry_bound,
                          max_constraints=max_constraints, **common)
