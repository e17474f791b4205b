"""Example losses: closed forms and sensitivity bounds."""

import math

import numpy as np
import pytest

from fastmwem.mechanisms.continuous import (
    MeanL1Loss,
    RidgeGradientLoss,
    mean_l1_normalising_constant_bounds,
    ridge_example_data,
)


def test_mean_l1_normalising_constant_matches_quadrature_in_2d():
    rng = np.random.default_rng(0)
    loss = MeanL1Loss(rng.uniform(size=(30, 2)))
    eps = 0.7
    grid = (np.arange(400) + 0.5) / 400
    yy = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
    numeric = np.exp(-eps * loss(yy) / (2 * loss.sensitivity)).mean()
    assert math.isclose(loss.normalising_constant(eps), numeric, rel_tol=1e-4)
    lo, hi = mean_l1_normalising_constant_bounds(30, eps, 2)
    assert lo <= loss.normalising_constant(eps) <= hi
    assert math.isclose(MeanL1Loss(np.zeros((30, 2))).normalising_constant(eps), lo, rel_tol=1e-12)
    assert math.isclose(MeanL1Loss(np.full((30, 2), 0.5)).normalising_constant(eps), hi,
                        rel_tol=1e-12)


def test_mean_l1_sensitivity_holds_for_neighbours():
    rng = np.random.default_rng(1)
    data = rng.uniform(size=(20, 3))
    other = data.copy()
    other[4] = [1.0, 0.0, 1.0] if data[4, 0] < 0.5 else [0.0, 1.0, 0.0]
    a, b = MeanL1Loss(data), MeanL1Loss(other)
    y = rng.uniform(size=(5000, 3))
    assert np.max(np.abs(a(y) - b(y))) <= a.sensitivity + 1e-12
    assert a.sensitivity == 3 / 20 and a.loss_bound == 3.0


def test_mean_l1_laplace_exit_ratio_bound_holds():
    loss = MeanL1Loss(np.random.default_rng(2).uniform(size=(50, 2)))
    eps = 1.0
    ex = loss.laplace_exit(eps)
    y = loss.space.uniform(20000, rng=3)
    log_ratio = -eps * loss(y) / (2 * loss.sensitivity) - ex.log_density(y, loss.space)
    assert np.max(log_ratio) <= math.log(ex.ratio_bound) + 1e-12


def test_ridge_sensitivity_bound_with_clipped_responses():
    rng = np.random.default_rng(4)
    n, p = 40, 3
    x = rng.uniform(-1, 1, size=(n, p))
    z = rng.normal(0, 2, size=n)  # leaves [-1, 1]: the loss clips it
    other_x, other_z = x.copy(), z.copy()
    other_x[0] = np.sign(rng.uniform(-1, 1, p))  # an extreme record
    other_z[0] = -5.0
    a = RidgeGradientLoss(x, z, lam=2.0, radius=1.0)
    b = RidgeGradientLoss(other_x, other_z, lam=2.0, radius=1.0)
    assert a.sensitivity == 2 * 2 * p
    y = a.space.uniform(20000, rng=5)
    y = np.vstack([y, y / np.linalg.norm(y, axis=1, keepdims=True)])  # include the boundary
    diff = np.abs(a(y) - b(y))
    assert np.max(diff) <= a.sensitivity
    assert np.max(a(y)) <= a.loss_bound
    # Without clipping the response, the same change could exceed the stated bound.
    big = np.abs(np.linalg.norm(other_x[0] * (y @ other_x[0] - (-5.0))[:, None], axis=1))
    assert np.max(big) > a.sensitivity / 2


def test_ridge_solution_has_zero_loss_and_example_data():
    x, z = ridge_example_data(100, rng=6)
    assert x.shape == (100, 5) and z.shape == (100,)
    assert np.all((x >= 0) & (x <= 1))
    loss = RidgeGradientLoss(x, z, lam=2.0, radius=1.0)
    sol = loss.solution
    assert loss(sol[None, :])[0] == pytest.approx(0.0, abs=1e-9)
    mech = loss.mechanism(1.0)
    draws = mech.sample_many(200, rng=7)
    assert draws.values.shape == (200, 5)
    assert np.all(np.linalg.norm(draws.values, axis=1) <= 1.0 + 1e-12)
