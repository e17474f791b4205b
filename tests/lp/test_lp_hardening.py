"""Regression tests of the LP audit: no bits of b in x, no private values in messages, no timing
in released output, and an epsilon past the float range refused before any charge."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.lp import LPRound, WarmStartIndex, private_linprog, scalar_feasibility
from fastmwem.lp.scalar import objective_rows, run_primal
from tests.lp._problems import packing_lp, simplex_lp

SENS = 0.01
# A row and a right-hand side no rounding would treat alike: the shift b_i of the textbook loss
# then rounds differently for b_i and b_i + SENS.
DISTINCT = 0.376543


def _simplex(m: int = 60, d: int = 7, seed: int = 0):
    rng = np.random.default_rng(seed)
    A, b, _ = simplex_lp(rng, m, d)
    b = b + DISTINCT
    return rng.random(d), A, b


def _neighbour(b: np.ndarray, i: int) -> np.ndarray:
    out = b.copy()
    out[i] += SENS
    return out


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


# -- 1. the solution depends on b only through the selections -----------------------------------


def _replay(chosen: np.ndarray):
    """A selector replaying fixed choices: the same selections on both sides, by construction."""
    picks = iter(chosen)
    return lambda x, g: int(next(picks))


@pytest.mark.parametrize("target", [None, 0.45])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_selections_give_the_same_bits_on_neighbouring_b(target, dtype):
    c, A, b = _simplex()
    A = A.astype(dtype)
    chosen = np.random.default_rng(5).integers(0, A.shape[0] + (target is not None), size=300)
    for i in (int(chosen[0]), 3):
        results = []
        for rhs in (b, _neighbour(b, i)):
            rows = objective_rows(A, rhs, c if target is not None else None, target)
            x, _ = run_primal(rows, _replay(chosen), rounds=chosen.size, width=2.0,
                              generator=np.random.default_rng(0))
            results.append(x)
        assert _same_bits(*results)


SOLVERS = [("exponential", None), ("lazy", "warm"), ("lazy", "flat")]


def _on_neighbours(solve, b: np.ndarray):
    """``solve`` on ``b`` and on ``b`` with one row moved by SENS, from the same seed: the row
    selected most often by the run ``x`` comes from (a row never selected would show nothing)."""
    first = solve(b)
    accepted = [p.probe for p in first.probes if p.accepted]
    run = max(accepted) if accepted else 0  # the last accepted probe has the smallest target
    picks = np.bincount([r.selected for r in first.trace
                         if r.probe == run and r.selected < b.size], minlength=b.size)
    second = solve(_neighbour(b, int(np.argmax(picks))))
    # the premise: the same selections (and decisions) on both sides
    assert [r.selected for r in first.trace] == [r.selected for r in second.trace]
    assert [p.accepted for p in first.probes] == [p.accepted for p in second.probes]
    return first, second


@pytest.mark.parametrize("selection,index", SOLVERS)
def test_feasibility_output_is_bit_identical_for_neighbours_with_equal_selections(selection,
                                                                                  index):
    _, A, b = _simplex(m=80)
    first, second = _on_neighbours(lambda rhs: scalar_feasibility(
        A, rhs, epsilon=1.0, delta=1e-6, sensitivity=SENS, width=2.0, rounds=120,
        selection=selection, index=index, rng=np.random.default_rng(11)), b)
    assert _same_bits(first.x, second.x)


@pytest.mark.parametrize("selection,index", SOLVERS)
def test_objective_search_output_is_bit_identical_for_neighbours(selection, index):
    c, A, b = _simplex(m=80)
    first, second = _on_neighbours(lambda rhs: private_linprog(
        c, A, rhs, epsilon=1.0, delta=1e-6, sensitivity=SENS, width=2.5, rounds=60, probes=3,
        tolerance=0.05, selection=selection, index=index, rng=np.random.default_rng(13)), b)
    assert first.status == 0 and first.target is not None  # x is an accepted probe's
    assert _same_bits(first.x, second.x)


# -- 2. refusals name the public bound, never a private value -----------------------------------

M_ROWS = 12345


def _refused(call, match: str, secrets: tuple[str, ...], exc: type = ValueError) -> str:
    acc = Accountant(epsilon=100.0, delta=1e-3)
    generator = np.random.default_rng(1)
    state = generator.bit_generator.state
    with pytest.raises(exc, match=match) as info:
        call(acc, generator)
    message = str(info.value)
    for secret in secrets:
        assert secret not in message, f"{secret!r} leaked: {message}"
    assert acc.ledger == () and generator.bit_generator.state == state
    return message


def _scalar(A, b, c=None, **kw):
    args = dict(epsilon=1.0, delta=1e-6, sensitivity=SENS, width=2.0, rounds=20)
    args.update(kw)

    def call(acc, generator):
        if c is None:
            scalar_feasibility(A, b, accountant=acc, rng=generator, **args)
        else:
            private_linprog(c, A, b, accountant=acc, rng=generator, **args)
    return call


def test_width_refusal_does_not_quote_the_datas_width():
    A = np.zeros((5, 3))
    b = np.array([0.1, -DISTINCT, 0.2, 0.0, 0.3])  # observable width exactly 0.376543
    message = _refused(_scalar(A, b, width=0.25), "width", ("0.376543", "0.3765", "0.377"))
    assert "0.25" in message  # the public bound is named


def test_non_finite_entries_are_refused_without_position_or_value():
    A = np.full((M_ROWS, 3), 0.5)
    b = np.ones(M_ROWS)
    bad_a = A.copy()
    bad_a[M_ROWS - 2, 2] = np.nan
    _refused(_scalar(bad_a, b), "A_ub must be finite", (str(M_ROWS - 2), "nan]"))
    bad_b = b.copy()
    bad_b[9876] = -np.inf
    _refused(_scalar(A, bad_b), "b_ub must be finite", ("9876", "-inf"))
    bad_lb = b.copy()
    bad_lb[4321] = np.inf
    _refused(_scalar(A, b, A_lb=A, b_lb=bad_lb), "b_lb must be finite", ("4321",))


def test_shape_refusals_do_not_quote_the_row_count():
    A = np.full((M_ROWS, 3), 0.5)
    b = np.ones(M_ROWS)
    secrets = (str(M_ROWS), str(M_ROWS - 1), str(M_ROWS + 1))
    _refused(_scalar(A, b[:-1]), "b_ub", secrets)
    _refused(_scalar(A, b[:, None]), "b_ub", secrets)
    _refused(_scalar(A[:, :, None], b), "A_ub", secrets)
    ragged = [[0.5, 0.5, 0.5]] * (M_ROWS - 1) + [[0.5]]
    _refused(_scalar(ragged, b), "A_ub", secrets)
    _refused(_scalar(A, b, A_lb=A[:-1], b_lb=b), "b_lb", secrets)


def _dense(c, A, b, **kw):
    args = dict(neighbors="constraint", epsilon=1.0, delta=1e-6, density=4, entry_bound=1.0,
                max_constraints=2 * A.shape[0], width=50.0, objective_range=(-2.0, 0.0),
                rounds=20)
    args.update(kw)

    def call(acc, generator):
        private_linprog(c, A, b, accountant=acc, rng=generator, **args)
    return call


def test_constraint_privacy_refusals_name_only_the_public_bound():
    c, A, b, _ = packing_lp(np.random.default_rng(3), M_ROWS, 4)
    rows = (str(M_ROWS), f"{M_ROWS:,}")
    _refused(_dense(c, A, b, max_constraints=M_ROWS - 45), "max_constraints", rows)
    _refused(_dense(c, A, b, density=20000.0), "density", rows)
    high = A.copy()
    high[17, 2] = 1.876543
    _refused(_dense(c, high, b), "entry_bound", ("1.876543", "1.87654", "1.88"))
    low = A.copy()
    low[17, 2] = -DISTINCT
    _refused(_dense(c, low, b), "entry_bound", ("0.376543", "0.37654", "0.377"))
    negative = b.copy()
    negative[17] = -DISTINCT
    _refused(_dense(c, A, negative), "b_ub", ("0.376543", "0.37654", "0.377"))
    width = float(np.abs(2.0 * A / -c - b[:, None]).max())
    _refused(_dense(c, A, b, width=1.0), "width", (f"{width:.6g}", f"{width:.3g}"))


def test_warm_index_refuses_offsets_without_quoting_their_length():
    A = np.full((M_ROWS, 3), 0.5)
    with pytest.raises(ValueError, match="offsets") as info:
        WarmStartIndex(A, np.ones(M_ROWS - 1))
    assert str(M_ROWS) not in str(info.value) and str(M_ROWS - 1) not in str(info.value)


# -- 3. no timing in the released output --------------------------------------------------------


def _keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | set().union(*(_keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys(v) for v in obj))
    return set()


def _assert_no_timing(result) -> None:
    for record in (result.report(), result.report(evaluate=True)):
        json.dumps(record)
        keys = {k.lower() for k in _keys(record)}
        assert not {k for k in keys if "second" in k or "time" in k}, keys
    names = {f.name for f in dataclasses.fields(LPRound)}
    assert not {n for n in names if "second" in n or "time" in n}, names
    for r in result.trace:
        assert not any("second" in n or "time" in n for n in vars(r))


@pytest.mark.parametrize("selection,index", SOLVERS)
def test_scalar_result_releases_no_timing(selection, index):
    c, A, b = _simplex()
    _assert_no_timing(private_linprog(c, A, b, epsilon=1.0, delta=1e-6, sensitivity=SENS,
                                      width=2.5, rounds=20, probes=2, selection=selection,
                                      index=index, rng=np.random.default_rng(4)))


@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_constraint_result_releases_no_timing(selection):
    c, A, b, _ = packing_lp(np.random.default_rng(3), 50, 4)
    _assert_no_timing(private_linprog(
        c, A, b, neighbors="constraint", epsilon=1.0, delta=1e-6, density=4, entry_bound=1.0,
        max_constraints=50, width=60.0, objective_range=(-2.0, 0.0), rounds=20, probes=2,
        selection=selection, rng=np.random.default_rng(4)))


# -- 4. epsilon up to the public bound runs; past it, a refusal before any charge ---------------


def _max_epsilon() -> float:
    from fastmwem.lp import plan
    return plan.MAX_EPSILON


@pytest.mark.parametrize("composition", ["advanced", "zcdp", "basic"])
@pytest.mark.parametrize("epsilon", ["1e4", "bound"])
def test_large_epsilon_runs(composition, epsilon):
    eps = _max_epsilon() if epsilon == "bound" else float(epsilon)
    delta = 0.0 if composition == "basic" else 1e-6
    c, A, b = _simplex()
    for rounds, probes in ((3, 0), (40, 2), (5000, 0)):
        acc = Accountant(epsilon=eps, delta=delta)  # refuses a plan above the budget
        res = private_linprog(c, A, b, epsilon=eps, delta=delta, sensitivity=SENS, width=2.5,
                              rounds=rounds, probes=probes, composition=composition,
                              accountant=acc, rng=np.random.default_rng(6))
        assert np.isfinite(res.x).all() and abs(res.x.sum() - 1.0) < 1e-9
        assert res.nit == (probes + 1) * rounds and len(acc.ledger) > 0
    pc, pa, pb, _ = packing_lp(np.random.default_rng(3), 50, 4)
    acc = Accountant(epsilon=eps, delta=delta)
    res = private_linprog(pc, pa, pb, neighbors="constraint", epsilon=eps, delta=delta, density=4,
                          entry_bound=1.0, max_constraints=50, width=60.0,
                          objective_range=(-2.0, 0.0), rounds=20, probes=2,
                          composition=composition, accountant=acc, rng=np.random.default_rng(6))
    assert np.isfinite(res.x).all() and res.nit == 40 and len(acc.ledger) > 0


@pytest.mark.parametrize("composition", ["advanced", "zcdp", "basic"])
@pytest.mark.parametrize("epsilon", ["above the bound", 1e300, math.inf, math.nan])
def test_epsilon_past_the_bound_is_refused_before_any_charge(composition, epsilon):
    eps = math.nextafter(_max_epsilon(), math.inf) if isinstance(epsilon, str) else epsilon
    delta = 0.0 if composition == "basic" else 1e-6
    c, A, b = _simplex()
    kw = dict(epsilon=eps, delta=delta, composition=composition)
    match = "epsilon"
    _refused(_scalar(A, b, c=c, probes=2, **kw), match, ())
    _refused(_scalar(A, b, **kw), match, ())
    pc, pa, pb, _ = packing_lp(np.random.default_rng(3), 50, 4)
    _refused(_dense(pc, pa, pb, width=60.0, **kw), match, ())
    if math.isfinite(eps):
        message = _refused(_scalar(A, b, **kw), match, ())
        assert "at most" in message and "1,000,000" in message  # the bound, by name


@pytest.mark.parametrize("composition", ["advanced", "zcdp", "basic"])
def test_plan_privacy_runs_to_the_bound_and_refuses_past_it(composition):
    from fastmwem.lp import plan_privacy
    bound = _max_epsilon()
    delta = 0.0 if composition == "basic" else 1e-6
    cases = [(rounds, eps) for rounds in (1, 200, 2000) for eps in (1e4, bound)]
    if composition != "basic":  # advanced composition wins, with a share far past e^e0's range
        cases.append((100_000, 1e4))
    for rounds, eps in cases:
        plan = plan_privacy(eps, delta, em_rounds=rounds, tests=3, composition=composition)
        acc = Accountant(epsilon=eps, delta=delta)
        acc.compose_all(list(plan.events))  # the whole plan fits, never above it
        assert 0 < plan.epsilon0 <= eps
    for eps in (math.nextafter(bound, math.inf), 1e300):
        with pytest.raises(ValueError, match="at most"):
            plan_privacy(eps, delta, em_rounds=200, composition=composition)
