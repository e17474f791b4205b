"""Numerical robustness of the selection mechanisms, with hypothesis.

Scores up to +-1e300, epsilon in [1e-6, 1e6] (and sensitivities far from 1): ``select`` returns a
valid index without any warning, the exact law is finite and sums to 1, it is invariant to adding
a constant and equivariant under permutations, ties are uniform, a huge epsilon picks the arg-max,
and on neighbouring score vectors the log-probability ratio never exceeds epsilon.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastmwem.mechanisms import ExponentialMechanism, PermuteAndFlip

MECHANISMS = [ExponentialMechanism, PermuteAndFlip]
PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The slow tier's size for property tests.
PROFILE_LONG = settings(max_examples=2000, deadline=None,
                        suppress_health_check=[HealthCheck.too_slow])


def property_test(**strategies):
    """``given(**strategies)`` at the default size, plus a ``<name>_long`` slow-tier twin."""

    def register(fn):
        globals()[fn.__name__ + "_long"] = pytest.mark.slow(PROFILE_LONG(given(**strategies)(fn)))
        return PROFILE(given(**strategies)(fn))

    return register

scores_st = st.lists(st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
                     min_size=1, max_size=40)
eps_st = st.floats(1e-6, 1e6)
sens_st = st.one_of(st.just(1.0), st.floats(1e-6, 1e6), st.floats(1e-300, 1e300))
mech_st = st.sampled_from(MECHANISMS)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning at all fails the test
        return fn(*args, **kwargs)


@property_test(cls=mech_st, scores=scores_st, eps=eps_st, sens=sens_st, mono=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_select_returns_a_valid_index_without_warnings(cls, scores, eps, sens, mono, seed):
    mech = cls(epsilon=eps, sensitivity=sens, monotonic=mono)
    i = _quiet(mech.select, scores, rng=seed)
    assert type(i) is int
    assert 0 <= i < len(scores)
    # The output always has positive probability under the exact law.
    if len(scores) <= 25:
        probs = _quiet(mech.probabilities, scores)
        assert probs[i] > 0 or np.isclose(probs.max(), 1.0)


@property_test(cls=mech_st, scores=st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=25),
       eps=eps_st, sens=sens_st)
def test_probabilities_finite_and_normalised(cls, scores, eps, sens):
    probs = _quiet(cls(epsilon=eps, sensitivity=sens).probabilities, scores)
    assert probs.shape == (len(scores),)
    assert np.all(np.isfinite(probs))
    assert np.all(probs >= 0)
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    # The best score has the largest probability.
    assert probs[int(np.argmax(scores))] == pytest.approx(probs.max(), rel=1e-9)


@property_test(cls=mech_st,
       mantissas=st.lists(st.integers(-(2**50), 2**50), min_size=1, max_size=25),
       shift=st.integers(-(2**50), 2**50), exponent=st.integers(-60, 940),
       eps=eps_st, sens=st.floats(1e-6, 1e6))
def test_law_is_shift_invariant(cls, mantissas, shift, exponent, eps, sens):
    # Scores on the lattice m * 2**e with |m| < 2**51: adding a lattice constant is exact, so the
    # law must not move at all, whatever the magnitude (up to ~1e298).
    unit = 2.0**exponent
    scores = np.array(mantissas, dtype=np.float64) * unit
    shifted = (np.array(mantissas, dtype=np.float64) + shift) * unit
    mech = cls(epsilon=eps, sensitivity=sens * unit)
    np.testing.assert_allclose(_quiet(mech.probabilities, shifted),
                               _quiet(mech.probabilities, scores), rtol=1e-12, atol=1e-300)


@property_test(cls=mech_st, scores=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=12),
       eps=st.floats(1e-3, 10.0), data=st.data())
def test_law_is_permutation_equivariant(cls, scores, eps, data):
    perm = data.draw(st.permutations(range(len(scores))))
    mech = cls(epsilon=eps)
    probs = mech.probabilities(scores)
    permuted = mech.probabilities(np.asarray(scores)[list(perm)])
    np.testing.assert_allclose(permuted, probs[list(perm)], rtol=1e-9, atol=1e-300)


@property_test(cls=mech_st, value=st.floats(-1e300, 1e300), n=st.integers(1, 40), eps=eps_st,
       sens=sens_st)
def test_ties_are_uniform(cls, value, n, eps, sens):
    probs = _quiet(cls(epsilon=eps, sensitivity=sens).probabilities, [value] * n)
    np.testing.assert_allclose(probs, np.full(n, 1.0 / n), rtol=1e-12)


@property_test(cls=mech_st, scores=st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=40,
                                    unique=True),
       seed=st.integers(0, 2**32 - 1), mono=st.booleans())
def test_huge_epsilon_returns_the_argmax(cls, scores, seed, mono):
    values = np.asarray(scores)
    gap = np.sort(values)[-1] - np.sort(values)[-2] if values.size > 1 else np.inf
    # eps * gap / (2 sensitivity) >= 1e3 makes every other candidate's weight < e^-1000 = 0.0.
    # (A subnormal gap times 1e-3 can round to 0, which is no sensitivity: keep it positive.)
    sens = 1.0 if gap >= 1e-2 else max(gap * 1e-3, math.ulp(0.0))
    mech = cls(epsilon=1e6, sensitivity=sens, monotonic=mono)
    assert _quiet(mech.select, values, rng=seed) == int(np.argmax(values))
    probs = mech.probabilities(values) if values.size <= 25 else None
    if probs is not None:
        assert probs[int(np.argmax(values))] == 1.0


@pytest.mark.parametrize("cls", MECHANISMS)
def test_infinite_scale_is_the_argmax_limit(cls):
    # epsilon / sensitivity overflows the float range: the limit law, not 0 * inf = nan.
    mech = cls(epsilon=1e6, sensitivity=1e-303)
    assert mech.scale == np.inf
    scores = [0.0, 1.0, 5.0, 2.0]
    for seed in range(20):
        assert _quiet(mech.select, scores, rng=seed) == 2
    np.testing.assert_array_equal(_quiet(mech.probabilities, scores), [0, 0, 1, 0])
    tied = [0.0, 5.0, 5.0]
    np.testing.assert_allclose(_quiet(mech.probabilities, tied), [0, 0.5, 0.5])
    assert {_quiet(mech.select, tied, rng=s) for s in range(40)} == {1, 2}


@pytest.mark.parametrize("cls", MECHANISMS)
def test_scores_spanning_the_whole_float_range(cls):
    # The gap 1.7e308 - (-1.7e308) overflows a plain subtraction.
    scores = [-1.7e308, 1.7e308, 0.0]
    mech = cls(epsilon=1e-306, sensitivity=1.0)  # scale 5e-307: the gap matters (weight e^-170)
    probs = _quiet(mech.probabilities, scores)
    assert np.all(np.isfinite(probs)) and probs.sum() == pytest.approx(1.0)
    assert 0 < probs[0] < 1e-70
    assert _quiet(mech.select, scores, rng=1) in (0, 1, 2)


def test_em_log_probabilities_are_consistent():
    mech = ExponentialMechanism(epsilon=3.0)
    scores = np.array([1e300, -1e300, 1e300 - 1e285])
    logp = _quiet(mech.log_probabilities, scores)
    assert logp[1] == pytest.approx(-3e300)
    np.testing.assert_allclose(np.exp(logp), mech.probabilities(scores))


@property_test(scores=st.lists(st.floats(-30.0, 30.0), min_size=1, max_size=8), eps=st.floats(1e-3, 5.0),
       data=st.data(), cls=mech_st, mono=st.booleans())
def test_log_ratio_on_neighbours_is_at_most_epsilon(scores, eps, data, cls, mono):
    n = len(scores)
    if mono:
        # Monotonic neighbours: every score moves the same way by at most the sensitivity.
        sign = data.draw(st.sampled_from([-1.0, 1.0]))
        delta = sign * np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    else:
        delta = np.array(data.draw(st.lists(st.floats(-1.0, 1.0), min_size=n, max_size=n)))
    mech = cls(epsilon=eps, sensitivity=1.0, monotonic=mono)
    p1 = mech.probabilities(scores)
    p2 = mech.probabilities(np.asarray(scores) + delta)
    assert np.all(p1 > 0) and np.all(p2 > 0)
    loss = np.max(np.abs(np.log(p1) - np.log(p2)))
    assert loss <= eps * (1 + 1e-9) + 1e-12


@property_test(cls=mech_st, scores=scores_st, seed=st.integers(0, 2**32 - 1))
def test_select_does_not_modify_its_input(cls, scores, seed):
    values = np.array(scores)
    copy = values.copy()
    cls(epsilon=1.0).select(values, rng=seed)
    np.testing.assert_array_equal(values, copy)


class _FixedCoins(np.random.Generator):
    """A generator whose uniform draws are all one fixed value (to hit the ends of [0, 1))."""

    def __init__(self, value: float) -> None:
        super().__init__(np.random.PCG64(0))
        self.value = value

    def random(self, size=None, dtype=np.float64, out=None):
        return np.full(size, self.value)


def test_pf_coin_at_zero_and_just_below_one():
    # A candidate accepts when its uniform coin falls in a set of probability p (its acceptance
    # probability). U = 0 is a legal draw and must not warn (no log(0)); at either end of [0, 1)
    # the answer is still a candidate with positive probability.
    mech = PermuteAndFlip(epsilon=1.0)
    scores = [0.0, 1.0, 2.0, 2.0 - 1e-9]
    seen = set()
    for value in (0.0, math.nextafter(1.0, 0.0)):
        for seed in range(10):
            g = _FixedCoins(value)
            g.bit_generator.state = np.random.PCG64(seed).state
            seen.add(_quiet(mech.select, scores, rng=g))
    assert seen <= {0, 1, 2, 3} and 2 in seen
