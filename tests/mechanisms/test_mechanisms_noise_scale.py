"""Epsilons whose noise scale is not finite are refused up front, by every noise-adding mechanism.

Before, a subnormal epsilon (1e-310) passed validation: Laplace returned +-inf, and pnf-peel
returned the same item again and again. An epsilon just above the subnormal range (1e-307) with
a sensitivity or k above 1 did the same. Geometric wrapped int64 values around silently.
"""

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.mechanisms import ExponentialMechanism, Geometric, Laplace, PermuteAndFlip
from fastmwem.mechanisms.topk.peeling import CDPPeel, GammaTopK, LaplaceTopK, PNFPeel

COUNTS = np.array([50, 30, 10, 5, 0])

SELECTORS = {
    "exponential": lambda eps: ExponentialMechanism(epsilon=eps),
    "permute-and-flip": lambda eps: PermuteAndFlip(epsilon=eps),
}
NOISY = {
    "laplace": lambda eps: Laplace(epsilon=eps, sensitivity=3.0),
    "pnf-peel": lambda eps: PNFPeel(3, eps),
    "cdp-peel": lambda eps: CDPPeel(3, eps),
    "laplace top-k": lambda eps: LaplaceTopK(3, eps),
}


@pytest.mark.parametrize("make", list({**SELECTORS, **NOISY, "geometric": None}.values()),
                         ids=[*SELECTORS, *NOISY, "geometric"])
@pytest.mark.parametrize("epsilon", [1e-310, 5e-324])
def test_subnormal_epsilon_is_refused(make, epsilon):
    make = make or (lambda eps: Geometric(epsilon=eps))
    with pytest.raises(ValueError, match="smallest normal float"):
        make(epsilon)


@pytest.mark.parametrize("make", list(NOISY.values()), ids=list(NOISY))
def test_noise_scale_beyond_the_float_range_is_refused(make):
    with pytest.raises(ValueError, match="noise scale"):
        make(1e-307)


def test_smallest_normal_epsilon_is_accepted_where_the_scale_is_finite():
    ExponentialMechanism(epsilon=2.3e-308).select([0.0, 1.0], rng=0)


@pytest.mark.parametrize("epsilon", [2.3e-308 * 64, 1e-100, 2.0**-57])
def test_laplace_refuses_a_scale_it_cannot_sample_exactly(epsilon):
    # The exact sampler draws scales up to 2**56; the refusal comes before any charge.
    acc = Accountant(epsilon=1)
    with pytest.raises(ValueError, match="above 2\\*\\*56"):
        Laplace(epsilon=epsilon).release(0.0, rng=0, accountant=acc)
    assert acc.ledger == ()


def test_gamma_top_k_refuses_before_the_charge():
    acc = Accountant(epsilon=1)
    with pytest.raises(ValueError, match="noise scale"):
        GammaTopK(3, 1e-307).select(COUNTS, rng=0, accountant=acc)
    assert acc.ledger == ()


@pytest.mark.parametrize("epsilon", [1e-300, 1e-200, 1e-20])
def test_pnf_peel_returns_distinct_items_at_tiny_epsilon(epsilon):
    for seed in range(20):
        out = PNFPeel(3, epsilon).select(COUNTS, rng=seed)
        assert len(set(out.tolist())) == 3


@pytest.mark.parametrize(("integer", "epsilon"), [(False, 2.0**-35), (True, 2.0**-55)])
def test_laplace_output_is_finite_at_the_largest_scale(integer, epsilon):
    # a real value's noise is drawn in grid steps (here 2**-20 for 1,000 entries of
    # sensitivity 1), and a noisy value saturates at 2**53 steps (post-processing)
    out = Laplace(epsilon=epsilon, integer=integer).release(np.zeros(1_000), rng=1)
    assert np.all(np.isfinite(out))
    assert np.abs(out).max() > 1e9  # the noise really is that large


def test_laplace_refuses_values_beyond_its_grid_before_the_charge():
    # Values are rounded to a grid of 2**-10 sensitivity per entry, within 2**52 steps; beyond,
    # they are refused (naming the bound, never the value) rather than saturated silently.
    acc = Accountant(epsilon=1)
    with pytest.raises(ValueError, match="2\\*\\*52 steps") as info:
        Laplace(epsilon=1.0).release(np.array([1.7e308, 12345.678]), rng=0, accountant=acc)
    assert acc.ledger == ()
    assert "1.7" not in str(info.value) and "12345" not in str(info.value)


# -- Geometric on int64 ------------------------------------------------------------------------
@pytest.mark.parametrize("value", [
    np.iinfo(np.int64).max, np.iinfo(np.int64).min, 2**62 + 1, -(2**62) - 1,
    np.array([0, 2**63 - 1]), np.uint64(2**64 - 1),
])
def test_geometric_refuses_values_whose_noisy_result_could_wrap(value):
    acc = Accountant(epsilon=1)
    with pytest.raises(ValueError, match="64-bit integer") as info:
        Geometric(epsilon=1).release(value, rng=0, accountant=acc)
    assert acc.ledger == ()
    assert str(2**63 - 1) not in str(info.value)  # the private value is not echoed


def test_geometric_at_the_bound_does_not_wrap():
    top = Geometric(epsilon=1).release(np.full(1000, 2**62), rng=0)
    bottom = Geometric(epsilon=1).release(np.full(1000, -(2**62)), rng=0)
    assert top.min() > 2**62 - 100 and bottom.max() < -(2**62) + 100


def test_laplace_on_a_coarse_grid_saturates_below_the_largest_float():
    # sensitivity 1e300 makes the grid 2**974: 2**53 steps of it overflowed to inf.
    top = np.finfo(np.float64).max
    out = Laplace(epsilon=1.0, sensitivity=1e300).release(np.full(4000, top), rng=0)
    assert np.all(np.isfinite(out)) and np.all(np.abs(out) <= top)
