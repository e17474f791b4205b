"""Exact-law tests of ExponentialMechanism and PermuteAndFlip.

Every test draws from the public ``select`` with a fixed seed and runs a Pearson chi-square test
against the mechanism's exact ``probabilities`` at ALPHA = 1e-4: the correct mechanism must give
p > ALPHA and a mis-calibrated one (epsilon x 2, the monotonic/non-monotonic bug, and epsilon x 1.1)
must give p < ALPHA. The exact laws themselves are checked against independent formulas
(softmax, brute-force enumeration of permutations).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import softmax

from fastmwem.mechanisms import ExponentialMechanism, PermuteAndFlip
from fastmwem.testing import chi_square_pvalue
from tests.mechanisms._sampling import select_counts

ALPHA = 1e-4
N_DEFAULT = 20_000  # ~0.5 s per vector per mechanism through the public select (~25 us/draw)
N_FULL = 200_000  # the slow tier's size
# Draws for the 2x-epsilon power checks: the chi-square noncentrality is ~60 at ~250 draws for
# every vector below, so 3,000 draws reject with a wide margin.
N_POWER = 3_000
# A 10% epsilon error needs ~6k-15k draws for a noncentrality of 60 on these vectors.
N_POWER_10PCT = 20_000

MECHANISMS = {"em": ExponentialMechanism, "pf": PermuteAndFlip}

# (name, scores, epsilon, sensitivity); each law is non-degenerate at its calibration.
SCORE_VECTORS = [
    ("uniform", np.zeros(8), 1.0, 1.0),
    ("one_dominant", np.array([0.0, 0.0, 0.0, 0.0, 5.0]), 1.0, 1.0),
    ("ramp", np.arange(10.0), 0.7, 1.0),
    ("range_1e6", np.linspace(0.0, 1e6, 10), 1e-5, 1.0),
    ("huge_positive", 1e300 * (1.0 + 1e-15 * np.arange(8.0)), 1.0, 1e285),
    ("huge_negative", -1e300 * (1.0 + 1e-15 * np.arange(8.0)), 2.0, 1e285),
    ("big_offset", 1e6 + np.array([0.0, 1.0, 3.0, 2.0, 0.5, 4.0]), 1.0, 1.0),
]
NON_UNIFORM = [v for v in SCORE_VECTORS if v[0] != "uniform"]
# The default tier samples these; the slow tier samples every vector at the full size.
DEFAULT_TIER = [v for v in SCORE_VECTORS
                if v[0] in ("uniform", "one_dominant", "range_1e6", "huge_positive")]


def _ids(vectors):
    return [v[0] for v in vectors]


def _exact_em_law(scores, eps, sens, monotonic=False):
    # Independent of the library: softmax of the (float) log-weights, in high precision where the
    # scores are huge (the shift by the maximum is exact there).
    s = np.asarray(scores, dtype=np.float64)
    scale = eps / (sens if monotonic else 2 * sens)
    return softmax((s - s.max()) * scale)


def _brute_force_pf(scores, eps, sens, monotonic=False):
    s = np.asarray(scores, dtype=np.float64)
    scale = eps / (sens if monotonic else 2 * sens)
    accept = np.exp((s - s.max()) * scale)
    n = s.size
    out = np.zeros(n)
    perms = list(itertools.permutations(range(n)))
    for perm in perms:
        survive = 1.0
        for i in perm:
            out[i] += survive * accept[i]
            survive *= 1.0 - accept[i]
    return out / len(perms)


# -- the exact laws themselves ---------------------------------------------------------------


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize(("name", "scores", "eps", "sens"), SCORE_VECTORS, ids=_ids(SCORE_VECTORS))
def test_em_probabilities_match_softmax(name, scores, eps, sens, monotonic):
    probs = ExponentialMechanism(epsilon=eps, sensitivity=sens, monotonic=monotonic).probabilities(scores)
    np.testing.assert_allclose(probs, _exact_em_law(scores, eps, sens, monotonic), rtol=1e-9,
                               atol=1e-300)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)


def test_em_monotonic_law_drops_the_factor_two():
    scores = np.array([0.0, 1.0, 2.0])
    mono = ExponentialMechanism(epsilon=1.0, monotonic=True).probabilities(scores)
    weights = np.exp(scores)  # exp(eps * s / sensitivity)
    np.testing.assert_allclose(mono, weights / weights.sum(), rtol=1e-12)
    plain = ExponentialMechanism(epsilon=1.0).probabilities(scores)
    weights = np.exp(scores / 2)
    np.testing.assert_allclose(plain, weights / weights.sum(), rtol=1e-12)
    # monotonic at eps is the same law as the non-monotonic mechanism at 2 eps.
    np.testing.assert_allclose(mono, ExponentialMechanism(epsilon=2.0).probabilities(scores))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("monotonic", [False, True])
def test_pf_probabilities_match_brute_force(seed, monotonic):
    rng = np.random.default_rng(seed)
    n = 1 + seed % 6
    scores = np.round(rng.normal(scale=3.0, size=n), 1)
    if seed % 4 == 0 and n > 1:
        scores[1] = scores[0]  # ties
    eps = float(rng.choice([0.1, 1.0, 3.0]))
    mech = PermuteAndFlip(epsilon=eps, sensitivity=1.0, monotonic=monotonic)
    np.testing.assert_allclose(mech.probabilities(scores),
                               _brute_force_pf(scores, eps, 1.0, monotonic), rtol=1e-10,
                               atol=1e-15)


def test_pf_probabilities_known_values():
    # Two candidates, accept probabilities 1 and a = e^-1/2: the loser wins only if visited first
    # and accepted, P = a / 2.
    a = math.exp(-0.5)
    probs = PermuteAndFlip(epsilon=1.0).probabilities([1.0, 0.0])
    np.testing.assert_allclose(probs, [1 - a / 2, a / 2])
    np.testing.assert_allclose(PermuteAndFlip(epsilon=1.0).probabilities([3.0, 3.0, 3.0]), [1 / 3] * 3)


# -- sampled law: correct calibration passes ---------------------------------------------------


def _law_pvalue(mech_cls, scores, eps, sens, n, seed, *, sample_eps=None, sample_monotonic=False):
    law = mech_cls(epsilon=eps, sensitivity=sens).probabilities(scores)
    sampler = mech_cls(epsilon=sample_eps or eps, sensitivity=sens, monotonic=sample_monotonic)
    counts = select_counts(sampler, scores, n, seed)
    return chi_square_pvalue(counts, law)


@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize(("name", "scores", "eps", "sens"), DEFAULT_TIER, ids=_ids(DEFAULT_TIER))
def test_select_follows_exact_law(kind, name, scores, eps, sens):
    p = _law_pvalue(MECHANISMS[kind], scores, eps, sens, N_DEFAULT, seed=1000 + len(name))
    assert p > ALPHA, f"{kind} on {name}: chi-square p = {p:.3g} <= alpha = {ALPHA}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize(("name", "scores", "eps", "sens"), SCORE_VECTORS, ids=_ids(SCORE_VECTORS))
def test_select_follows_exact_law_full_size(kind, name, scores, eps, sens):
    p = _law_pvalue(MECHANISMS[kind], scores, eps, sens, N_FULL, seed=2000 + len(name))
    assert p > ALPHA, f"{kind} on {name}: chi-square p = {p:.3g} <= alpha = {ALPHA}"


@pytest.mark.parametrize("kind", list(MECHANISMS))
def test_monotonic_select_follows_its_law(kind):
    cls = MECHANISMS[kind]
    scores = np.array([0.0, 1.0, 2.0, 0.5, 3.0])
    mech = cls(epsilon=0.8, sensitivity=1.0, monotonic=True)
    counts = select_counts(mech, scores, N_DEFAULT, seed=77)
    assert chi_square_pvalue(counts, mech.probabilities(scores)) > ALPHA
    # ... and is not the non-monotonic law (power).
    assert chi_square_pvalue(counts, cls(epsilon=0.8).probabilities(scores)) < ALPHA


# -- power: a wrong epsilon must be rejected -----------------------------------------------------


@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize(("name", "scores", "eps", "sens"), NON_UNIFORM, ids=_ids(NON_UNIFORM))
def test_monotonic_bug_is_rejected(kind, name, scores, eps, sens):
    # The factor-2 bug: monotonic constant on non-monotonic scores, i.e. really 2 eps.
    p = _law_pvalue(MECHANISMS[kind], scores, eps, sens, N_POWER, seed=3000 + len(name),
                    sample_monotonic=True)
    assert p < ALPHA, f"{kind} on {name}: the 2x-epsilon mechanism passed (p = {p:.3g})"


@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_double_or_half_epsilon_is_rejected(kind, factor):
    _, scores, eps, sens = SCORE_VECTORS[1]
    p = _law_pvalue(MECHANISMS[kind], scores, eps, sens, N_POWER, seed=11,
                    sample_eps=eps * factor)
    assert p < ALPHA


# On the uniform vector epsilon has no effect at all, so there is nothing to detect there.
DETECTABLE_10PCT = [v for v in NON_UNIFORM if v[0] in ("one_dominant", "range_1e6")]


@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize(("name", "scores", "eps", "sens"), DETECTABLE_10PCT,
                         ids=_ids(DETECTABLE_10PCT))
def test_ten_percent_epsilon_error_is_rejected(kind, name, scores, eps, sens):
    p = _law_pvalue(MECHANISMS[kind], scores, eps, sens, N_POWER_10PCT, seed=4000 + len(name),
                    sample_eps=eps * 1.1)
    assert p < ALPHA, f"{kind} on {name}: the 1.1x-epsilon mechanism passed (p = {p:.3g})"


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize(("name", "scores", "eps", "sens"), NON_UNIFORM, ids=_ids(NON_UNIFORM))
def test_ten_percent_epsilon_error_is_rejected_full_size(kind, name, scores, eps, sens):
    p = _law_pvalue(MECHANISMS[kind], scores, eps, sens, N_FULL, seed=5000 + len(name),
                    sample_eps=eps * 1.1)
    assert p < ALPHA, f"{kind} on {name}: the 1.1x-epsilon mechanism passed (p = {p:.3g})"
