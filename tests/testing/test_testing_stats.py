"""The statistical helpers of fastmwem.testing: chi-square pooling and the CP epsilon bound."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.testing import (
    chi_square_pvalue,
    clopper_pearson_epsilon_lower_bound,
    empirical_counts,
)


def test_chi_square_accepts_the_true_law_at_the_stated_rate():
    # Under the null the p-value is ~uniform: about 5% of 400 tests fall below 0.05.
    rng = np.random.default_rng(0)
    probs = np.array([0.4, 0.3, 0.2, 0.05, 0.05])
    pvals = [chi_square_pvalue(rng.multinomial(2_000, probs), probs) for _ in range(400)]
    assert 0.02 <= np.mean(np.array(pvals) < 0.05) <= 0.09


def test_chi_square_rejects_a_wrong_law():
    rng = np.random.default_rng(1)
    counts = rng.multinomial(20_000, [0.3, 0.3, 0.4])
    assert chi_square_pvalue(counts, [0.3, 0.3, 0.4]) > 1e-4
    assert chi_square_pvalue(counts, [0.32, 0.3, 0.38]) < 1e-4


def test_chi_square_counts_mass_on_rare_outcomes():
    # Rare outcomes (expected 0.02 in total) are pooled; too small to stand alone, the pool is
    # merged into a kept bin rather than dropped, so 200 observations there are not ignored
    # (dropping them would compare 400 vs 400 and pass).
    probs = np.array([0.5, 0.5 - 2e-5, 1e-5, 1e-5])
    good = np.array([500, 500, 0, 0])
    bad = np.array([400, 400, 100, 100])
    assert chi_square_pvalue(good, probs) > 0.5
    assert chi_square_pvalue(bad, probs) < 1e-4


def test_chi_square_single_dominant_outcome_is_still_testable():
    probs = np.array([1 - 3e-6, 1e-6, 1e-6, 1e-6])
    # One outcome carries everything but a rare pool (expected 0.3): exact binomial on the pool.
    assert chi_square_pvalue(np.array([100_000, 0, 0, 0]), probs) > 0.5
    assert chi_square_pvalue(np.array([99_999, 1, 0, 0]), probs) > 1e-4
    assert chi_square_pvalue(np.array([99_000, 400, 300, 300]), probs) < 1e-4
    assert chi_square_pvalue(np.array([100_000]), np.array([1.0])) == 1.0  # nothing to test


def test_chi_square_zero_probability_outcome_observed():
    assert chi_square_pvalue([10, 0, 1], [0.5, 0.5, 0.0]) == 0.0


def test_chi_square_shape_mismatch():
    with pytest.raises(ValueError, match="shape"):
        chi_square_pvalue([1, 2, 3], [0.5, 0.5])


def test_empirical_counts():
    np.testing.assert_array_equal(empirical_counts(np.array([0, 2, 2]), 4), [1, 0, 2, 0])
    with pytest.raises(ValueError, match="n_outcomes"):
        empirical_counts(np.array([0, 4]), 4)


def test_cp_bound_is_close_to_the_truth_and_below_it():
    rng = np.random.default_rng(2)
    eps = 1.0
    p_a = np.array([0.2, 0.8])
    p_b = np.array([0.2 * np.exp(-eps), 1 - 0.2 * np.exp(-eps)])
    n = 1_000_000
    ca, cb = rng.multinomial(n, p_a), rng.multinomial(n, p_b)
    bound = clopper_pearson_epsilon_lower_bound(ca, cb, n, n, alpha=0.01 / 4)
    assert 0.95 < bound <= eps


def test_cp_bound_is_symmetric_and_small_for_equal_laws():
    rng = np.random.default_rng(3)
    p = np.array([0.1, 0.2, 0.7])
    ca, cb = rng.multinomial(100_000, p), rng.multinomial(100_000, p)
    b1 = clopper_pearson_epsilon_lower_bound(ca, cb, 100_000, 100_000, 0.01)
    b2 = clopper_pearson_epsilon_lower_bound(cb, ca, 100_000, 100_000, 0.01)
    assert b1 == pytest.approx(b2)
    assert b1 < 0.0  # no evidence of any privacy loss


def test_cp_bound_coverage():
    # The bound exceeds the true loss in at most about alpha x (number of bounds) of repetitions.
    rng = np.random.default_rng(4)
    eps = 0.5
    p_a = np.array([0.3, 0.7])
    p_b = np.array([0.3 * np.exp(-eps), 1 - 0.3 * np.exp(-eps)])
    true_loss = max(np.max(np.abs(np.log(p_a / p_b))), eps)
    n, reps, alpha = 2_000, 500, 0.05 / 4
    over = sum(
        clopper_pearson_epsilon_lower_bound(rng.multinomial(n, p_a), rng.multinomial(n, p_b),
                                            n, n, alpha) > true_loss
        for _ in range(reps)
    )
    assert over / reps <= 0.05


def test_cp_bound_with_unseen_outputs():
    # An output never seen on one side gives no (infinite) evidence: the bound stays finite.
    bound = clopper_pearson_epsilon_lower_bound([100, 0], [50, 50], 100, 100, 0.01)
    assert np.isfinite(bound)
    assert bound > 0
