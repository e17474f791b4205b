"""Metropolis-Hastings: minorisation constants, delta cost, and the TV bound."""

import math

import numpy as np
import pytest
from scipy import stats

from fastmwem.accounting import ApproxDP
from fastmwem.mechanisms.continuous import (
    LaplaceProposal,
    MeanL1Loss,
    UniformProposal,
    doeblin_constant,
    mean_l1_doeblin_laplace,
    mean_l1_doeblin_uniform,
    metropolis,
    metropolis_delta,
    metropolis_steps,
)

ALPHA = 1e-3  # per-test false-positive rate


# Example 1 of arXiv:2204.01132 (s.3.1), from its closed forms: n, eps, beta_U,
# beta_L(alpha = n eps / 2), beta_L(alpha = 1), m(delta = 1/n) for U / L,
# m(delta = machine epsilon 2.22e-16) for U / L.
TABLE = [
    (10, 0.1, 0.7869, 0.09197, 0.1116, 2, 32, 24, 382),
    (100, 0.01, 0.7869, 0.09197, 0.1116, 4, 55, 24, 381),
    (100, 0.1, 0.1987, 1.135e-4, 1.239e-3, 25, 47131, 167, 324106),
    (1000, 0.01, 0.1987, 1.135e-4, 1.239e-3, 35, 67009, 166, 323699),
]


@pytest.mark.parametrize("row", TABLE)
def test_reference_table(row):
    n, eps, bu, bl, bl1, mu, ml, mu16, ml16 = row
    beta_u = mean_l1_doeblin_uniform(n, eps, 1)
    beta_l = mean_l1_doeblin_laplace(n, eps, 1, n * eps / 2)
    assert math.isclose(beta_u, bu, rel_tol=1e-3)
    assert math.isclose(beta_l, bl, rel_tol=2e-3)
    assert math.isclose(mean_l1_doeblin_laplace(n, eps, 1, 1.0), bl1, rel_tol=2e-3)
    assert metropolis_steps(beta_u, 1 / n, eps) == mu
    assert metropolis_steps(beta_l, 1 / n, eps) == ml
    machine_eps = float(np.finfo(float).eps)
    assert metropolis_steps(beta_u, machine_eps, eps) == mu16
    assert metropolis_steps(beta_l, machine_eps, eps) == ml16


def test_generic_doeblin_matches_example_for_laplace():
    """The general Laplace bound vol (a/2)^d exp(-a D1 - s Lmax) equals Example 1's closed form."""
    loss = MeanL1Loss(np.full((100, 2), 0.4))
    mech = loss.mechanism(0.3)
    a = 2.0
    assert math.isclose(doeblin_constant(mech, LaplaceProposal(a)),
                        mean_l1_doeblin_laplace(100, 0.3, 2, a), rel_tol=1e-12)
    # The generic uniform bound exp(-s Lmax) is valid but weaker than inf_X C_X.
    assert doeblin_constant(mech, UniformProposal()) <= mean_l1_doeblin_uniform(100, 0.3, 2)


def test_delta_and_steps_are_inverse():
    for beta in (0.9, 0.2, 1e-3):
        for delta in (0.1, 1e-6, 1e-300):
            m = metropolis_steps(beta, delta, 1.0)
            assert metropolis_delta(beta, m, 1.0) <= delta
            assert m == 0 or metropolis_delta(beta, m - 1, 1.0) > delta
    assert metropolis_delta(0.5, 5000, 1.0) > 0  # never claims delta = 0


def _empirical_tv(values, loss, eps, start, bins=50):
    """Binned empirical TV with the start point as its own cell (target gives it mass 0)."""
    at_start = np.isclose(values, start, rtol=0, atol=0)
    edges = np.linspace(0, 1, bins + 1)
    counts = np.histogram(values[~at_start], edges)[0] / values.size
    target = np.diff(loss.marginal_cdf(edges, eps))
    return 0.5 * (np.abs(counts - target).sum() + at_start.mean())


@pytest.mark.parametrize("steps", [4, 6, 10, 15])
def test_uniform_chain_tv_below_bound_and_bound_is_tight(steps):
    """Worst case for the uniform independence sampler: data at a corner, chain started at the
    mode. Then TV after m steps equals (1 - beta_U)^m exactly (the start point keeps mass
    (1 - C_X)^m and C_X = beta_U), so the bound its delta uses is both respected and sharp."""
    n, eps = 100, 0.1
    loss = MeanL1Loss(np.zeros(n))
    mech = loss.mechanism(eps)
    beta = mean_l1_doeblin_uniform(n, eps, 1)
    draws = metropolis(mech, size=200000, rng=80 + steps, steps=steps, beta=beta, start=[0.0])
    assert draws.privacy == ApproxDP(eps, metropolis_delta(beta, steps, eps))
    bound = (1 - beta) ** steps
    tv = _empirical_tv(draws.values[:, 0], loss, eps, 0.0)
    margin = 0.02  # binned-TV upward bias plus noise at 200k draws and 51 cells is ~0.007
    assert tv <= bound + margin
    stay = int((draws.values[:, 0] == 0.0).sum())
    assert stats.binomtest(stay, 200000, bound).pvalue > ALPHA
    # Power: beta computed for a wrong epsilon (0.05) claims a bound the chain violates.
    wrong = (1 - mean_l1_doeblin_uniform(n, 0.05, 1)) ** steps
    assert tv > wrong + margin


@pytest.mark.parametrize("start", [None, [0.9]])
def test_laplace_chain_tv_below_bound(start):
    n, eps = 10, 0.5
    loss = MeanL1Loss(np.full(n, 0.2))
    mech = loss.mechanism(eps)
    a = n * eps / 2
    beta = mean_l1_doeblin_laplace(n, eps, 1, a)
    for steps in (120, 300):  # delta_m < 1 needs m >= 116 here
        draws = metropolis(mech, size=40000, rng=90 + steps, steps=steps,
                           proposal=LaplaceProposal(a), beta=beta, start=start)
        s = 0.9 if start else -1.0
        tv = _empirical_tv(draws.values[:, 0], loss, eps, s, bins=25)
        # Binned-TV bias at 40k draws and 26 cells is about 0.01.
        assert tv <= (1 - beta) ** steps + 0.03
        assert tv < 0.04  # the chain has in fact mixed (the bound is loose for this proposal)


def test_long_chain_converges_to_target():
    n, eps = 100, 0.1
    loss = MeanL1Loss(np.full(n, 0.7))
    mech = loss.mechanism(eps)
    beta = mean_l1_doeblin_uniform(n, eps, 1)
    draws = mech.sample_many(20000, rng=5, method="metropolis", delta=1e-9, beta=beta)
    m = metropolis_steps(beta, 1e-9, eps)
    assert np.all(draws.proposals == m)
    assert stats.kstest(draws.values[:, 0], lambda t: loss.marginal_cdf(t, eps)).pvalue > ALPHA
    assert stats.kstest(draws.values[:, 0], lambda t: loss.marginal_cdf(t, 2 * eps)).pvalue < ALPHA
    single = mech.sample(rng=1, method="metropolis", steps=m, beta=beta)
    assert single.value.shape == (1,) and single.privacy == draws.privacy


def test_steps_for_tiny_beta_terminates():
    """beta = 1e-42 (Laplace walk, n = 100, eps = 1) needs ~6e42 steps for delta = 0.01: computed, not looped."""
    beta = mean_l1_doeblin_laplace(100, 1.0, 1, 50.0)
    m = metropolis_steps(beta, 0.01, 1.0)
    assert m > 10**42
    assert metropolis_delta(beta, m, 1.0) <= 0.01
