"""ConfAtomPerfect and RandomAtomPerfect draw exactly from their targets."""

import math

import numpy as np
import pytest
from scipy import stats

from fastmwem.mechanisms.continuous import (
    WORKED_EXAMPLE_DATA,
    Ball,
    LaplaceProposal,
    MeanL1Loss,
    RidgeGradientLoss,
    atom_design,
    atom_perfect,
    random_atom_perfect,
)
from fastmwem.mechanisms.continuous.perfect import discrete_epsilon

ALPHA = 1e-3  # per-test false-positive rate (the seeds are fixed)
N_DRAWS = 20000


def _data_with_mean(mean: float, n: int = 10) -> np.ndarray:
    return np.full(n, mean)


def _design_kwargs(design: str, loss: MeanL1Loss, eps: float) -> dict:
    if design == "A":  # variant U, uniform exit, always-accept (kappa = 1)
        return {}
    if design == "B":  # variant N, k = 0.3
        return {"k": 0.3, "normalising_constant": loss.normalising_constant(eps)}
    return {"exit": loss.laplace_exit(eps)}  # C: Laplace exit at the mean


def test_worked_example_check_values():
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    assert math.isclose(loss.normalising_constant(1.0), 0.349334491, rel_tol=1e-8)
    got = loss.marginal_cdf([0.1, 0.2, 0.3, 0.5, 0.8], 1.0)
    np.testing.assert_allclose(got, [0.0828715, 0.2195034, 0.4447713, 0.8066712, 0.9702934],
                               atol=5e-8)
    assert math.isclose(float(loss.marginal_ppf(0.5, 1.0)), 0.3202884, abs_tol=5e-8)
    assert math.isclose(loss.marginal_mean(1.0), 0.3483133, abs_tol=5e-8)
    np.testing.assert_allclose(loss.marginal_ppf(got, 1.0), [0.1, 0.2, 0.3, 0.5, 0.8], atol=1e-10)
    design = atom_design(loss.mechanism(1.0))
    assert math.isclose(design.atom_weight(loss.normalising_constant(1.0)), 0.7411061, abs_tol=1e-7)
    assert math.isclose(design.expected_atom_proposals(loss.normalising_constant(1.0)), 3.8625859,
                        abs_tol=1e-7)


@pytest.mark.parametrize("design", ["A", "B", "C"])
@pytest.mark.parametrize("mean", [0.3, 0.02, 0.5])
@pytest.mark.parametrize("walk", [False, True])
def test_atom_perfect_ks_against_exact_cdf(design, mean, walk):
    loss = MeanL1Loss(_data_with_mean(mean))
    eps = 1.0
    mech = loss.mechanism(eps)
    kwargs = _design_kwargs(design, loss, eps)
    if walk:
        kwargs["proposal"] = LaplaceProposal(rate=loss.rate(eps))
    seed = 1000 + 10 * "ABC".index(design) + int(100 * mean) + (5 if walk else 0)
    draws = mech.sample_many(N_DRAWS, rng=seed, **kwargs)
    assert draws.values.shape == (N_DRAWS, 1)
    assert np.all((draws.values >= 0) & (draws.values <= 1))
    pvalue = stats.kstest(draws.values[:, 0], lambda t: loss.marginal_cdf(t, eps)).pvalue
    assert pvalue > ALPHA


def test_atom_perfect_ks_power_wrong_epsilon():
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    draws = loss.mechanism(1.0).sample_many(N_DRAWS, rng=7)
    assert stats.kstest(draws.values[:, 0], lambda t: loss.marginal_cdf(t, 1.0)).pvalue > ALPHA
    # Power: the same draws are rejected against the law for epsilon = 1.3.
    assert stats.kstest(draws.values[:, 0], lambda t: loss.marginal_cdf(t, 1.3)).pvalue < ALPHA


@pytest.mark.parametrize("use_laplace_exit", [False, True])
def test_atom_perfect_margins_in_two_dimensions(use_laplace_exit):
    rng = np.random.default_rng(3)
    data = np.column_stack([rng.beta(2, 5, 20), rng.beta(5, 2, 20)])
    loss = MeanL1Loss(data)
    eps = 1.0
    kwargs = {"exit": loss.laplace_exit(eps)} if use_laplace_exit else {}
    draws = loss.mechanism(eps).sample_many(N_DRAWS, rng=11, **kwargs)
    assert draws.values.shape == (N_DRAWS, 2)
    for axis in (0, 1):
        p = stats.kstest(draws.values[:, axis], lambda t, a=axis: loss.marginal_cdf(t, eps, a)).pvalue
        assert p > ALPHA / 2  # Bonferroni over the two margins
    # Power: margin 0 does not follow margin 1's law.
    assert stats.kstest(draws.values[:, 0], lambda t: loss.marginal_cdf(t, eps, 1)).pvalue < ALPHA
    # The margins are independent under the product target: correlation near 0.
    r = np.corrcoef(draws.values.T)[0, 1]
    assert abs(r) < 4.0 / math.sqrt(N_DRAWS)


def test_single_sample_matches_record():
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    draw = loss.mechanism(1.0).sample(rng=5)
    assert draw.value.shape == (1,) and draw.method == "atom"
    assert draw.proposals >= 1 and draw.runs >= 1 and not draw.from_discrete
    again = atom_perfect(loss.mechanism(1.0), rng=5)
    np.testing.assert_array_equal(draw.value, again.value)


@pytest.mark.parametrize("variant", ["U", "N"])
def test_random_atom_mixture_law(variant):
    """Atom mass is k_X (binomial test), the continuous part is mu_X, the discrete part the EM."""
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    eps = 1.0
    mech = loss.mechanism(eps)
    c_x = loss.normalising_constant(eps)
    kwargs = {} if variant == "U" else {"k": 0.3, "normalising_constant": c_x}
    design = atom_design(mech, **kwargs)
    points = np.linspace(0.05, 0.95, 10)[:, None]
    draws = random_atom_perfect(mech, size=N_DRAWS, rng=21, points=points, **kwargs)
    k_x = design.atom_weight(c_x)
    if variant == "N":
        assert math.isclose(k_x, 0.3)
    hits = int(draws.from_discrete.sum())
    assert stats.binomtest(hits, N_DRAWS, k_x).pvalue > ALPHA
    cont = draws.values[~draws.from_discrete, 0]
    assert stats.kstest(cont, lambda t: loss.marginal_cdf(t, eps)).pvalue > ALPHA
    # Discrete part: chi-square against the EM over the points with the library's epsilon split
    # (discrete_epsilon).
    disc = draws.values[draws.from_discrete, 0]
    idx = np.argmin(np.abs(disc[:, None] - points[None, :, 0]), axis=1)
    counts = np.bincount(idx, minlength=points.shape[0])
    eps_d = discrete_epsilon(design, eps)
    assert eps_d == (eps / 2 if variant == "U" else eps)
    logits = -eps_d * loss(points) / (2 * loss.sensitivity)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    assert stats.chisquare(counts, probs * counts.sum()).pvalue > ALPHA
    # Power: the other epsilon for the discrete part is rejected.
    wrong_eps = eps if eps_d == eps / 2 else eps / 2
    wrong = np.exp(-wrong_eps * loss(points) / (2 * loss.sensitivity))
    wrong /= wrong.sum()
    assert stats.chisquare(counts, wrong * counts.sum()).pvalue < ALPHA


def test_ridge_one_dimensional_exactness():
    """Example 2 in p = 1 (the ball is an interval): KS against a numerical CDF."""
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, size=(50, 1))
    z = 0.4 * x[:, 0] + rng.uniform(-0.3, 0.3, 50)
    loss = RidgeGradientLoss(x, z, lam=2.0, radius=1.0)
    eps = 8.0
    mech = loss.mechanism(eps)
    assert isinstance(mech.space, Ball)
    grid = np.linspace(-1, 1, 200001)
    dens = np.exp(-eps * loss(grid[:, None]) / (2 * loss.sensitivity))
    cdf = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(grid))])
    cdf /= cdf[-1]
    draws = mech.sample_many(N_DRAWS, rng=9)
    assert stats.kstest(draws.values[:, 0], lambda t: np.interp(t, grid, cdf)).pvalue > ALPHA
    # Power: the law at a smaller epsilon is rejected.
    dens2 = np.exp(-0.3 * eps * loss(grid[:, None]) / (2 * loss.sensitivity))
    cdf2 = np.concatenate([[0.0], np.cumsum((dens2[1:] + dens2[:-1]) / 2 * np.diff(grid))])
    cdf2 /= cdf2[-1]
    assert stats.kstest(draws.values[:, 0], lambda t: np.interp(t, grid, cdf2)).pvalue < ALPHA


@pytest.mark.parametrize("sampler", ["atom", "random-atom-continuous-part"])
def test_large_sample_margins_in_three_dimensions(sampler):
    """200k draws in d = 3 with a Laplace walk and the Laplace exit: per-margin KS."""
    rng = np.random.default_rng(12)
    data = np.column_stack([rng.beta(1, 1, 30), rng.beta(0.1, 0.1, 30), rng.beta(10, 2, 30)])
    loss = MeanL1Loss(data)
    eps = 2.0
    kwargs = {"exit": loss.laplace_exit(eps), "proposal": LaplaceProposal(loss.rate(eps))}
    mech = loss.mechanism(eps)
    if sampler == "atom":
        values = mech.sample_many(200000, rng=13, **kwargs).values
    else:
        draws = mech.sample_many(200000, rng=14, method="random-atom", n_points=3, **kwargs)
        values = draws.values[~draws.from_discrete]
    for axis in range(3):
        p = stats.kstest(values[:, axis], lambda t, a=axis: loss.marginal_cdf(t, eps, a)).pvalue
        assert p > ALPHA / 3
    assert stats.kstest(values[:, 0], lambda t: loss.marginal_cdf(t, 1.1 * eps, 0)).pvalue < ALPHA


def test_ridge_two_dimensional_margin():
    """Example 2 in p = 2 (a disc): KS of the first coordinate against a numerical marginal."""
    rng = np.random.default_rng(15)
    x = rng.uniform(-1, 1, size=(40, 2))
    z = x @ np.array([0.5, -0.2]) + rng.uniform(-0.2, 0.2, 40)
    loss = RidgeGradientLoss(x, z, lam=1.0, radius=1.0)
    eps = 10.0
    grid = np.linspace(-1, 1, 1201)
    yy = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
    inside = np.einsum("ij,ij->i", yy, yy) <= 1.0
    dens = np.where(inside, np.exp(-eps * loss(yy) / (2 * loss.sensitivity)), 0.0)
    marg = dens.reshape(grid.size, grid.size).sum(axis=1)
    cdf = np.concatenate([[0.0], np.cumsum((marg[1:] + marg[:-1]) / 2)])
    cdf /= cdf[-1]
    draws = loss.mechanism(eps).sample_many(50000, rng=16)
    assert stats.kstest(draws.values[:, 0], lambda t: np.interp(t, grid, cdf)).pvalue > ALPHA
