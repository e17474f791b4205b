"""Exact-law tests of PNF-Peel and CDP-Peel (chi-square over every ordered sequence, ALPHA)."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.mechanisms.topk import CDPPeel, PNFPeel, cdp_peel_epsilon, cdp_peel_local_epsilon
from fastmwem.testing.stats import chi_square_pvalue
from tests.mechanisms.topk._exact import peel_law, tally

ALPHA = 1e-3
DRAWS = 5_000


def _draw(mech, counts, n, seed):
    rng = np.random.default_rng(seed)
    return [mech.select(counts, rng=rng) for _ in range(n)]


def _pnf_step(epsilon, k, neighbors):
    monotone = neighbors == "add-remove"
    return PermuteAndFlip(epsilon=epsilon / k, monotonic=monotone).probabilities


def _em_step(local_eps, neighbors):
    monotone = neighbors == "add-remove"
    return ExponentialMechanism(epsilon=local_eps, monotonic=monotone).probabilities


@pytest.mark.parametrize("counts,k,epsilon,neighbors", [
    ([5, 3, 3, 1, 0], 3, 3.0, "add-remove"),
    ([4, 4, 2, 1, 1], 2, 2.0, "replace"),
])
def test_topk_pnf_peel_exact_law(counts, k, epsilon, neighbors):
    seqs, probs = peel_law(counts, k, _pnf_step(epsilon, k, neighbors))
    observed = tally(_draw(PNFPeel(k, epsilon, neighbors), counts, DRAWS, 31), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA
    _, wrong = peel_law(counts, k, _pnf_step(2.0 * epsilon, k, neighbors))
    assert chi_square_pvalue(observed, wrong) < ALPHA


@pytest.mark.parametrize("counts,k,epsilon,delta,neighbors", [
    ([5, 3, 3, 1, 0], 3, 3.0, 1e-6, "add-remove"),   # eps/k branch
    ([5, 3, 3, 1, 0], 3, 2.0, 0.3, "add-remove"),    # Lemma 4.2 branch
    ([4, 4, 2, 1, 1], 2, 2.0, 0.3, "replace"),
])
def test_topk_cdp_peel_exact_law(counts, k, epsilon, delta, neighbors):
    local = cdp_peel_local_epsilon(epsilon, k, delta)
    seqs, probs = peel_law(counts, k, _em_step(local, neighbors))
    observed = tally(_draw(CDPPeel(k, epsilon, delta, neighbors), counts, DRAWS, 32), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA
    _, wrong = peel_law(counts, k, _em_step(2.0 * local, neighbors))
    assert chi_square_pvalue(observed, wrong) < ALPHA


def test_topk_cdp_local_epsilon_formula():
    # eps = 1, delta = 1e-6: eps / k (0.2) wins at k = 5, the CDP value (0.0264) at k = 200.
    assert cdp_peel_local_epsilon(1.0, 5, 1e-6) == pytest.approx(0.2)
    assert cdp_peel_local_epsilon(1.0, 200, 1e-6) == pytest.approx(0.0264, abs=1e-4)
    local = cdp_peel_local_epsilon(2.0, 3, 0.3)
    assert local > 2.0 / 3
    total = cdp_peel_epsilon(local, 3, 0.3)
    assert total <= 2.0 and total == pytest.approx(2.0, rel=1e-12)


def test_topk_pnf_peel_k1_is_permute_and_flip():
    counts = [7, 5, 5, 2, 0, 6]
    probs = PermuteAndFlip(epsilon=0.7, monotonic=True).probabilities(counts)
    draws = _draw(PNFPeel(1, 0.7), counts, DRAWS, 33)
    observed = np.bincount([int(s[0]) for s in draws], minlength=len(counts))
    assert chi_square_pvalue(observed, probs) > ALPHA
