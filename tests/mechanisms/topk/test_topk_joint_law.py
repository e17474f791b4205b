"""Exact-law tests of Joint, PNF-Joint and the pruned joint mechanism (small d, k, every sequence).

Each test draws with a fixed seed and applies Pearson's chi-square at ALPHA against the law
enumerated by brute force over all ordered sequences of distinct items; power checks draw the
same way and require the law at a wrong epsilon to be rejected.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.mechanisms.topk import JointTopK, PNFJointTopK, PrunedJointTopK, _levels
from fastmwem.testing.stats import chi_square_pvalue
from tests.mechanisms.topk._exact import errors, joint_law, lam_of, pnf_joint_law, pruned_law, tally

ALPHA = 1e-3
DRAWS = 5_000
SLOW_DRAWS = 60_000


def _draw(mech, counts, n, seed):
    rng = np.random.default_rng(seed)
    return [mech.select(counts, rng=rng) for _ in range(n)]


JOINT_CASES = [
    # (counts, k, epsilon, neighbors, level_cap)
    ([5, 3, 3, 1, 0], 3, 1.0, "add-remove", None),        # ties among counts
    ([4, 4, 4, 2, 1], 2, 2.0, "replace", None),            # a tied top, Delta = 2
    ([9, 7, 7, 4, 0], 3, 0.01, "add-remove", None),        # tiny eps, automatic cap
    ([9, 7, 7, 4, 0], 3, 0.05, "add-remove", 0),           # tiny eps, almost all mass in the tail
    ([9, 7, 7, 4, 0], 3, 0.4, "add-remove", 2),            # tail beyond the cap carries mass
    ([12, 2, 2, 2, 1, 0], 2, 0.3, "replace", 1),
    ([0, 100, 100, 300, 130, 230], 2, 0.02, "add-remove", None),  # sparse error levels
    ([0, 100, 100, 300, 130, 230], 2, 0.02, "replace", 150),       # sparse levels + tail
]


@pytest.mark.parametrize("counts,k,epsilon,neighbors,cap", JOINT_CASES)
def test_topk_joint_exact_law(counts, k, epsilon, neighbors, cap):
    mech = JointTopK(k, epsilon, neighbors, level_cap=cap)
    seqs, probs = joint_law(counts, k, lam_of(epsilon, neighbors))
    observed = tally(_draw(mech, counts, DRAWS, 11), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("counts,k,epsilon,neighbors,cap", JOINT_CASES)
def test_topk_joint_and_pnf_exact_law_many_draws(counts, k, epsilon, neighbors, cap):
    seqs, probs = joint_law(counts, k, lam_of(epsilon, neighbors))
    mech = JointTopK(k, epsilon, neighbors, level_cap=cap)
    assert chi_square_pvalue(tally(_draw(mech, counts, SLOW_DRAWS, 21), seqs), probs) > ALPHA
    seqs, probs = pnf_joint_law(counts, k, epsilon, 1 if neighbors == "add-remove" else 2)
    mech = PNFJointTopK(k, epsilon, neighbors, level_cap=cap)
    assert chi_square_pvalue(tally(_draw(mech, counts, SLOW_DRAWS, 22), seqs), probs) > ALPHA


def test_topk_joint_tail_mass_is_visible_in_the_tiny_eps_case():
    # The test above with cap 0 only means something if levels beyond 0 hold real mass.
    counts, k, eps = [9, 7, 7, 4, 0], 3, 0.05
    seqs, probs = joint_law(counts, k, lam_of(eps, "add-remove"))
    assert probs[errors(counts, seqs) > 0].sum() > 0.9
    counts, k, eps, cap = [9, 7, 7, 4, 0], 3, 0.4, 2
    seqs, probs = joint_law(counts, k, lam_of(eps, "add-remove"))
    assert probs[errors(counts, seqs) > cap].sum() > 0.1


@pytest.mark.parametrize("counts,k,epsilon,neighbors,cap", JOINT_CASES)
def test_topk_pnf_joint_exact_law(counts, k, epsilon, neighbors, cap):
    mech = PNFJointTopK(k, epsilon, neighbors, level_cap=cap)
    seqs, probs = pnf_joint_law(counts, k, epsilon, 1 if neighbors == "add-remove" else 2)
    observed = tally(_draw(mech, counts, DRAWS, 12), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA


@pytest.mark.slow
def test_topk_pnf_joint_differs_from_joint_and_is_detected():
    # Power: PNF-Joint's law is not Joint's law at the same epsilon on this input.
    counts, k, eps = [6, 5, 2, 2, 0], 2, 1.0
    seqs, joint_probs = joint_law(counts, k, lam_of(eps, "add-remove"))
    observed = tally(_draw(PNFJointTopK(k, eps), counts, 40_000, 13), seqs)
    assert chi_square_pvalue(observed, joint_probs) < ALPHA


@pytest.mark.parametrize("cls", [JointTopK, PNFJointTopK])
def test_topk_joint_power_wrong_epsilon(cls):
    counts, k, eps = [5, 3, 3, 1, 0], 3, 1.0
    observed = tally(_draw(cls(k, eps), counts, DRAWS, 14),
                     joint_law(counts, k, 1.0)[0])
    if cls is JointTopK:
        seqs, wrong = joint_law(counts, k, lam_of(1.5 * eps, "add-remove"))
        _, right = joint_law(counts, k, lam_of(eps, "add-remove"))
    else:
        seqs, wrong = pnf_joint_law(counts, k, 1.5 * eps, 1)
        _, right = pnf_joint_law(counts, k, eps, 1)
    assert chi_square_pvalue(observed, right) > ALPHA
    assert chi_square_pvalue(observed, wrong) < ALPHA


def test_topk_joint_large_counts_use_exact_integers():
    # Near 1e17 float64 cannot tell these counts apart; the law must be the one of the gaps.
    base = 10**17
    small = [5, 3, 3, 1, 0]
    big = np.array([base + c for c in small], dtype=np.int64)
    seqs, probs = joint_law(small, 3, 0.5)
    observed = tally(_draw(JointTopK(3, 1.0), big, DRAWS, 15), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA


@pytest.mark.parametrize("neighbors,delta", [("add-remove", 1), ("replace", 2)])
def test_topk_joint_k1_is_the_exponential_mechanism(neighbors, delta):
    counts = [7, 5, 5, 2, 0, 6]
    probs = ExponentialMechanism(epsilon=0.8, sensitivity=delta).probabilities(counts)
    draws = _draw(JointTopK(1, 0.8, neighbors), counts, DRAWS, 16)
    observed = np.bincount([int(s[0]) for s in draws], minlength=len(counts))
    assert chi_square_pvalue(observed, probs) > ALPHA
    wrong = ExponentialMechanism(epsilon=1.6, sensitivity=delta).probabilities(counts)
    assert chi_square_pvalue(observed, wrong) < ALPHA


def test_topk_pnf_joint_k1_is_permute_and_flip():
    counts = [7, 5, 5, 2, 0, 6]
    probs = PermuteAndFlip(epsilon=0.8).probabilities(counts)
    draws = _draw(PNFJointTopK(1, 0.8), counts, DRAWS, 17)
    observed = np.bincount([int(s[0]) for s in draws], minlength=len(counts))
    assert chi_square_pvalue(observed, probs) > ALPHA
    wrong = PermuteAndFlip(epsilon=1.6).probabilities(counts)
    assert chi_square_pvalue(observed, wrong) < ALPHA


def test_topk_pruned_joint_exact_law_and_clipping():
    counts, k, eps, beta = [9, 6, 4, 2, 0], 3, 4.0, 0.9
    mech = PrunedJointTopK(k, eps, beta=beta)
    tau = mech.tau(len(counts))
    assert 0 < tau < 9  # the clipping is active on this input
    seqs, probs = pruned_law(counts, k, lam_of(eps, "add-remove"), tau)
    observed = tally(_draw(mech, counts, DRAWS, 18), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA
    _, unclipped = joint_law(counts, k, lam_of(eps, "add-remove"))
    assert chi_square_pvalue(observed, unclipped) < ALPHA


# The samplers' bounded-memory paths, made to act on these tiny inputs: the level pass handing
# over one level at a time, and positions looked up two items at a time.
WINDOW_CASES = [
    # (counts, k, epsilon, neighbors, level_cap)
    ([6, 5, 5, 5, 5, 3, 3, 0], 3, 0.8, "add-remove", 1),  # window cut below a tie run, tail
    ([2, 9, 2, 2, 9, 2, 0, 2], 3, 0.6, "replace", None),   # runs straddling the k-th
    ([0, 100, 100, 300, 130, 230], 2, 0.02, "add-remove", 150),  # sparse levels + tail
]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(_levels, "_CHUNK_EVENTS", 1)
    monkeypatch.setattr(_levels, "_CHUNK_ITEMS", 2)


# PNF-Joint shares the level pass and the lookups with Joint: its cases run with the slow set.
@pytest.mark.parametrize("cls", [JointTopK, pytest.param(PNFJointTopK, marks=pytest.mark.slow)])
@pytest.mark.parametrize("counts,k,epsilon,neighbors,cap", WINDOW_CASES)
def test_topk_joint_exact_law_with_small_chunks(cls, counts, k, epsilon, neighbors, cap,
                                                small_chunks):
    mech = cls(k, epsilon, neighbors, level_cap=cap)
    delta = 1 if neighbors == "add-remove" else 2
    if cls is JointTopK:
        seqs, probs = joint_law(counts, k, lam_of(epsilon, neighbors))
    else:
        seqs, probs = pnf_joint_law(counts, k, epsilon, delta)
    observed = tally(_draw(mech, counts, DRAWS, 19), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA


def test_topk_joint_window_cases_reach_the_tail_and_the_ties():
    # The first window case means something only if sequences beyond the cap (through items
    # out of the window) carry real mass.
    counts, k, eps, cap = WINDOW_CASES[0][0], 3, 0.8, 1
    seqs, probs = joint_law(counts, k, lam_of(eps, "add-remove"))
    assert probs[errors(counts, seqs) > cap].sum() > 0.2


def test_topk_joint_power_wrong_epsilon_with_small_chunks(small_chunks):
    counts, k, eps, neighbors, cap = WINDOW_CASES[0]
    observed = tally(_draw(JointTopK(k, eps, neighbors, level_cap=cap), counts, DRAWS, 20),
                     joint_law(counts, k, 1.0)[0])
    seqs, right = joint_law(counts, k, lam_of(eps, neighbors))
    _, wrong = joint_law(counts, k, lam_of(1.5 * eps, neighbors))
    assert chi_square_pvalue(observed, right) > ALPHA
    assert chi_square_pvalue(observed, wrong) < ALPHA


def test_topk_pruned_joint_exact_law_with_small_chunks(small_chunks):
    counts, k, eps, beta = [9, 6, 6, 4, 2, 0], 2, 4.0, 0.9
    mech = PrunedJointTopK(k, eps, beta=beta)
    tau = mech.tau(len(counts))
    assert 0 < tau < 9
    seqs, probs = pruned_law(counts, k, lam_of(eps, "add-remove"), tau)
    observed = tally(_draw(mech, counts, DRAWS, 23), seqs)
    assert chi_square_pvalue(observed, probs) > ALPHA
