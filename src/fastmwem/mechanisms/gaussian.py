"""The discrete Gaussian mechanism on integers, sampled exactly (zero-concentrated DP).

Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy" (arXiv:2004.00010):
the discrete Gaussian ``N_Z(0, sigma^2)`` puts mass proportional to ``exp(-x^2 / (2 sigma^2))`` on
each integer ``x``. Adding independent draws to each entry of an integer vector whose L2 norm
changes by at most ``Delta`` between neighbours is ``Delta^2 / (2 sigma^2)``-zCDP (their s.2 and
its multivariate form). The samplers here follow their s.5: a Bernoulli(exp(-gamma)) for a
rational ``gamma`` from uniform integers alone, a discrete Laplace from those, and the discrete
Gaussian by rejection from the discrete Laplace. Every step is integer arithmetic on Python
integers (no floating point), so the law of the output is exactly the discrete Gaussian: there is
no precision leak as with floating-point noise (Mironov 2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_positive
from fastmwem.accounting import ZCDP, Accountant, exact
from fastmwem.mechanisms.base import charge
from fastmwem.mechanisms.discrete import uniform_below
from fastmwem.random import RNGLike, make_rng

__all__ = ["DiscreteGaussian", "sample_discrete_gaussian", "discrete_gaussian_pmf",
           "SIGMA2_DENOMINATOR", "MAX_SIGMA2"]

#: ``sigma^2`` is rounded *up* to a multiple of ``1 / SIGMA2_DENOMINATOR``: the noise only grows
#: (the zCDP cost, charged exactly for the rounded value, only shrinks) and the rejection
#: sampler's fractions stay small.
SIGMA2_DENOMINATOR = 2**16

#: Largest ``sigma^2`` accepted (noise beyond about 10^15 would make counts meaningless and
#: their float copies inexact).
MAX_SIGMA2 = Fraction(10**30)


def _bernoulli(rng: np.random.Generator, p: Fraction) -> bool:
    """True with probability ``p`` in ``[0, 1]``, exactly."""
    return uniform_below(rng, p.denominator) < p.numerator


def _bernoulli_exp_small(rng: np.random.Generator, gamma: Fraction) -> bool:
    """True with probability ``exp(-gamma)`` for ``0 <= gamma <= 1``.

    Draw ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...`` until one fails; the number of
    successes before it is even with probability ``exp(-gamma)`` (the series of ``e^-gamma``).
    """
    k = 1
    while _bernoulli(rng, gamma / k):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(rng: np.random.Generator, gamma: Fraction) -> bool:
    """True with probability ``exp(-gamma)`` for a rational ``gamma >= 0``."""
    whole = math.floor(gamma)
    for _ in range(whole):  # exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma))
        if not _bernoulli_exp_small(rng, Fraction(1)):
            return False
    return _bernoulli_exp_small(rng, gamma - whole)


def _discrete_laplace(rng: np.random.Generator, t: int) -> int:
    """An integer with probability proportional to ``exp(-|x| / t)`` (``t >= 1`` an integer)."""
    while True:
        u = uniform_below(rng, t)
        if not _bernoulli_exp(rng, Fraction(u, t)):
            continue
        v = 0  # geometric: the number of exp(-1) successes before a failure
        while _bernoulli_exp_small(rng, Fraction(1)):
            v += 1
        magnitude = u + t * v
        negative = uniform_below(rng, 2) == 1
        if negative and magnitude == 0:
            continue  # zero would otherwise be counted twice
        return -magnitude if negative else magnitude


def sample_discrete_gaussian(sigma2: Fraction, size: int, rng: np.random.Generator) -> list[int]:
    """``size`` independent draws of ``N_Z(0, sigma2)`` (``sigma2`` a positive rational).

    Rejection from the discrete Laplace of scale ``t = floor(sigma) + 1``: a draw ``y`` is kept
    with probability ``exp(-(|y| - sigma^2 / t)^2 / (2 sigma^2))``.
    """
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    # floor(sqrt(a / b)) = floor(isqrt(a * b) / b)
    t = math.isqrt(sigma2.numerator * sigma2.denominator) // sigma2.denominator + 1
    shift = sigma2 / t
    out = []
    for _ in range(size):
        while True:
            y = _discrete_laplace(rng, t)
            if _bernoulli_exp(rng, (abs(y) - shift) ** 2 / (2 * sigma2)):
                out.append(y)
                break
    return out


def discrete_gaussian_pmf(sigma2: float, support: np.ndarray) -> np.ndarray:
    """The exact law ``exp(-x^2 / (2 sigma2)) / Z`` on ``support`` (for tests and audits).

    ``Z`` sums the terms over every integer within ``40 sigma`` of 0 (the rest is below
    ``exp(-800)`` of the total).
    """
    sigma = math.sqrt(float(sigma2))
    reach = int(40 * sigma) + 2
    every = np.arange(-reach, reach + 1, dtype=np.float64)
    norm = float(np.exp(-every**2 / (2 * float(sigma2))).sum())
    x = np.asarray(support, dtype=np.float64)
    return np.exp(-x**2 / (2 * float(sigma2))) / norm


def _round_up(value: Fraction, denominator: int) -> Fraction:
    return Fraction(-((-value.numerator * denominator) // value.denominator), denominator)


@dataclass(frozen=True)
class DiscreteGaussian:
    """Adds ``N_Z(0, sigma^2)`` noise to each entry of an integer value (or array).

    Privacy: ``rho``-zCDP with ``rho = sensitivity^2 / (2 sigma^2)`` (``privacy`` is
    ``ZCDP(rho)``) for integer values whose L2 norm changes by at most ``sensitivity`` between
    neighbouring datasets (Canonne, Kamath and Steinke, arXiv:2004.00010). A marginal (or any
    group of disjoint counting queries) has L2 sensitivity 1 under add/remove-one-record; any
    group's L1 sensitivity bounds its L2 one.

    Calibrated from a zCDP budget: ``sigma^2`` is ``sensitivity^2 / (2 rho)`` rounded *up* to a
    multiple of ``1 / SIGMA2_DENOMINATOR``, and ``privacy`` charges the exact (never larger)
    ``rho`` of the rounded ``sigma^2``.

    Args:
        rho: the zCDP budget of one release.
        sensitivity: the L2 sensitivity of the released vector.

    >>> DiscreteGaussian(rho=0.5).sigma2
    Fraction(1, 1)
    """

    rho: object
    sensitivity: float = 1.0
    if TYPE_CHECKING:  # set by __post_init__
        sigma2: Fraction = field(init=False)
        _sensitivity: Fraction = field(init=False)

    def __post_init__(self) -> None:
        rho = exact(self.rho, "rho")
        check_positive(self.sensitivity, "sensitivity")
        sens = exact(self.sensitivity, "sensitivity")
        sigma2 = _round_up(sens * sens / (2 * rho), SIGMA2_DENOMINATOR)
        if sigma2 > MAX_SIGMA2:
            raise ValueError(
                f"discrete Gaussian: rho={float(rho):.4g} with sensitivity {self.sensitivity:g} "
                f"gives sigma^2 = {float(sigma2):.4g}, above the limit {float(MAX_SIGMA2):g}")
        object.__setattr__(self, "sigma2", sigma2)
        object.__setattr__(self, "_sensitivity", sens)

    @property
    def sigma(self) -> float:
        """The noise's scale parameter ``sigma`` (as a float, for error estimates)."""
        return math.sqrt(float(self.sigma2))

    @property
    def privacy(self) -> ZCDP:
        sens = self._sensitivity
        return ZCDP(sens * sens / (2 * self.sigma2))

    def release(self, value: object, *, rng: RNGLike = None,
                accountant: Accountant | None = None) -> int | np.ndarray:
        """Return ``value`` plus independent discrete Gaussian noise (int64 entries).

        ``value`` must hold integers (an integer dtype, or floats with integral values, such as
        counts computed in float64) within ``+-2**53``.
        """
        arr = np.asarray(value)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer)
                                       or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"value must hold integers, got dtype {arr.dtype}")
        if arr.size and (not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > 2**53)
                         or np.any(arr != np.rint(arr))):
            # The message names no value: they are private.
            raise ValueError("value must hold integers within +-2**53 for the discrete Gaussian")
        generator = make_rng(rng)
        charge(accountant, self.privacy, "discrete gaussian")
        noise = sample_discrete_gaussian(self.sigma2, int(arr.size), generator)
        noisy = np.rint(arr).astype(np.int64) + np.asarray(noise, dtype=np.int64).reshape(arr.shape)
        return int(noisy) if noisy.ndim == 0 else noisy
