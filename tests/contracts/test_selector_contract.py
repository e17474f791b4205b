"""Contract every private selection mechanism (``Selector``) must meet.

To cover a new selector (the lazy exponential mechanism, joint top-k, ...), add one entry to
``SELECTORS``: an id, a factory ``(epsilon, sensitivity) -> selector`` and the privacy-event class
its ``.privacy`` must be.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BoundedRange, BudgetExceededError, PureDP
from fastmwem.mechanisms import ExponentialMechanism, PermuteAndFlip, Selector


class Entry(NamedTuple):
    name: str
    make: Callable[[float, float], object]
    event_type: type


SELECTORS = [
    Entry("exponential", lambda eps, sens: ExponentialMechanism(epsilon=eps, sensitivity=sens),
          BoundedRange),
    Entry("exponential-monotonic",
          lambda eps, sens: ExponentialMechanism(epsilon=eps, sensitivity=sens, monotonic=True),
          BoundedRange),
    Entry("permute-and-flip", lambda eps, sens: PermuteAndFlip(epsilon=eps, sensitivity=sens),
          PureDP),
    Entry("permute-and-flip-monotonic",
          lambda eps, sens: PermuteAndFlip(epsilon=eps, sensitivity=sens, monotonic=True), PureDP),
]

SCORES = [
    [0.0],
    [1.0, 2.0, 3.0],
    np.zeros(7),
    np.arange(50.0) * 0.1,
    (5, 1, 1, 1),  # a tuple of ints
    np.array([3, -2, 8], dtype=np.int32),
    np.array([1e300, -1e300, 0.0]),
]

pytestmark = pytest.mark.parametrize("entry", SELECTORS, ids=[e.name for e in SELECTORS])


def _state(acc: Accountant):
    return acc.spent(), acc.remaining(), acc.ledger


class RecordingAccountant(Accountant):
    """An accountant that counts how often it is charged."""

    def compose(self, event, *, label=""):
        self.calls = getattr(self, "calls", 0) + 1
        return super().compose(event, label=label)


def test_is_a_selector(entry):
    mech = entry.make(1.0, 1.0)
    assert isinstance(mech, Selector)
    assert dataclasses.is_dataclass(mech)


@pytest.mark.parametrize("scores", SCORES, ids=[f"s{i}" for i in range(len(SCORES))])
def test_returns_an_int_index_in_range(entry, scores):
    mech = entry.make(1.0, 1.0)
    for seed in range(5):
        i = mech.select(scores, rng=seed)
        assert type(i) is int
        assert 0 <= i < len(scores)


def test_is_frozen(entry):
    mech = entry.make(1.0, 1.0)
    for field in dataclasses.fields(mech):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(mech, field.name, getattr(mech, field.name))
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.epsilon = 100.0
    assert mech.epsilon == 1.0


@pytest.mark.parametrize("eps", [0.3, 1, 2.5, 1e-6])
def test_privacy_is_an_event_of_the_right_epsilon(entry, eps):
    mech = entry.make(eps, 2.0)
    event = mech.privacy
    assert isinstance(event, entry.event_type)
    expected = Fraction(repr(eps)) if isinstance(eps, float) else Fraction(eps)
    assert event.epsilon == expected
    assert mech.privacy == event  # stable


def test_charges_the_accountant_exactly_once(entry):
    mech = entry.make(0.25, 1.0)
    acc = RecordingAccountant(epsilon=1)
    mech.select([1.0, 2.0, 3.0], rng=0, accountant=acc)
    assert acc.calls == 1
    assert len(acc.ledger) == 1
    assert acc.ledger[0].event == mech.privacy
    assert acc.spent() == PureDP(0.25)
    for _ in range(3):
        mech.select([1.0, 2.0, 3.0], rng=0, accountant=acc)
    assert acc.spent() == PureDP(1)
    assert acc.calls == 4


def test_charges_in_zcdp_by_its_event(entry):
    mech = entry.make(0.5, 1.0)
    acc = Accountant(rho=1)
    mech.select([0.0, 1.0], rng=0, accountant=acc)
    assert acc.spent().rho == mech.privacy.zcdp_rho()


def test_refused_charge_raises_before_sampling(entry):
    mech = entry.make(0.5, 1.0)
    acc = Accountant(epsilon=1)
    acc.compose(PureDP(0.75), label="earlier")
    before = _state(acc)
    rng = np.random.default_rng(5)
    rng_state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        mech.select([1.0, 2.0, 3.0], rng=rng, accountant=acc)
    assert _state(acc) == before
    assert rng.bit_generator.state == rng_state  # no randomness was drawn


def test_no_accountant_means_no_charge_and_still_works(entry):
    assert entry.make(1.0, 1.0).select([0.0, 1.0], rng=1) in (0, 1)


def test_same_seed_same_output(entry):
    mech = entry.make(1.0, 1.0)
    scores = np.zeros(20)
    for seed in range(20):
        assert mech.select(scores, rng=seed) == mech.select(scores, rng=seed)
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    assert [mech.select(scores, rng=g1) for _ in range(30)] == \
        [mech.select(scores, rng=g2) for _ in range(30)]


def test_uses_its_randomness(entry):
    mech = entry.make(1.0, 1.0)
    outputs = {mech.select(np.zeros(10), rng=seed) for seed in range(60)}
    assert len(outputs) >= 5


def test_shared_generator_advances(entry):
    mech = entry.make(1.0, 1.0)
    g = np.random.default_rng(3)
    state = g.bit_generator.state
    mech.select(np.zeros(4), rng=g)
    assert g.bit_generator.state != state


@pytest.mark.parametrize("bad", [[], [np.nan], [np.inf, 1.0], [[1.0, 2.0]], None, ["a"]])
def test_invalid_scores_rejected(entry, bad):
    mech = entry.make(1.0, 1.0)
    acc = Accountant(epsilon=10)
    with pytest.raises((ValueError, TypeError), match="scores"):
        mech.select(bad, rng=0, accountant=acc)
    assert acc.spent() == PureDP(0)


def test_does_not_modify_scores(entry):
    scores = np.array([3.0, 1.0, 2.0])
    entry.make(1.0, 1.0).select(scores, rng=0)
    np.testing.assert_array_equal(scores, [3.0, 1.0, 2.0])


def test_prefers_higher_scores(entry):
    mech = entry.make(1.0, 1.0)
    picks = [mech.select([0.0, 40.0, 0.0], rng=s) for s in range(50)]
    assert picks.count(1) == 50
