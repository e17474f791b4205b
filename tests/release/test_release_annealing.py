"""The annealing schedule of adaptive runs: it never overspends and ends on the budget exactly.

Property tests (hypothesis, derandomized by the project's profile) drive the schedule with
arbitrary budgets, splits, starting rounds and anneal decisions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastmwem.accounting import ZCDP, BoundedRange, BudgetExceededError, PureDP
from fastmwem.release.mwem.annealing import Annealing, should_anneal, split_round

budgets = st.fractions(min_value=Fraction(1, 10**6), max_value=Fraction(50))
fractions = st.fractions(min_value=Fraction(1, 100), max_value=Fraction(99, 100))


def _events(privacy: str, select: float, measure: float) -> list:
    measured = PureDP(Fraction(measure)) if privacy == "pure" else ZCDP(Fraction(measure))
    return [(BoundedRange(Fraction(select)), "select"), (measured, "measure")]


def _cost(privacy: str, select: float, measure: float) -> Fraction:
    s = Fraction(select)
    return (s if privacy == "pure" else s * s / 8) + Fraction(measure)


@given(st.sampled_from(["pure", "zcdp"]), budgets, fractions, st.integers(1, 400),
       st.lists(st.booleans(), min_size=1, max_size=400))
def test_schedule_never_overspends_and_spends_the_budget(privacy, budget, fraction, initial,
                                                         anneals):
    schedule = Annealing(privacy, budget, fraction, initial)
    spent = Fraction(0)
    for t in range(10_000):
        step = schedule.next_round()
        assert step.select > 0 and step.measure > 0
        schedule.charge(_events(privacy, step.select, step.measure))  # refuses any overspend
        spent += _cost(privacy, step.select, step.measure)
        assert spent <= budget
        if step.last:
            break
        if anneals[t % len(anneals)]:
            schedule.anneal()
    else:  # pragma: no cover - the schedule must end
        pytest.fail("the schedule did not end")
    assert t + 1 <= initial + 1  # every round costs at least the first one's share
    assert budget - spent < budget * Fraction(1, 10**9)  # the last round took what was left


@given(st.sampled_from(["pure", "zcdp"]), budgets, fractions)
def test_split_never_exceeds_its_amount(privacy, amount, fraction):
    select, measure = split_round(privacy, amount, fraction)
    assert _cost(privacy, select, measure) <= amount


def test_anneal_halves_the_noise_scale():
    pure = Annealing("pure", Fraction(1), Fraction(1, 2), 100)
    before = pure.current()
    pure.anneal()
    assert pure.current()[1] == pytest.approx(2 * before[1])  # epsilon doubles
    zcdp = Annealing("zcdp", Fraction(1), Fraction(1, 10), 100)
    select, rho = zcdp.current()
    zcdp.anneal()
    assert zcdp.current()[1] == pytest.approx(4 * rho)  # sigma halves
    assert zcdp.current()[0] == pytest.approx(2 * select)


def test_a_refused_charge_spends_nothing():
    schedule = Annealing("zcdp", Fraction(1, 100), Fraction(1, 10), 4)
    with pytest.raises(BudgetExceededError):
        schedule.charge([(ZCDP(Fraction(1, 200)), "fits"), (ZCDP(Fraction(1, 100)), "does not")])
    assert schedule.remaining() == Fraction(1, 100)
    assert schedule.accountant.ledger == ()


def test_last_round_is_asked_for():
    schedule = Annealing("pure", Fraction(1), Fraction(1, 2), 10)
    step = schedule.next_round(last=True)
    assert step.last
    assert Fraction(step.select) + Fraction(step.measure) == pytest.approx(Fraction(1))


def test_should_anneal_compares_movement_with_expected_noise():
    before = np.array([10.0, 20.0])
    assert should_anneal(before, before + [1.0, -1.0], 2.0)
    assert not should_anneal(before, before + [1.5, -1.0], 2.0)
