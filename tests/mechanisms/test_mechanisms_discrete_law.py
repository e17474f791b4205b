"""The exact discrete Laplace sampler and the mechanisms on it: laws, lattice, and an attack.

Laws: Pearson chi-square against the exact pmf at ALPHA = 1e-4 (a correct sampler fails with
probability 1e-4 per test; the seeds are fixed, so the run is deterministic), each with a power
check: the same test must reject a scale (or epsilon) off by 10%.

Attack: Mironov, "On significance of the least significant bits for differential privacy"
(CCS 2012). numpy's Laplace sampler maps ``U = k * 2**-53`` monotonically to the noise, so a
released float ``y`` pins down which ``U`` could have produced it from a candidate true value;
for many ``y`` none can from the neighbouring value ``t + 1``. The check below runs that exact
test. It rules out ``t + 1`` for a large share of raw float releases (the power check), and for
none of the released values of the mechanisms here, which are integers or grid multiples.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.mechanisms import Geometric, Laplace
from fastmwem.mechanisms.discrete import (
    _bernoulli_exp_array,
    discrete_laplace_pmf,
    discrete_laplace_scale,
    sample_discrete_laplace,
)
from fastmwem.mechanisms.laplace import grid_of
from fastmwem.mechanisms.sparse_vector import SparseVector
from fastmwem.testing import chi_square_pvalue

ALPHA = 1e-4
N = 200_000


def _binned(draws: np.ndarray, scale: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts on ``-reach..reach`` plus the two tails, and the exact law of the same bins."""
    clipped = np.clip(draws, -reach - 1, reach + 1) + reach + 1
    counts = np.bincount(clipped, minlength=2 * reach + 3)
    core = discrete_laplace_pmf(scale, np.arange(-reach, reach + 1))
    r = math.exp(-1.0 / scale)
    tail = r ** (reach + 1) / (1 + r)  # P[Y > reach] = P[Y < -reach]
    return counts, np.concatenate([[tail], core, [tail]])


def _pvalue(draws: np.ndarray, scale: float) -> float:
    reach = max(3, int(6 * scale))
    counts, law = _binned(draws, scale, reach)
    assert law.sum() == pytest.approx(1.0)
    return chi_square_pvalue(counts, law)


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(40),
                                   discrete_laplace_scale(Fraction(10, 7))])
def test_sampler_law(scale):
    draws = sample_discrete_laplace(scale, N, np.random.default_rng(11))
    assert draws.dtype == np.int64
    assert _pvalue(draws, float(scale)) > ALPHA


@pytest.mark.parametrize("factor", [0.9, 1.1])
@pytest.mark.parametrize("scale", [Fraction(1), Fraction(5, 2)])
def test_sampler_law_power(scale, factor):
    draws = sample_discrete_laplace(scale, N, np.random.default_rng(12))
    assert _pvalue(draws, float(scale) * factor) < ALPHA


def test_sampler_python_integer_path_has_the_same_law():
    # t and s above 2**52 take the Python-integer path; the scale is 1 + 2**-53
    scale = Fraction(2**53 + 1, 2**53)
    draws = sample_discrete_laplace(scale, 20_000, np.random.default_rng(13))
    assert _pvalue(draws, float(scale)) > ALPHA
    assert _pvalue(draws, 1.25) < ALPHA


def test_bernoulli_exp_continues_exactly_past_the_int64_range():
    # den = 2**61 leaves int64 after k = 2 steps: the rest runs in Python integers
    rng = np.random.default_rng(14)
    n, den = 40_000, 2**61
    hits = _bernoulli_exp_array(rng, np.full(n, den // 2, dtype=np.int64), den).sum()
    p = math.exp(-0.5)
    z = (hits - n * p) / math.sqrt(n * p * (1 - p))
    assert abs(z) < 4.5  # two-sided, below 1e-5


def test_scale_is_rounded_up_never_down():
    for scale in [Fraction(1, 3), Fraction(2, 7), Fraction(10**7, 3), Fraction(3, 10**9)]:
        rounded = discrete_laplace_scale(scale)
        assert rounded >= scale
        assert rounded - scale <= (Fraction(1, 2**16) if scale < 2**20 else 1)
    with pytest.raises(ValueError, match="2\\*\\*56"):
        discrete_laplace_scale(Fraction(2**57))


# -- mechanisms ------------------------------------------------------------------------------
@pytest.mark.parametrize(("eps", "sens"), [(1.0, 1.0), (0.3, 2.0), (2.5, 1.0)])
def test_integer_laplace_law(eps, sens):
    out = Laplace(epsilon=eps, sensitivity=sens, integer=True).release(np.full(N, 7.0), rng=15)
    assert np.all(out == np.rint(out))
    assert _pvalue((out - 7).astype(np.int64), sens / eps) > ALPHA
    assert _pvalue((out - 7).astype(np.int64), sens / (eps * 1.1)) < ALPHA  # power


def _coarse(draws: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts in bins of a quarter scale (out to 6 scales) and their exact probabilities."""
    width = max(1, int(scale / 4))
    edges = np.arange(-24 * width, 24 * width + 1, width)  # bin [e_j, e_{j+1}), plus tails
    r = math.exp(-1.0 / scale)

    def below(k: np.ndarray) -> np.ndarray:  # P[Y < k], exactly, for integers k
        k = k.astype(np.float64)
        return np.where(k <= 0, r ** (-k + 1) / (1 + r), 1 - r**k / (1 + r))

    cdf = np.concatenate([[0.0], below(edges), [1.0]])
    law = np.diff(cdf)
    counts = np.bincount(np.searchsorted(edges, draws, side="right"), minlength=law.size)
    return counts, law


@pytest.mark.parametrize(("eps", "sens"), [(1.0, 1.0), (0.5, 3.0)])
def test_grid_laplace_lies_on_its_grid_with_the_stated_law(eps, sens):
    n = 1_000
    mech = Laplace(epsilon=eps, sensitivity=sens)
    grid = grid_of(sens, n)
    assert mech.grid(n) == grid and grid.numerator == 1
    assert grid.denominator & (grid.denominator - 1) == 0  # a power of two
    value = np.linspace(-3.3, 1e6, n)
    draws = np.concatenate([mech.release(value, rng=seed) for seed in range(100)])
    steps = draws / float(grid)
    assert np.all(steps == np.rint(steps))  # exactly on the grid
    noise = (steps - np.tile(np.rint(value / float(grid)), 100)).astype(np.int64)
    # the stated law: discrete Laplace of (sensitivity / grid + n) / epsilon grid steps
    scale = (sens / float(grid) + n) / eps
    assert chi_square_pvalue(*_coarse(noise, scale)) > ALPHA
    assert chi_square_pvalue(*_coarse(noise, scale * 1.1)) < ALPHA  # power


def test_integer_laplace_refuses_fractions_before_the_charge():
    acc = Accountant(epsilon=1)
    with pytest.raises(ValueError, match="integers") as info:
        Laplace(epsilon=1.0, integer=True).release(np.array([3.0, 4.25]), rng=0, accountant=acc)
    assert acc.ledger == () and "4.25" not in str(info.value)


# -- the precision attack ----------------------------------------------------------------------
def float_laplace_could_give(y: float, t: float, scale: float) -> bool:
    """Whether numpy's ``t + Generator.laplace(0, scale)`` can equal the float ``y`` exactly.

    numpy draws ``U = k * 2**-53`` and returns ``scale * log(2U)`` for ``U < 1/2``, else
    ``-scale * log(2 - 2U)``; the noisy value is ``t + noise``. Every ``k`` whose noise lands
    within a few ulps of ``y - t`` is tried.
    """
    gap = y - t
    spread = 4 * math.ulp(y) + 4 * math.ulp(gap)
    lo, hi = gap - spread, gap + spread
    if gap < 0:  # U < 1/2, noise = scale * log(2U) increases with U
        u_lo, u_hi = math.exp(lo / scale) / 2, math.exp(hi / scale) / 2
        noise = lambda u: scale * math.log(u + u)  # noqa: E731
    else:  # U >= 1/2, noise = -scale * log(2 - 2U) increases with U
        u_lo, u_hi = 1 - math.exp(-lo / scale) / 2, 1 - math.exp(-hi / scale) / 2
        noise = lambda u: -scale * math.log(2.0 - u - u)  # noqa: E731
    k_lo, k_hi = math.floor(u_lo * 2**53) - 2, math.ceil(u_hi * 2**53) + 2
    if k_hi - k_lo > 10_000:
        return True  # so many grid points cover the gap that some lands on y
    for k in range(max(k_lo, 1), min(k_hi, 2**53 - 1) + 1):
        u = k * 2.0**-53
        if (u < 0.5) == (gap < 0) and t + noise(u) == y:
            return True
    return False


def _true_counts(n: int) -> np.ndarray:
    return np.random.default_rng(16).integers(0, 20, size=n).astype(np.float64)  # sparse cells


def test_attack_rules_out_neighbours_of_raw_float_laplace():
    # The power check: the attack works against the raw float noise that was released before.
    t = _true_counts(1_000)
    y = t + np.random.default_rng(17).laplace(0.0, 1.0, size=t.size)
    assert all(float_laplace_could_give(a, b, 1.0) for a, b in zip(y, t))  # sound
    ruled_out = sum(not float_laplace_could_give(a, b + 1, 1.0) for a, b in zip(y, t))
    assert ruled_out > 100


@pytest.mark.parametrize("integer", [True, False])
def test_attack_rules_out_no_neighbour_of_released_values(integer):
    t = _true_counts(1_000)
    mech = Laplace(epsilon=1.0, sensitivity=1.0, integer=integer)
    y = mech.release(t, rng=18)
    grid = float(mech.grid(t.size))
    # The law of y given a true value c is a discrete Laplace on c's grid point plus the
    # grid: y is possible from t + 1 exactly when y - round(t + 1) is a whole number of steps,
    # and then the likelihood ratio to t is within the mechanism's epsilon.
    steps_from_t = (y - np.rint(t / grid) * grid) / grid
    steps_from_neighbour = (y - np.rint((t + 1) / grid) * grid) / grid
    assert np.all(steps_from_neighbour == np.rint(steps_from_neighbour))  # none ruled out
    # and the likelihood ratio of t + 1 to t is at most e^epsilon for every released value
    scale = 1.0 / grid + (0 if integer else t.size)  # in steps, at epsilon 1
    ratio = (np.abs(steps_from_t) - np.abs(steps_from_neighbour)) / scale
    assert np.all(np.abs(ratio) <= 1.0 + 1e-12)


# -- no floating-point sampler on any noise path ------------------------------------------------
class IntegerOnlyGenerator(np.random.Generator):
    """A generator whose floating-point samplers fail: only bounded integers may be drawn."""

    def _float(self, *args, **kwargs):
        raise AssertionError("a floating-point sampler was called on a release path")

    random = laplace = geometric = exponential = standard_exponential = _float
    gumbel = uniform = normal = standard_normal = poisson = binomial = _float


def _integer_only() -> IntegerOnlyGenerator:
    return IntegerOnlyGenerator(np.random.PCG64(20))


@pytest.mark.parametrize("release", [
    lambda rng: Laplace(epsilon=0.7).release(np.array([0.25, 3.5]), rng=rng),
    lambda rng: Laplace(epsilon=0.7, integer=True).release(np.array([2.0, 3.0]), rng=rng),
    lambda rng: Geometric(epsilon=0.7, sensitivity=2).release(np.array([2, 3]), rng=rng),
    lambda rng: SparseVector(epsilon=1.0).start(5, rng=rng).test(3),
], ids=["laplace grid", "laplace integer", "geometric", "sparse vector"])
def test_noise_is_drawn_from_integers_only(release):
    release(_integer_only())
