"""Exact-law tests of LazyExponentialMechanism against the exponential mechanism's softmax.

Every law test runs a Pearson chi-square test at ALPHA = 1e-4 against ``softmax(scale * scores)``
computed here by brute force (independently of the mechanism), over all N candidates with the
excluded ones at probability 0. The draws reuse one top-k search per query vector and call the
sampler many times; ``test_select_is_search_then_draw`` shows that this is exactly what ``select``
does, seed for seed. Power checks: a sampler whose tail Gumbels are not truncated, a doubled
epsilon, and the runtime-preserving mode over a genuinely approximate top-k set must all fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from fastmwem.indices import BitPackedIndex, FlatIndex
from fastmwem.mechanisms import ExponentialMechanism, LazyExponentialMechanism
from fastmwem.mechanisms import lazy as lazy_module
from fastmwem.testing import chi_square_pvalue

ALPHA = 1e-4
N_DEFAULT = 10_000
N_FULL = 200_000


def _flat(keys):
    index = FlatIndex()
    index.add(keys)
    return index


def _brute_scores(keys, v, absolute=False, complement=False):
    s = keys @ v
    if complement:
        return np.concatenate([s, -s])
    return np.abs(s) if absolute else s


def _exact_law(mech, keys, v, exclude=()):
    s = _brute_scores(keys, v, mech.absolute, mech.complement)
    logits = (s - s.max()) * mech.scale
    logits[list(exclude)] = -np.inf
    return softmax(logits)


def lazy_draws(mech, v, n_draws, seed, exclude=None):
    """(counts over the N candidates, tail counts) of ``n_draws`` draws for one query vector."""
    v, excluded = mech._checked(v, exclude)
    k = mech._k_for(mech.n_candidates, excluded.size)
    top_ids, top_scores = mech._top(v, k, excluded)
    rng = np.random.default_rng(seed)
    stats = [mech._draw(v, top_ids, top_scores, excluded, rng) for _ in range(n_draws)]
    idx = np.fromiter((s.index for s in stats), dtype=np.int64, count=n_draws)
    tails = np.fromiter((s.n_tail for s in stats), dtype=np.int64, count=n_draws)
    return np.bincount(idx, minlength=mech.n_candidates), tails


# -- the cases ---------------------------------------------------------------------------------

def _spread(rng):
    keys = rng.normal(size=(50, 5))
    return keys, rng.normal(size=5), {}, None


def _flat_scores(rng):
    keys = rng.normal(size=(50, 5))
    return keys, np.zeros(5), {}, None


def _ties(rng):
    # integer keys and query: scores take few values, so the k-th score is shared by many keys
    keys = rng.integers(0, 3, size=(60, 4)).astype(np.float64)
    return keys, np.array([1.0, 1.0, 0.0, -1.0]), {}, None


def _signed_pairs(rng):
    keys = rng.normal(size=(25, 6))
    return keys, 0.5 * rng.normal(size=6), {"complement": True}, None


def _exclusions(rng):
    keys = rng.normal(size=(50, 5))
    v = rng.normal(size=5)
    top = np.argsort(-(keys @ v))
    return keys, v, {}, np.concatenate([top[:3], top[10:12], [int(top[-1])]])


def _absolute(rng):
    keys = rng.normal(size=(40, 5))
    return keys, 0.7 * rng.normal(size=5), {"absolute": True}, None


def _complement_excluded(rng):
    keys = rng.normal(size=(30, 5))
    return keys, 0.5 * rng.normal(size=5), {"complement": True}, [0, 31, 59, 12]


CASES = {
    "spread": _spread,
    "flat": _flat_scores,
    "ties": _ties,
    "signed-pairs": _signed_pairs,
    "exclusions": _exclusions,
    "absolute": _absolute,
    "complement-excluded": _complement_excluded,
}


def _case(name, seed=0):
    keys, v, mode, exclude = CASES[name](np.random.default_rng(seed))
    mech = LazyExponentialMechanism(_flat(keys), epsilon=1.0, sensitivity=0.5, k=6, **mode)
    return mech, keys, v, exclude


# "complement-excluded" covers signed pairs and exclusions together in the default tier.
DEFAULT_TIER = ["spread", "flat", "ties", "absolute", "complement-excluded"]


def _check_law(name, n_draws):
    mech, keys, v, exclude = _case(name)
    counts, tails = lazy_draws(mech, v, n_draws, seed=1, exclude=exclude)
    law = _exact_law(mech, keys, v, exclude if exclude is not None else ())
    p = chi_square_pvalue(counts, law)
    assert p > ALPHA, f"{name}: p = {p}"
    return tails


@pytest.mark.parametrize("name", [n for n in DEFAULT_TIER if n not in ("spread", "flat")])
def test_law_is_the_exponential_mechanism(name):
    _check_law(name, N_DEFAULT)


def test_law_and_mean_tail_on_flat_scores():
    # Flat scores attain E[t] = (N - k) / (k + 1) exactly (Fast-MWEM, arXiv:2602.03732,
    # Thm D.1); 4 standard errors.
    tails = _check_law("flat", N_DEFAULT)
    bound = (50 - 6) / (6 + 1)
    assert abs(tails.mean() - bound) < 4 * tails.std() / np.sqrt(tails.size)


def test_law_and_mean_tail_on_spread_scores():
    tails = _check_law("spread", N_DEFAULT)
    assert tails.mean() < (50 - 6) / (6 + 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_law_is_the_exponential_mechanism_full(name):
    _check_law(name, N_FULL)


def test_reference_law_is_the_exponential_mechanisms():
    mech, keys, v, _ = _case("spread")
    em = ExponentialMechanism(epsilon=1.0, sensitivity=0.5)
    np.testing.assert_allclose(_exact_law(mech, keys, v), em.probabilities(keys @ v), rtol=1e-12)
    np.testing.assert_allclose(mech.probabilities(v), em.probabilities(keys @ v), rtol=1e-12)
    mech, keys, v, exclude = _case("complement-excluded")
    np.testing.assert_allclose(mech.probabilities(v, exclude=exclude),
                               _exact_law(mech, keys, v, exclude), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", ["spread", "complement-excluded", "absolute"])
def test_select_is_search_then_draw(name):
    mech, _, v, exclude = _case(name)
    vec, excluded = mech._checked(v, exclude)
    top = mech._top(vec, mech._k_for(mech.n_candidates, excluded.size), excluded)
    for seed in range(30):
        drawn = mech._draw(vec, *top, excluded, np.random.default_rng(seed))
        assert mech.select_with_stats(v, rng=seed, exclude=exclude) == drawn


def test_public_select_law():
    # A smaller sample through the whole public path, bit-packed complement keys (Fast-MWEM's
    # setting: 0/1 queries, v = h - p, signed scores over 2m candidates).
    rng = np.random.default_rng(3)
    keys = (rng.random((40, 16)) < 0.5).astype(np.float64)
    index = BitPackedIndex(16)
    index.add(keys)
    v = rng.dirichlet(np.full(16, 0.5)) - rng.dirichlet(np.ones(16))
    mech = LazyExponentialMechanism(index, epsilon=1.0, sensitivity=0.01, complement=True)
    g = np.random.default_rng(4)
    draws = [mech.select(v, rng=g) for _ in range(3000)]
    counts = np.bincount(draws, minlength=80)
    assert chi_square_pvalue(counts, _exact_law(mech, keys, v)) > ALPHA


# -- power ---------------------------------------------------------------------------------------

def test_power_untruncated_tail_fails(monkeypatch):
    def untruncated(generator, size, p_tail, margin):
        return generator.gumbel(size=size)

    monkeypatch.setattr(lazy_module, "_truncated_gumbel", untruncated)
    mech, keys, v, _ = _case("flat")
    counts, _ = lazy_draws(mech, v, 3000, seed=2)
    assert chi_square_pvalue(counts, _exact_law(mech, keys, v)) < ALPHA


def test_power_wrong_epsilon_fails():
    mech, keys, v, _ = _case("spread")
    wrong = LazyExponentialMechanism(mech.oracle, epsilon=2.0, sensitivity=0.5, k=6)
    counts, _ = lazy_draws(wrong, v, 3000, seed=3)
    assert chi_square_pvalue(counts, _exact_law(mech, keys, v)) < ALPHA


# -- approximate top-k sets (Fast-MWEM App. F) ------------------------------------------------

class _Perturbed:
    """A certified approximate oracle: ranks keys by score + u_i with |u_i| <= gap / 2, so no
    missed key beats the smallest returned score by more than ``gap`` (Definition F.1)."""

    exact = False

    def __init__(self, keys, gap, rng):
        self.keys, self.certified_gap = keys, gap
        self.noise = rng.uniform(-gap / 2, gap / 2, size=keys.shape[0])
        self.n_keys, self.dimension = keys.shape

    def search(self, queries, k):
        scores = queries @ self.keys.T
        order = np.argsort(-(scores + self.noise), axis=1)[:, :k]
        return np.take_along_axis(scores, order, axis=1), order.astype(np.int64)

    def score(self, ids, query):
        return self.keys[ids] @ query


def _perturbed_case(mode, gap=3.0):
    rng = np.random.default_rng(8)
    keys = rng.normal(size=(60, 5))
    v = rng.normal(size=5)
    oracle = _Perturbed(keys, gap, rng)
    mech = LazyExponentialMechanism(oracle, epsilon=1.0, sensitivity=0.5, k=6, approximate=mode)
    return mech, keys, v


def test_privacy_mode_with_a_certified_gap_keeps_the_exact_law():
    mech, keys, v = _perturbed_case("privacy")
    assert mech.gap == pytest.approx(3.0)  # c = gap * epsilon / (2 * sensitivity)
    counts, tails = lazy_draws(mech, v, N_DEFAULT, seed=9)
    assert chi_square_pvalue(counts, _exact_law(mech, keys, v)) > ALPHA
    exact = LazyExponentialMechanism(_flat(keys), epsilon=1.0, sensitivity=0.5, k=6)
    _, exact_tails = lazy_draws(exact, v, 2000, seed=9)
    assert tails.mean() > 2 * exact_tails.mean()  # lowering the margin costs tail draws


def test_privacy_mode_over_an_exact_set_with_c_is_exact():
    # An exact S with the margin lowered by c = 1 (the form of Fast-MWEM's Alg. 6).
    rng = np.random.default_rng(10)
    keys = rng.normal(size=(50, 5))
    v = rng.normal(size=5)
    oracle = _Perturbed(keys, 2.0, rng)
    oracle.noise[:] = 0.0
    mech = LazyExponentialMechanism(oracle, epsilon=1.0, sensitivity=1.0, k=8)
    assert mech.gap == pytest.approx(1.0)
    counts, _ = lazy_draws(mech, v, N_DEFAULT, seed=11)
    assert chi_square_pvalue(counts, _exact_law(mech, keys, v)) > ALPHA


def test_power_runtime_mode_over_an_approximate_set_is_not_exact():
    # Without the lowered margin, keys missed by the approximate set are under-sampled.
    mech, keys, v = _perturbed_case("runtime", gap=6.0)
    counts, _ = lazy_draws(mech, v, N_DEFAULT, seed=12)
    assert chi_square_pvalue(counts, _exact_law(mech, keys, v)) < ALPHA
