"""Exact samplers on the integers: Bernoulli(exp(-gamma)) and the discrete Laplace.

Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy"
(arXiv:2004.00010), s.5: a Bernoulli trial of probability ``exp(-gamma)`` for a rational
``gamma`` needs only uniform integers (their Algorithm 1), and from it a discrete Laplace draw
``P[Y = y]`` proportional to ``exp(-|y| s / t)`` for positive integers ``s, t`` (their
Algorithm 2). Every step here compares uniform integers (numpy's bounded integers are exact,
by rejection) with integers, so the law of the output is exactly the stated one: no
floating-point value is ever sampled, and there is nothing for a precision attack (Mironov, "On
significance of the least significant bits for differential privacy", CCS 2012) to read.

The draws are vectorised: each step runs on the int64 array of draws still pending. Where a
product could leave int64 (probability below ``1/1000!`` for the parameters that take the
vectorised path), the draw goes on in Python integers from the state it reached, so the law
stays exact.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["SCALE_DENOMINATOR", "MAX_SCALE", "discrete_laplace_scale",
           "sample_discrete_laplace", "discrete_laplace_pmf", "uniform_below",
           "bernoulli_exp"]

#: A discrete Laplace scale is rounded *up* to a multiple of ``1 / SCALE_DENOMINATOR`` (or to
#: an integer above ``2**20``): the noise only grows, so the epsilon charged for the requested
#: scale still covers it, and the draws stay in int64.
SCALE_DENOMINATOR = 2**16

#: Largest scale accepted: the noise of a larger one would not fit the 2**62 saturation bound
#: in any meaningful way.
MAX_SCALE = Fraction(2**56)

_WORD = 2**62
#: Parameters up to this size take the vectorised int64 path.
_FAST_LIMIT = 2**52


def uniform_below(rng: np.random.Generator, n: int) -> int:
    """A uniform integer in ``[0, n)`` for any Python integer ``n >= 1`` (exact)."""
    if n <= _WORD:
        return int(rng.integers(n))
    bits = n.bit_length()
    words = -(-bits // 62)
    while True:
        value = 0
        for _ in range(words):
            value = (value << 62) | int(rng.integers(_WORD))
        value >>= words * 62 - bits
        if value < n:
            return value


def _bernoulli_exp_from(rng: np.random.Generator, num: int, den: int, k: int) -> bool:
    """Algorithm 1 of Canonne, Kamath and Steinke continued from step ``k`` (Python ints).

    Draws ``A_j ~ Bernoulli(num / (den * j))`` for ``j = k, k+1, ...`` until one fails; the
    trial succeeds when that ``j`` is odd. From ``k = 1`` it is ``Bernoulli(exp(-num/den))``
    for ``0 <= num <= den``.
    """
    while uniform_below(rng, den * k) < num:
        k += 1
    return k % 2 == 1


def bernoulli_exp(rng: np.random.Generator, gamma: Fraction) -> bool:
    """True with probability ``exp(-gamma)`` for a rational ``gamma >= 0`` (Python ints)."""
    whole = math.floor(gamma)
    for _ in range(whole):  # exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma))
        if not _bernoulli_exp_from(rng, 1, 1, 1):
            return False
    frac = gamma - whole
    return _bernoulli_exp_from(rng, frac.numerator, frac.denominator, 1)


def _bernoulli_exp_array(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """Independent trials of probability ``exp(-num[i] / den)``, ``0 <= num <= den <= 2**52``."""
    out = np.empty(num.size, dtype=bool)
    k = np.ones(num.size, dtype=np.int64)
    active = np.arange(num.size)
    k_max = _WORD // den  # den * k stays below 2**62 up to here
    while active.size:
        over = k[active] > k_max
        if over.any():  # reached with probability below 1 / k_max!: finish in Python ints
            for i in active[over]:
                out[i] = _bernoulli_exp_from(rng, int(num[i]), den, int(k[i]))
            active = active[~over]
            if not active.size:
                break
        go_on = rng.integers(0, den * k[active]) < num[active]
        stop = active[~go_on]
        out[stop] = (k[stop] % 2) == 1
        active = active[go_on]
        k[active] += 1
    return out


def _geometric_exp1_array(rng: np.random.Generator, size: int) -> np.ndarray:
    """Counts of ``Bernoulli(exp(-1))`` successes before the first failure (exact)."""
    count = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    ones = np.ones(size, dtype=np.int64)
    while active.size:
        success = _bernoulli_exp_array(rng, ones[:active.size], 1)
        active = active[success]
        count[active] += 1
    return count


def _laplace_fast(rng: np.random.Generator, s: int, t: int, size: int) -> np.ndarray:
    """Algorithm 2 of Canonne, Kamath and Steinke on int64 arrays (``s, t <= 2**52``)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        u = rng.integers(0, t, size=pending.size)
        kept = np.flatnonzero(_bernoulli_exp_array(rng, u, t))
        u = u[kept]
        v = _geometric_exp1_array(rng, u.size)
        big = v > (_WORD // t) - 1  # t * v + u would leave int64 (probability ~ exp(-2**10))
        magnitude = np.empty(u.size, dtype=np.int64)
        if big.any():
            for j in np.flatnonzero(big):
                magnitude[j] = min((int(u[j]) + t * int(v[j])) // s, _WORD)
        small = ~big
        magnitude[small] = (u[small] + t * v[small]) // s
        negative = rng.integers(0, 2, size=u.size) == 1
        accept = ~(negative & (magnitude == 0))  # zero would otherwise be counted twice
        done = np.zeros(pending.size, dtype=bool)
        done[kept[accept]] = True
        out[pending[done]] = np.where(negative[accept], -magnitude[accept], magnitude[accept])
        pending = pending[~done]
    return out


def _laplace_slow(rng: np.random.Generator, s: int, t: int) -> int:
    """One draw of Algorithm 2 in Python integers (any positive ``s, t``)."""
    while True:
        u = uniform_below(rng, t)
        if not _bernoulli_exp_from(rng, u, t, 1):
            continue
        v = 0
        while _bernoulli_exp_from(rng, 1, 1, 1):
            v += 1
        magnitude = (u + t * v) // s
        negative = uniform_below(rng, 2) == 1
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def discrete_laplace_scale(scale: Fraction) -> Fraction:
    """The scale a draw uses for a requested ``scale``: rounded up to ``1 / SCALE_DENOMINATOR``.

    Above ``2**20`` it is rounded up to an integer instead (a relative change below
    ``2**-20``). Never smaller than asked, so a privacy charge computed from the requested
    scale covers the draw.

    >>> discrete_laplace_scale(Fraction(1, 3))
    Fraction(10923, 32768)
    >>> discrete_laplace_scale(Fraction(5, 2))
    Fraction(5, 2)
    """
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError("the discrete Laplace scale must be > 0")
    if scale > MAX_SCALE:
        raise ValueError("the discrete Laplace scale must be at most 2**56, the noise of a "
                         "larger one saturates; use a larger epsilon")
    if scale >= 2**20:
        return Fraction(-(-scale.numerator // scale.denominator))
    return Fraction(-((-scale.numerator * SCALE_DENOMINATOR) // scale.denominator),
                    SCALE_DENOMINATOR)


def sample_discrete_laplace(scale: Fraction, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent draws with ``P[Y = y]`` proportional to ``exp(-|y| / scale)``.

    ``scale`` must already be a value of :func:`discrete_laplace_scale` (a rational with a
    small denominator); the result is int64, saturated at ``+-2**62`` (post-processing,
    reached with probability below ``exp(-64)``).

    >>> draws = sample_discrete_laplace(Fraction(2), 5, np.random.default_rng(0))
    >>> draws.dtype.name, draws.shape
    ('int64', (5,))
    """
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError("the discrete Laplace scale must be > 0")
    # exp(-|y| / scale) = exp(-|y| s / t) with scale = t / s
    t, s = scale.numerator, scale.denominator
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    if t <= _FAST_LIMIT and s <= _FAST_LIMIT:
        out = _laplace_fast(rng, s, t, size)
    else:
        out = np.array([max(-_WORD, min(_WORD, _laplace_slow(rng, s, t))) for _ in range(size)],
                       dtype=np.int64)
    return out


def discrete_laplace_pmf(scale: float | Fraction, support: np.ndarray) -> np.ndarray:
    """The exact law ``(1 - r) / (1 + r) * r**|y|`` with ``r = exp(-1 / scale)`` (for tests).

    >>> float(discrete_laplace_pmf(1.0, np.array([0]))[0])  # (1 - 1/e) / (1 + 1/e)
    0.46211715726000974
    """
    r = math.exp(-1.0 / float(scale))
    y = np.abs(np.asarray(support, dtype=np.float64))
    return (1.0 - r) / (1.0 + r) * np.power(r, y)
