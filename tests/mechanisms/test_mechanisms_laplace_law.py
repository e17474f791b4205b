"""Laplace (KS) and two-sided geometric (chi-square) output laws, with power checks.

Laplace: real values get discrete Laplace noise on a grid of 2**-10 of the sensitivity (the
exact law is checked in test_mechanisms_discrete_law.py); at that resolution the output must
still pass Kolmogorov-Smirnov against scipy.stats.laplace at ALPHA_KS = 1e-6 (OpenDP's level),
and a noise scale off by +-30% must be rejected (Tumult's check). Geometric: Pearson chi-square
against the exact two-sided geometric pmf at ALPHA_CHI2 = 1e-4; epsilon off by +-30% and by 10%
must be rejected. Samples come from the public ``release`` on an array (one independent draw per
entry).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fastmwem.mechanisms import Geometric, Laplace
from fastmwem.testing import chi_square_pvalue

ALPHA_KS = 1e-6
ALPHA_CHI2 = 1e-4
N = 100_000


def _laplace_draws(eps, sens, value, n, seed):
    return Laplace(epsilon=eps, sensitivity=sens).release(np.full(n, value), rng=seed)


@pytest.mark.parametrize(("eps", "sens", "value"), [(1.0, 1.0, 0.0), (0.1, 2.0, 3.5), (5.0, 0.5, -1e6)])
def test_laplace_ks(eps, sens, value):
    out = _laplace_draws(eps, sens, value, N, seed=21)
    assert out.shape == (N,)
    p = stats.kstest(out, stats.laplace(loc=value, scale=sens / eps).cdf).pvalue
    assert p > ALPHA_KS


@pytest.mark.parametrize("factor", [0.7, 1.3])
@pytest.mark.parametrize(("eps", "sens", "value"), [(1.0, 1.0, 0.0), (0.1, 2.0, 3.5)])
def test_laplace_ks_power_scale_30pct(eps, sens, value, factor):
    # A mechanism whose noise scale is off by 30% must fail the same test.
    out = _laplace_draws(eps / factor, sens, value, N, seed=22)
    p = stats.kstest(out, stats.laplace(loc=value, scale=sens / eps).cdf).pvalue
    assert p < ALPHA_KS


def test_laplace_ks_power_shifted_centre():
    out = _laplace_draws(1.0, 1.0, 0.05, N, seed=23)
    assert stats.kstest(out, stats.laplace(loc=0.0, scale=1.0).cdf).pvalue < ALPHA_KS


def test_laplace_scalar_path_has_the_same_law():
    mech = Laplace(epsilon=2.0, sensitivity=1.0)
    rng = np.random.default_rng(24)
    out = np.array([mech.release(1.0, rng=rng) for _ in range(20_000)])
    assert isinstance(mech.release(1.0, rng=0), float)
    assert stats.kstest(out, stats.laplace(loc=1.0, scale=0.5).cdf).pvalue > ALPHA_KS
    assert stats.kstest(out, stats.laplace(loc=1.0, scale=0.5 * 1.3).cdf).pvalue < ALPHA_KS


def test_laplace_noise_is_independent_across_entries():
    out = _laplace_draws(1.0, 1.0, 0.0, N, seed=25)
    r = np.corrcoef(out[:-1], out[1:])[0, 1]
    assert abs(r) < 5 / math.sqrt(N)  # ~5 sigma under independence


def _geometric_law(eps: float, sens: int, k: int) -> np.ndarray:
    """Exact pmf on -k..k plus the two tails: P[Z=z] = (1-a)/(1+a) a^|z|, a = exp(-eps/sens)."""
    a = math.exp(-eps / sens)
    z = np.arange(-k, k + 1)
    core = (1 - a) / (1 + a) * a ** np.abs(z)
    tail = a ** (k + 1) / (1 + a)
    return np.concatenate([[tail], core, [tail]])


def _geometric_counts(noise: np.ndarray, k: int) -> np.ndarray:
    clipped = np.clip(noise, -k - 1, k + 1) + k + 1
    return np.bincount(clipped, minlength=2 * k + 3)


@pytest.mark.parametrize(("eps", "sens"), [(1.0, 1), (0.3, 1), (1.0, 3), (4.0, 1)])
def test_geometric_chi_square(eps, sens):
    k = 40
    out = Geometric(epsilon=eps, sensitivity=sens).release(np.full(N, 7, dtype=np.int64), rng=31)
    assert out.dtype.kind == "i"
    law = _geometric_law(eps, sens, k)
    assert law.sum() == pytest.approx(1.0)
    assert chi_square_pvalue(_geometric_counts(out - 7, k), law) > ALPHA_CHI2


@pytest.mark.parametrize("factor", [0.7, 1.1, 1.3])
@pytest.mark.parametrize(("eps", "sens"), [(1.0, 1), (0.3, 1)])
def test_geometric_power(eps, sens, factor):
    k = 40
    out = Geometric(epsilon=eps * factor, sensitivity=sens).release(np.zeros(N, dtype=np.int64),
                                                                    rng=32)
    assert chi_square_pvalue(_geometric_counts(out, k), _geometric_law(eps, sens, k)) < ALPHA_CHI2


def test_geometric_scalar_release_is_int():
    out = Geometric(epsilon=1.0).release(5, rng=0)
    assert isinstance(out, int)


def test_geometric_rejects_a_calibration_that_would_saturate_int64():
    # numpy's geometric sampler saturates at 2**63-1 for tiny p; two saturated draws would cancel.
    with pytest.raises(ValueError, match="epsilon"):
        Geometric(epsilon=1e-15, sensitivity=1)
    with pytest.raises(ValueError, match="epsilon"):
        Geometric(epsilon=1e-3, sensitivity=10**12)
    Geometric(epsilon=1e-6, sensitivity=1)  # still fine
