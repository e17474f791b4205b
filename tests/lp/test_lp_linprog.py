"""private_linprog and the feasibility solvers: results, accounting, seeds, the HiGHS reference."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.optimize import linprog

import fastmwem
from fastmwem.accounting import ZCDP, Accountant, ApproxDP, BudgetExceededError, PureDP
from fastmwem.lp import dense_feasibility, private_linprog, scalar_feasibility
from fastmwem.mechanisms.seeding import CallerRNGWarning, SeededRunWarning
from fastmwem.random import secure_rng
from tests.lp._problems import packing_lp, simplex_lp


@pytest.fixture(scope="module")
def simplex():
    rng = np.random.default_rng(0)
    A, b, _ = simplex_lp(rng, 300, 10)
    return rng.random(10), A, b


@pytest.fixture(scope="module")
def packing():
    return packing_lp(np.random.default_rng(1), 300, 10)


def _scalar_kw(**extra):
    kw = dict(epsilon=5.0, delta=1e-6, sensitivity=1e-4, width=2.0, rounds=200)
    kw.update(extra)
    return kw


def _dense_kw(A, b, c, lo, **extra):
    width = 1.01 * float(np.abs(-lo * A / -c - b[:, None]).max())
    kw = dict(neighbors="constraint", epsilon=20.0, delta=1e-6, density=10, entry_bound=1.0,
              max_constraints=A.shape[0], width=width, objective_range=(lo, 0.0), rounds=200,
              tolerance=0.02)
    kw.update(extra)
    return kw


def test_exported_from_the_package_root():
    assert fastmwem.private_linprog is private_linprog


@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_scalar_result_record(simplex, selection):
    c, A, b = simplex
    res = private_linprog(c, A, b, selection=selection, rng=np.random.default_rng(2),
                          tolerance=0.05, **_scalar_kw())
    assert res.x.shape == (10,) and abs(res.x.sum() - 1) < 1e-12 and res.x.min() >= 0
    assert res.fun == res.objective == pytest.approx(float(c @ res.x))
    v = A @ res.x - b
    assert res.violated_fraction == pytest.approx(np.mean(v > 0))
    assert res.max_violation == pytest.approx(max(0.0, v.max()))
    assert res.nit == len(res.trace) == 9 * 200 and len(res.probes) == 8
    assert [r.probe for r in res.trace[::200]] == list(range(9))
    assert res.setup["neighbors"] == "scalar" and res.setup["selection"] == selection
    # one advanced-composition event for the rounds and one per test
    assert len(res.ledger) == 9 and isinstance(res.privacy, ApproxDP)
    assert float(res.privacy.epsilon) <= 5.0 and float(res.privacy.delta) <= 1e-6
    assert not res.seeded and res.success and res.target is not None
    assert c @ res.x <= res.target + 0.1  # the accepted target holds up to the violation


def test_scalar_matches_the_highs_optimum_at_a_large_budget(simplex):
    """HiGHS (scipy.optimize.linprog) is the reference line: never used by the solver."""
    c, A, b = simplex
    d = A.shape[1]
    ref = linprog(c, A_ub=A, b_ub=b, A_eq=np.ones((1, d)), b_eq=[1], bounds=(0, None))
    res = private_linprog(c, A, b, rng=np.random.default_rng(3), tolerance=0.01,
                          composition="zcdp", **_scalar_kw(epsilon=20.0, rounds=1000))
    assert res.status == 0
    assert abs(res.objective - ref.fun) < 0.02
    assert res.max_violation < 0.03


def test_constraint_result_and_highs_reference(packing):
    c, A, b, _ = packing
    ref = linprog(c, A_ub=A, b_ub=b, bounds=(0, None))
    lo = 2 * ref.fun
    res = private_linprog(c, A, b, rng=np.random.default_rng(4), composition="zcdp",
                          **_dense_kw(A, b, c, lo))
    assert res.x.min() >= 0 and res.setup["neighbors"] == "constraint"
    assert res.status == 0 and res.objective == pytest.approx(res.target)
    # a good share of the optimum, with only a few rows violated beyond the tolerance
    assert ref.fun * 0.5 > res.objective > ref.fun * 1.2
    assert np.count_nonzero(A @ res.x - b > 0.05) <= 30
    assert isinstance(res.privacy, ZCDP) and len(res.ledger) == 8 * 200 + 8


def test_constraint_fallback_is_x_zero_when_no_target_is_accepted(packing):
    c, A, b, _ = packing
    res = private_linprog(c, A, b, rng=np.random.default_rng(5),
                          **_dense_kw(A, b, c, -50.0, tolerance=-1.0, probes=2, rounds=20))
    assert res.status == 2 and not res.success and res.target is None
    np.testing.assert_array_equal(res.x, np.zeros(10))
    assert "no target accepted" in res.message


def test_feasibility_solvers(simplex, packing):
    c, A, b = simplex
    res = scalar_feasibility(A, b, rng=np.random.default_rng(6), **_scalar_kw())
    assert res.objective is None and res.target is None and res.nit == 200
    assert res.max_violation < 0.1
    assert res.privacy == ApproxDP(res.ledger[0].event.epsilon, 1e-6)
    c2, A2, b2, xstar = packing
    target = float(c2 @ xstar)
    width = 1.01 * float(np.abs(-target * A2 / -c2 - b2[:, None]).max())
    res2 = dense_feasibility(c2, A2, b2, target=target, epsilon=20.0, delta=1e-6, density=10,
                             entry_bound=1.0, max_constraints=300, width=width, rounds=100,
                             selection="lazy", rng=np.random.default_rng(7))
    assert res2.objective == pytest.approx(target) and res2.nit == 100


def test_probes_zero_solves_feasibility(simplex):
    c, A, b = simplex
    res = private_linprog(c, A, b, probes=0, rng=np.random.default_rng(8), **_scalar_kw())
    assert res.probes == () and res.target is None and res.nit == 200
    assert res.objective == pytest.approx(c @ res.x)


def test_an_integer_seed_warns_and_marks_the_result(simplex):
    c, A, b = simplex
    with pytest.warns(SeededRunWarning):
        res = private_linprog(c, A, b, probes=0, rng=987654321, **_scalar_kw())
    assert res.seeded
    report = res.report()
    assert report["private"] is False and report["not_private_because"] == ["seeded"]
    assert "987654321" not in json.dumps(report)  # the seed is never recorded
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededRunWarning)
        private_linprog(c, A, b, probes=0, rng=np.random.default_rng(3), **_scalar_kw())


def test_only_os_randomness_is_private(simplex):
    c, A, b = simplex
    with pytest.warns(CallerRNGWarning) as record:
        res = private_linprog(c, A, b, probes=0, rng=np.random.default_rng(3), **_scalar_kw())
    assert len(record) == 1 and record[0].filename == __file__
    assert not res.seeded and res.rng_provenance == ("caller_rng",)
    report = res.report()
    assert report["private"] is False and report["not_private_because"] == ["caller_rng"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", Warning)
        for rng in (None, secure_rng()):
            res = private_linprog(c, A, b, probes=0, rng=rng, **_scalar_kw())
            assert res.report()["private"] is True and res.report()["not_private_because"] == []


def test_report_leaves_diagnostics_out_unless_evaluated(simplex):
    c, A, b = simplex
    res = private_linprog(c, A, b, probes=1, track=True, rng=np.random.default_rng(9),
                          **_scalar_kw(rounds=20))
    plain = res.report()
    assert plain["private"] is False and plain["not_private_because"] == ["caller_rng"]
    assert "violated_fraction" not in plain and "rounds_diagnostics" not in plain
    assert set(plain["rounds"][0]) == {"probe", "round", "selected"}
    full = res.report(evaluate=True)
    assert full["private"] is False and full["not_private_because"] == ["caller_rng", "evaluated"]
    assert full["violated_fraction"] == res.violated_fraction
    assert all(r["max_violation"] is not None for r in full["rounds_diagnostics"])
    untracked = private_linprog(c, A, b, probes=0, rng=np.random.default_rng(9),
                                **_scalar_kw(rounds=5))
    assert all(r.violated_fraction is None for r in untracked.trace)


def test_the_plan_is_charged_to_the_given_accountant(simplex):
    c, A, b = simplex
    acc = Accountant(epsilon=10.0, delta=1e-5)
    acc.compose(PureDP(1.0), label="earlier")
    res = private_linprog(c, A, b, accountant=acc, probes=2, rng=np.random.default_rng(10),
                          **_scalar_kw())
    assert len(acc.ledger) == 1 + len(res.ledger) and acc.ledger[0].label == "earlier"
    assert acc.spent() == ApproxDP(1 + res.privacy.epsilon, res.privacy.delta)
    zacc = Accountant(epsilon=10.0, delta=1e-5, composition="zcdp")
    res = private_linprog(c, A, b, accountant=zacc, probes=2, composition="zcdp",
                          rng=np.random.default_rng(10), **_scalar_kw())
    assert isinstance(res.privacy, ZCDP) and zacc.spent() == res.privacy
    pure = Accountant(epsilon=5.0)
    res = private_linprog(c, A, b, accountant=pure, probes=0, composition="basic", delta=0,
                          **{k: v for k, v in _scalar_kw().items() if k != "delta"},
                          rng=np.random.default_rng(10))
    assert res.privacy == PureDP(res.privacy.epsilon) and float(res.privacy.epsilon) <= 5.0


def test_a_refused_charge_spends_nothing_and_draws_nothing(simplex):
    c, A, b = simplex
    acc = Accountant(epsilon=1.0, delta=1e-6)
    generator = np.random.default_rng(11)
    state = generator.bit_generator.state
    with pytest.raises(BudgetExceededError):
        private_linprog(c, A, b, accountant=acc, rng=generator, **_scalar_kw(epsilon=2.0))
    assert acc.ledger == () and generator.bit_generator.state == state


def test_lazy_and_classic_agree_within_noise(simplex):
    """Same law each round, so the violation of the average iterate agrees within noise."""
    c, A, b = simplex
    out = {}
    for selection in ("exponential", "lazy"):
        runs = [scalar_feasibility(A, b, selection=selection, rng=np.random.default_rng(s),
                                   **_scalar_kw(rounds=100)).max_violation for s in range(6)]
        out[selection] = np.mean(runs)
    assert abs(out["exponential"] - out["lazy"]) < 0.01
