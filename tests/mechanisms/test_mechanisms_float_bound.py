"""The truncation of numpy's Gumbel noise that docs/exactness.md builds its bound on.

numpy's ``random_gumbel`` returns ``-log(-log(U))`` with ``U = 1 - next_double`` on the grid
``k 2**-53`` (``U == 1`` redrawn), so every noise value lies in ``[G_MIN, G_MAX]``. A candidate
more than ``G_MAX - G_MIN`` (about 40.34) nats below the best is then never selected by
``ExponentialMechanism.select``, where the exact law gives it about ``e**-45`` at 45 nats; at 35
nats its float probability, computed exactly on numpy's grid, is positive.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np

from fastmwem.mechanisms import ExponentialMechanism

N = 2**53
STEP = 2.0**-53

#: The documented extremes of numpy's Gumbel noise (docs/exactness.md).
G_MAX = 36.7368005696771
G_MIN = -3.6037789929704576

DOC = Path(__file__).resolve().parents[2] / "docs" / "exactness.md"


def _gumbel(k: int) -> float:
    """numpy's noise at ``U = k 2**-53`` (C's ``log``, as ``random_gumbel`` calls it)."""
    return -math.log(-math.log(k * STEP))


def _count_below(t: float) -> int:
    """``#{k in 1 .. N - 1 : noise(k) < t}``, by bisection (the noise is non-decreasing in k)."""
    lo, hi = 0, N  # noise(0) = -inf < t <= noise(N) = +inf
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _gumbel(mid) < t:
            lo = mid
        else:
            hi = mid
    return lo


def test_numpy_gumbel_is_minus_log_minus_log_of_one_minus_next_double():
    noise = np.random.Generator(np.random.PCG64(17)).gumbel(size=20_000)
    words = np.random.Generator(np.random.PCG64(17)).random(size=20_000)
    assert np.all(words * 2.0**53 == np.rint(words * 2.0**53))  # the 53-bit grid
    rebuilt = np.array([-math.log(-math.log(1.0 - w)) for w in words])
    assert np.array_equal(noise, rebuilt)


def test_noise_extremes_are_the_documented_constants():
    # U = 1 - next_double: next_double = 2**-53 gives the largest accepted U, 1 - 2**-53 the least
    assert _gumbel(N - 1) == G_MAX
    assert _gumbel(1) == G_MIN
    top = [_gumbel(k) for k in range(N - 64, N)]  # the coarsest end of the grid
    assert top == sorted(top) and max(top) == G_MAX
    text = DOC.read_text(encoding="utf-8")
    assert repr(G_MAX) in text and repr(G_MIN) in text


def test_candidate_45_nats_below_is_never_chosen():
    mech = ExponentialMechanism(epsilon=2.0, sensitivity=1.0)  # scale 1: scores are log-weights
    scores = [0.0, -45.0]
    # the low candidate's noisy value is at most -45 + G_MAX, below the best one's least value
    assert -45.0 + G_MAX < G_MIN
    exact = mech.probabilities(scores)[1]
    assert math.isclose(exact, math.exp(-45.0) / (1.0 + math.exp(-45.0)), rel_tol=1e-9)
    rng = np.random.Generator(np.random.PCG64(2024))
    picks = [mech.select(scores, rng=rng) for _ in range(100_000)]
    assert sum(picks) == 0


def test_candidate_35_nats_below_has_positive_float_probability():
    gap = 35.0
    # exactly on numpy's grid: the low candidate wins only with noise above gap + G_MIN
    total, j = 0, 1
    while True:
        below = _count_below(-gap + _gumbel(N - j))  # the best's noise strictly below (ties: 0)
        if below == 0:
            break
        total += below
        j += 1
    p_float = float(Fraction(total, (N - 1) ** 2))
    p_exact = math.exp(-gap) / (1.0 + math.exp(-gap))
    assert p_float > 0
    # about 9% below the exact law here: the top of the grid is coarse (docs/exactness.md)
    assert 0.85 < p_float / p_exact < 0.95
