"""LazyExponentialMechanism: calibration, privacy records, charging, modes and bad input.

The law itself is tested in test_mechanisms_lazy_law.py. Every bad-input case must raise a
ValueError or TypeError naming the argument before any randomness is drawn or budget charged.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BoundedRange, BudgetExceededError, PureDP
from fastmwem.indices import BitPackedIndex, FlatIndex, make_index
from fastmwem.mechanisms import ExponentialMechanism, LazyExponentialMechanism, Uncertified
from fastmwem.mechanisms.lazy import UncertifiedOracleWarning, _merged_top


def _index(keys):
    index = FlatIndex()
    index.add(keys)
    return index


class _Approximate:
    """An oracle that claims no exactness; ``certified_gap`` as given."""

    exact = False

    def __init__(self, keys, gap=None):
        self.inner = _index(keys)
        self.certified_gap = gap
        self.n_keys, self.dimension = self.inner.n_keys, self.inner.dimension

    def search(self, queries, k):
        return self.inner.search(queries, k)

    def score(self, ids, query):
        return self.inner.score(ids, query)


KEYS = np.random.default_rng(0).normal(size=(30, 4))


def test_is_a_frozen_dataclass_with_keyword_calibration():
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=1.0)
    assert dataclasses.is_dataclass(mech)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.epsilon = 2.0
    with pytest.raises(TypeError):
        LazyExponentialMechanism(_index(KEYS), 1.0)  # epsilon is keyword-only


@pytest.mark.parametrize("monotonic", [False, True])
def test_scale_matches_the_exponential_mechanism(monotonic):
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=0.7, sensitivity=0.3, monotonic=monotonic)
    em = ExponentialMechanism(epsilon=0.7, sensitivity=0.3, monotonic=monotonic)
    assert mech.scale == em.scale
    v = np.arange(4.0)
    np.testing.assert_allclose(mech.probabilities(v), em.probabilities(KEYS @ v), rtol=1e-12)


def test_privacy_of_an_exact_oracle():
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=0.25)
    assert mech.privacy == BoundedRange(0.25)
    assert mech.exact_guarantee and mech.gap == 0.0


def test_privacy_of_a_certified_oracle_in_both_modes():
    oracle = _Approximate(KEYS, gap=0.25)
    keep = LazyExponentialMechanism(oracle, epsilon=1.0, sensitivity=0.5)
    assert keep.privacy == BoundedRange(1) and keep.gap == pytest.approx(0.25)
    fast = LazyExponentialMechanism(oracle, epsilon=1.0, sensitivity=0.5, approximate="runtime")
    # epsilon + 2c with c = gap * epsilon / (2 * sensitivity) = 0.25, exactly
    assert fast.privacy == PureDP(Fraction(3, 2))
    assert fast.exact_guarantee


def test_uncertified_oracle_needs_an_opt_in():
    oracle = _Approximate(KEYS)
    with pytest.raises(ValueError, match="allow_uncertified"):
        LazyExponentialMechanism(oracle, epsilon=1.0)
    with pytest.warns(UncertifiedOracleWarning, match="NO differential-privacy guarantee"):
        mech = LazyExponentialMechanism(oracle, epsilon=1.0, allow_uncertified=True)
    assert not mech.exact_guarantee and mech.gap is None
    event = mech.privacy
    assert isinstance(event, Uncertified) and event.exact_guarantee is False
    assert "NO privacy guarantee" in repr(event)
    acc = Accountant(epsilon=2)
    assert mech.select(np.ones(4), rng=0, accountant=acc) in range(30)
    record = acc.ledger_records()[0]
    assert "NO privacy guarantee" in record["event"] and record["epsilon"] == 1.0


def test_uncertified_ann_index_needs_an_opt_in():
    pytest.importorskip("hnswlib")
    index = make_index("hnswlib", KEYS, progress=False)
    with pytest.raises(ValueError, match="allow_uncertified"):
        LazyExponentialMechanism(index, epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedOracleWarning)
        mech = LazyExponentialMechanism(index, epsilon=1.0, allow_uncertified=True)
    assert isinstance(mech.privacy, Uncertified)


def test_charges_once_and_a_refused_charge_draws_nothing():
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=0.5)
    acc = Accountant(epsilon=1)
    mech.select(np.ones(4), rng=0, accountant=acc)
    assert len(acc.ledger) == 1 and acc.spent() == PureDP(0.5)
    acc.compose(PureDP(0.25))
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        mech.select(np.ones(4), rng=rng, accountant=acc)
    assert rng.bit_generator.state == state and acc.spent() == PureDP(0.75)


def test_same_seed_same_output_and_randomness_is_used():
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=1.0, k=3)
    v = np.zeros(4)
    assert [mech.select(v, rng=s) for s in range(20)] == [mech.select(v, rng=s) for s in range(20)]
    assert len({mech.select(v, rng=s) for s in range(100)}) >= 15


def test_exclusions_are_never_selected_and_the_top_goes_when_excluded():
    keys = np.eye(5)
    mech = LazyExponentialMechanism(_index(keys), epsilon=1.0, k=2)
    v = np.array([0.0, 0.0, 100.0, 0.0, 0.0])
    assert {mech.select(v, rng=s) for s in range(20)} == {2}
    picks = {mech.select(v, rng=s, exclude=[2, 0]) for s in range(200)}
    assert picks == {1, 3, 4}
    stats = mech.select_with_stats(v, rng=0, exclude=[2])
    assert stats.n_candidates == 4 and stats.k == 2


def test_complement_ids_name_the_sign():
    keys = np.eye(3)
    mech = LazyExponentialMechanism(_index(keys), epsilon=1.0, complement=True)
    assert mech.n_candidates == 6
    assert mech.select(np.array([0.0, 50.0, 0.0]), rng=0) == 1
    assert mech.select(np.array([0.0, -50.0, 0.0]), rng=0) == 4  # the negation of key 1
    absolute = LazyExponentialMechanism(_index(keys), epsilon=1.0, absolute=True)
    assert absolute.select(np.array([0.0, -50.0, 0.0]), rng=0) == 1


def test_small_candidate_sets_and_large_k():
    one = LazyExponentialMechanism(_index(np.ones((1, 2))), epsilon=1.0)
    assert one.select([1.0, 2.0], rng=0) == 0
    big_k = LazyExponentialMechanism(_index(KEYS), epsilon=1.0, k=1000)
    stats = big_k.select_with_stats(np.ones(4), rng=0)
    assert stats.k == 30 and stats.n_tail == 0


def test_extreme_scores_and_epsilon_do_not_break():
    keys = np.eye(3)
    mech = LazyExponentialMechanism(_index(keys), epsilon=1e300, sensitivity=1e-300, k=1)
    assert mech.select([1e300, -1e300, 0.0], rng=0) == 0
    flat = LazyExponentialMechanism(_index(keys), epsilon=1.0, k=1)
    assert flat.select([1e-300, 0.0, 0.0], rng=0) in (0, 1, 2)


def test_bitpacked_and_flat_agree_seed_for_seed():
    rng = np.random.default_rng(2)
    keys = (rng.random((200, 20)) < 0.5).astype(np.float64)
    packed = BitPackedIndex(20)
    packed.add(keys)
    a = LazyExponentialMechanism(_index(keys), epsilon=1.0, sensitivity=0.01, complement=True)
    b = LazyExponentialMechanism(packed, epsilon=1.0, sensitivity=0.01, complement=True)
    v = rng.dirichlet(np.ones(20)) - rng.dirichlet(np.ones(20))
    same = sum(a.select(v, rng=s) == b.select(v, rng=s) for s in range(50))
    assert same >= 48  # equal top sets; last-bit score differences may rarely flip a draw


def test_signed_top_from_search_abs_equals_the_general_merge():
    # With search_abs, no exclusion and k <= m, the top of the 2m signed candidates is each
    # key's better side: the general merge of both signs of the same keys, ties by id included.
    rng = np.random.default_rng(9)
    keys = rng.integers(0, 2, size=(300, 6)).astype(np.float64)
    mech = LazyExponentialMechanism(_index(keys), epsilon=1.0, complement=True)
    empty = np.empty(0, dtype=np.int64)
    queries = [rng.normal(size=6), rng.integers(-2, 3, size=6).astype(np.float64),  # ties
               np.array([1.0, -1.0, 0.0, 0.0, 2.0, -2.0]),  # zeros and mixed-sign ties
               np.zeros(6), -np.zeros(6)]
    for v in queries:
        for k in (1, 7, 18, 150, 300):
            ids, scores = mech._top(v, k, empty)
            want_ids, want_scores = _merged_top(*mech._retrieve(v, k), k, empty, mech.oracle)
            np.testing.assert_array_equal(ids, want_ids)
            np.testing.assert_array_equal(scores, want_scores)
            assert np.array_equal(np.signbit(scores), np.signbit(want_scores))


# -- bad input -------------------------------------------------------------------------------------

def _untouched(fn, exc, match):
    acc = Accountant(epsilon=10)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(exc, match=match):
        fn(acc, rng)
    assert acc.spent() == PureDP(0) and rng.bit_generator.state == state


@pytest.mark.parametrize(("query", "exc"), [
    (np.ones(5), ValueError), (np.ones(3), ValueError), ([1.0, np.nan, 0.0, 0.0], ValueError),
    ([1.0, np.inf, 0.0, 0.0], ValueError), (np.ones((1, 4)), ValueError), ("abcd", TypeError),
    (None, TypeError), ([], ValueError),
], ids=["long", "short", "nan", "inf", "2-D", "str", "none", "empty"])
def test_bad_query_vector(query, exc):
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=1.0)
    _untouched(lambda acc, rng: mech.select(query, rng=rng, accountant=acc), exc, "query_vector")


@pytest.mark.parametrize(("exclude", "exc", "match"), [
    ([30], ValueError, "exclude"), ([-1], ValueError, "exclude"), ([0.5], TypeError, "exclude"),
    ([[1, 2]], ValueError, "exclude"), (list(range(30)), ValueError, "every candidate"),
    ("1", TypeError, "exclude"), ([True], TypeError, "exclude"),
])
def test_bad_exclude(exclude, exc, match):
    mech = LazyExponentialMechanism(_index(KEYS), epsilon=1.0)
    _untouched(lambda acc, rng: mech.select(np.ones(4), rng=rng, exclude=exclude,
                                            accountant=acc), exc, match)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"k": 0}, ValueError, "k"), ({"k": -3}, ValueError, "k"), ({"k": 2.5}, TypeError, "k"),
    ({"k": True}, TypeError, "k"), ({"epsilon": 0}, ValueError, "epsilon"),
    ({"epsilon": math.nan}, ValueError, "epsilon"), ({"epsilon": "1"}, TypeError, "epsilon"),
    ({"sensitivity": -1}, ValueError, "sensitivity"),
    ({"sensitivity": math.inf}, ValueError, "sensitivity"),
    ({"absolute": True, "complement": True}, ValueError, "absolute"),
    ({"monotonic": True, "complement": True}, ValueError, "monotonic"),
    ({"monotonic": True, "absolute": True}, ValueError, "monotonic"),
    ({"absolute": 1}, TypeError, "absolute"), ({"approximate": "fast"}, ValueError, "approximate"),
    ({"allow_uncertified": "yes"}, TypeError, "allow_uncertified"),
])
def test_bad_calibration(kwargs, exc, match):
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises(exc, match=match):
        LazyExponentialMechanism(_index(KEYS), **args)


def test_not_an_oracle():
    with pytest.raises(TypeError, match="oracle"):
        LazyExponentialMechanism(np.eye(3), epsilon=1.0)
    with pytest.raises(ValueError, match="certified_gap"):
        LazyExponentialMechanism(_Approximate(KEYS, gap=-1.0), epsilon=1.0)


def test_empty_index_is_refused_before_charging():
    mech = LazyExponentialMechanism(FlatIndex(4), epsilon=1.0)
    _untouched(lambda acc, rng: mech.select(np.ones(4), rng=rng, accountant=acc), ValueError,
               "no keys")
