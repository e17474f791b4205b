"""The discrete Gaussian: its sampled law against the exact pmf, its calibration and charges.

Law: Pearson chi-square of N draws against ``exp(-x^2 / (2 sigma^2)) / Z`` at ALPHA = 1e-4 (rare
outcomes pooled by :func:`fastmwem.testing.chi_square_pvalue`); power: the same draws must be
rejected against the law of a sigma 20% off. Samples come from the public ``release`` on an
array (one independent draw per entry) and from the sampler itself.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import ZCDP, Accountant, BudgetExceededError
from fastmwem.mechanisms.gaussian import (
    SIGMA2_DENOMINATOR,
    DiscreteGaussian,
    discrete_gaussian_pmf,
    sample_discrete_gaussian,
)
from fastmwem.testing import chi_square_pvalue

ALPHA = 1e-4


def _pvalue(draws: np.ndarray, sigma2: float) -> float:
    reach = int(12 * np.sqrt(sigma2)) + 2
    support = np.arange(-reach, reach + 1)
    counts = np.array([np.count_nonzero(draws == x) for x in support])
    assert counts.sum() == draws.size  # nothing beyond 12 sigma
    return chi_square_pvalue(counts, discrete_gaussian_pmf(sigma2, support))


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(5, 2), Fraction(30)])
def test_sampler_matches_the_exact_law(sigma2):
    draws = np.array(sample_discrete_gaussian(sigma2, 20_000, np.random.default_rng(5)))
    assert _pvalue(draws, float(sigma2)) > ALPHA


@pytest.mark.parametrize("factor", [0.8, 1.2])
def test_chi_square_rejects_a_sigma_20_percent_off(factor):
    sigma2 = Fraction(30)
    draws = np.array(sample_discrete_gaussian(sigma2, 20_000, np.random.default_rng(6)))
    assert _pvalue(draws, float(sigma2) * factor**2) < ALPHA


def test_release_adds_the_law_around_the_value():
    mech = DiscreteGaussian(rho=Fraction(1, 10))  # sigma^2 = 5
    noisy = mech.release(np.full(20_000, 7.0), rng=7)
    assert noisy.dtype == np.int64
    assert _pvalue(noisy - 7, 5.0) > ALPHA


def test_calibration_rounds_sigma_up_and_charges_the_exact_rho():
    mech = DiscreteGaussian(rho=0.3, sensitivity=2.0)  # sigma^2 = 4 / 0.6 = 6.666...
    assert mech.sigma2 >= Fraction(20, 3)
    assert mech.sigma2 - Fraction(20, 3) < Fraction(1, SIGMA2_DENOMINATOR)
    assert mech.sigma2.denominator <= SIGMA2_DENOMINATOR
    assert mech.privacy == ZCDP(Fraction(4) / (2 * mech.sigma2))
    assert mech.privacy.rho <= Fraction(3, 10)


def test_a_refused_charge_draws_nothing_and_spends_nothing():
    acc = Accountant(rho=0.01)
    rng = np.random.default_rng(8)
    before = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        DiscreteGaussian(rho=0.5).release(np.zeros(3), rng=rng, accountant=acc)
    assert acc.spent() == ZCDP(0)
    assert rng.bit_generator.state == before


@pytest.mark.parametrize("value", [np.array([1.5]), np.array([np.nan]), np.array([2.0**60]),
                                   np.array(["a"])])
def test_non_integer_values_are_refused(value):
    with pytest.raises((ValueError, TypeError)):
        DiscreteGaussian(rho=1).release(value, rng=0)


@pytest.mark.parametrize(("rho", "error"), [(0, ValueError), (-1, ValueError),
                                            (1e-40, ValueError), ("x", ValueError)])
def test_bad_budgets_are_refused(rho, error):
    with pytest.raises(error):
        DiscreteGaussian(rho=rho)


def test_large_sigma_uses_wide_uniform_draws():
    # sigma^2 = 10^20: the uniform draws pass 2^62 and take the multi-word path.
    draws = sample_discrete_gaussian(Fraction(10**20), 200, np.random.default_rng(9))
    spread = float(np.std(np.array(draws, dtype=np.float64)))
    assert 0.8e10 < spread < 1.2e10
