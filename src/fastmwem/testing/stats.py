"""Goodness-of-fit and empirical-epsilon helpers with stated false-positive rates."""

from __future__ import annotations

import numpy as np

__all__ = ["chi_square_pvalue", "clopper_pearson_epsilon_lower_bound", "empirical_counts"]


def empirical_counts(samples: np.ndarray, n_outcomes: int) -> np.ndarray:
    """Counts of each outcome ``0 .. n_outcomes - 1`` among integer ``samples``."""
    samples = np.asarray(samples)
    if samples.size and (samples.min() < 0 or samples.max() >= n_outcomes):
        raise ValueError("samples must lie in 0 .. n_outcomes - 1")
    return np.bincount(samples, minlength=n_outcomes)


def chi_square_pvalue(counts: np.ndarray, probabilities: np.ndarray, *,
                      min_expected: float = 5.0) -> float:
    """Pearson chi-square p-value of observed ``counts`` against an exact law.

    Outcomes whose expected count is below ``min_expected`` are pooled into one bin, and that bin
    is merged into the smallest remaining bin if it is still too small, so the asymptotic
    chi-square law is trustworthy and no observation is ever dropped (excess mass on rare outcomes
    still counts against the law). An observation in an outcome of probability zero gives p-value
    0. When a single outcome carries all but a pooled rare bin, the rare bin's count is tested by
    an exact two-sided binomial test instead; with a single outcome there is nothing to test and
    the p-value is 1.
    """
    from scipy import stats
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probabilities, dtype=np.float64)
    if counts.shape != probs.shape:
        raise ValueError("counts and probabilities must have the same shape")
    if np.any(counts[probs == 0] > 0):
        return 0.0
    total = counts.sum()
    expected = probs / probs.sum() * total
    big = expected >= min_expected
    obs = list(counts[big])
    exp = list(expected[big])
    if big.sum() == 1 and (~big).any():
        rare = int(counts[~big].sum())
        return float(stats.binomtest(rare, int(total), float(probs[~big].sum() / probs.sum())).pvalue)
    if (~big).any():
        if expected[~big].sum() >= min_expected or not obs:
            obs.append(counts[~big].sum())
            exp.append(expected[~big].sum())
        else:
            j = int(np.argmin(exp))
            obs[j] += counts[~big].sum()
            exp[j] += expected[~big].sum()
    if len(obs) < 2:
        return 1.0
    obs_arr, exp_arr = np.array(obs), np.array(exp)
    exp_arr *= obs_arr.sum() / exp_arr.sum()
    return float(stats.chisquare(obs_arr, exp_arr).pvalue)


def clopper_pearson_epsilon_lower_bound(counts_a: np.ndarray, counts_b: np.ndarray,
                                        runs_a: int, runs_b: int, alpha: float) -> float:
    """A lower confidence bound on the privacy loss from output counts on two neighbours.

    For every output and both directions, bounds ``ln(P_a(o) / P_b(o))`` below by the ratio of a
    Clopper-Pearson lower limit to an upper limit, each at two-sided level ``alpha`` (already
    Bonferroni-corrected by the caller). If the mechanism is ``epsilon``-DP, the returned bound
    exceeds ``epsilon`` with probability at most about ``alpha`` times the number of bounds.
    """
    from scipy import stats
    counts_a = np.asarray(counts_a, dtype=np.float64)
    counts_b = np.asarray(counts_b, dtype=np.float64)
    best = -np.inf
    for a, b, na, nb in ((counts_a, counts_b, runs_a, runs_b), (counts_b, counts_a, runs_b, runs_a)):
        lower = np.where(a > 0, stats.beta.ppf(alpha / 2, np.maximum(a, 1), na - a + 1), 0.0)
        upper = np.where(b < nb, stats.beta.ppf(1 - alpha / 2, b + 1, np.maximum(nb - b, 1)), 1.0)
        with np.errstate(divide="ignore"):
            ratio = np.log(lower) - np.log(upper)
        best = max(best, float(np.max(ratio)))
    return best
