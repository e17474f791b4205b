"""The privacy plan of an LP solve (docs/lp.md, Test 9: accounting maximality)."""

from __future__ import annotations

import math

import pytest

from fastmwem.accounting import (
    Accountant,
    ApproxDP,
    BoundedRange,
    BudgetExceededError,
    PureDP,
    advanced_composition,
    approx_dp_to_zcdp_budget,
)
from fastmwem.lp import plan_privacy
from fastmwem.lp.plan import accountant_kind

CASES = [(1.0, 1e-6, 200, 0), (1.0, 1e-6, 1800, 8), (0.3, 1e-9, 50, 3), (5.0, 1e-5, 5, 0),
         (0.1, 0.01, 1000, 1), (2.0, 1e-6, 3, 2)]


@pytest.mark.parametrize("epsilon,delta,rounds,tests", CASES)
def test_advanced_epsilon0_is_maximal_and_never_above_the_target(epsilon, delta, rounds, tests):
    plan = plan_privacy(epsilon, delta, em_rounds=rounds, tests=tests, test_fraction=0.1)
    target = epsilon * (0.9 if tests else 1.0)
    basic = target / rounds
    if plan.composition == "advanced":
        composed, _ = advanced_composition(plan.epsilon0, rounds, delta)
        assert composed <= target
        # maximal up to the bisection's tolerance: a hair more would overspend
        assert advanced_composition(plan.epsilon0 * (1 + 1e-9), rounds, delta)[0] > target
        assert plan.epsilon0 >= basic
    else:  # basic composition won, which happens for few rounds
        assert plan.epsilon0 == pytest.approx(basic, rel=1e-12)
        assert advanced_composition(basic, rounds, delta)[0] > target


def test_advanced_beats_the_closed_form_default():
    plan = plan_privacy(1.0, 1e-6, em_rounds=200)
    closed_form = 1.0 / math.sqrt(8 * 200 * math.log(1e6))
    assert plan.composition == "advanced" and plan.epsilon0 > closed_form


@pytest.mark.parametrize("composition", ["advanced", "zcdp", "basic"])
@pytest.mark.parametrize("epsilon,delta,rounds,tests", CASES)
def test_every_plan_fits_a_fresh_accountant_exactly(composition, epsilon, delta, rounds, tests):
    for zcdp_accountant in (False, True):
        if zcdp_accountant and composition != "zcdp":
            continue
        acc = (Accountant(epsilon=epsilon, delta=delta, composition="zcdp") if zcdp_accountant
               else Accountant(epsilon=epsilon, delta=delta))
        plan = plan_privacy(epsilon, delta, em_rounds=rounds, tests=tests,
                            composition=composition, kind=accountant_kind(acc))
        acc.compose_all(list(plan.events))  # never refused for rounding
        assert len(acc.ledger) == len(plan.events)


def test_zcdp_rounds_use_the_whole_rho():
    plan = plan_privacy(1.0, 1e-6, em_rounds=200, composition="zcdp", kind="zcdp")
    rho = float(approx_dp_to_zcdp_budget(1.0, 1e-6))
    assert 200 * plan.epsilon0**2 / 8 == pytest.approx(rho, rel=1e-9)
    assert 200 * plan.epsilon0**2 / 8 <= rho
    assert all(isinstance(e, BoundedRange) for e, _ in plan.events)
    # in an (epsilon, delta) accountant the same plan is one converted event
    approx = plan_privacy(1.0, 1e-6, em_rounds=200, composition="zcdp", kind="approx")
    assert approx.epsilon0 == plan.epsilon0 and len(approx.events) == 1
    event = approx.events[0][0]
    assert isinstance(event, ApproxDP) and float(event.epsilon) <= 1.0


def test_tests_get_their_fraction():
    plan = plan_privacy(1.0, 0, em_rounds=100, tests=4, composition="basic", test_fraction=0.2)
    assert plan.epsilon_test == pytest.approx(0.05)
    assert plan.epsilon0 == pytest.approx(0.008)
    assert sum(isinstance(e, PureDP) for e, _ in plan.events) == 4


@pytest.mark.parametrize("composition,kind,match", [
    ("advanced", "pure", "pure DP"), ("zcdp", "pure", "pure DP"), ("advanced", "zcdp", "zCDP"),
    ("basic", "zcdp", "zCDP")])
def test_compositions_an_accountant_cannot_hold_are_refused(composition, kind, match):
    with pytest.raises(ValueError, match=match):
        plan_privacy(1.0, 1e-6, em_rounds=10, composition=composition, kind=kind)


def test_composition_needing_delta_is_refused_without_it():
    with pytest.raises(ValueError, match="delta > 0"):
        plan_privacy(1.0, 0, em_rounds=10, composition="advanced")


def test_a_plan_over_budget_is_refused_whole():
    acc = Accountant(epsilon=1.0, delta=1e-6)
    acc.compose(PureDP(0.5))
    plan = plan_privacy(1.0, 1e-6, em_rounds=100, tests=2)
    with pytest.raises(BudgetExceededError):
        acc.compose_all(list(plan.events))
    assert len(acc.ledger) == 1 and acc.spent() == ApproxDP(0.5, 0)
