"""Privacy events, accountant behaviour, and the budget split of RandomAtomPerfect."""

import math

import numpy as np
import pytest

from fastmwem.accounting import Accountant, ApproxDP, BoundedRange, BudgetExceededError, PureDP
from fastmwem.mechanisms.continuous import (
    WORKED_EXAMPLE_DATA,
    Box,
    ContinuousExponentialMechanism,
    MeanL1Loss,
    atom_design,
    mean_l1_doeblin_uniform,
    metropolis_delta,
)
from fastmwem.mechanisms.continuous.perfect import discrete_epsilon


class CountingLoss:
    """L1 mean loss that records every evaluation (to see when the data is touched)."""

    def __init__(self, mean=0.3, fail=False):
        self.calls = 0
        self.mean = mean
        self.fail = fail

    def __call__(self, points):
        self.calls += 1
        if self.fail:
            raise RuntimeError("data touched")
        return np.abs(points[:, 0] - self.mean)


def _mech(loss, eps=1.0):
    return ContinuousExponentialMechanism(loss=loss, sensitivity=0.1, epsilon=eps, space=Box(0, 1),
                                          loss_bound=1.0)


@pytest.mark.parametrize("method, event", [("atom", BoundedRange(1)), ("random-atom", PureDP(1))])
def test_events_and_charges(method, event):
    acc = Accountant(epsilon=10)
    mech = _mech(CountingLoss())
    draw = mech.sample(rng=0, method=method, accountant=acc)
    assert draw.privacy == event and draw.method == method
    assert acc.spent() == PureDP(1)
    draws = mech.sample_many(4, rng=1, method=method, accountant=acc)
    assert draws.privacy == event and len(draws) == 4
    assert acc.spent() == PureDP(5)
    assert len(acc.ledger) == 5


def test_metropolis_event_and_charge():
    acc = Accountant(epsilon=5, delta=1e-3)
    mech = _mech(CountingLoss())
    beta = 0.5
    draw = mech.sample(rng=0, method="metropolis", steps=20, beta=beta, accountant=acc)
    delta = metropolis_delta(beta, 20, 1.0)
    assert math.isclose(delta, (1 + math.e) * 0.5**20, rel_tol=1e-12)
    assert draw.privacy == ApproxDP(1, delta)
    assert acc.spent().epsilon == 1 and float(acc.spent().delta) >= (1 + math.e) * 0.5**20
    with pytest.raises(ValueError, match="delta"):  # a pure-DP accountant cannot take it
        mech.sample(rng=0, method="metropolis", steps=20, beta=beta, accountant=Accountant(epsilon=5))


@pytest.mark.parametrize("method", ["atom", "random-atom", "metropolis"])
def test_overspend_refused_before_data_is_touched(method):
    acc = Accountant(epsilon=2)
    loss = CountingLoss()
    mech = _mech(loss)
    opts = {"steps": 30, "beta": 0.5} if method == "metropolis" else {}
    if method == "metropolis":
        acc = Accountant(epsilon=2, delta=0.5)
    with pytest.raises(BudgetExceededError):
        mech.sample_many(3, rng=0, method=method, accountant=acc, **opts)
    assert loss.calls == 0
    assert acc.spent().epsilon == 0 and len(acc.ledger) == 0


@pytest.mark.parametrize("method", ["atom", "random-atom", "metropolis"])
def test_charged_before_loss_is_evaluated_off_the_probe_points(method):
    # Before the charge the loss sees only the space's public probe points (its contract is
    # checked there); every other evaluation comes after the charge.
    acc = Accountant(epsilon=3, delta=0.5)
    seen = []

    def loss(points):
        seen.append((acc.spent().epsilon, points.copy()))
        return np.abs(points[:, 0] - 0.3)

    mech = _mech(loss)
    opts = {"steps": 30, "beta": 0.5} if method == "metropolis" else {}
    mech.sample(rng=0, method=method, accountant=acc, **opts)
    assert acc.spent().epsilon == 1 and len(seen) > 1
    assert seen[0][0] == 0
    np.testing.assert_array_equal(seen[0][1], mech.space.probe_points())
    assert all(spent == 1 for spent, _ in seen[1:])
    # A loss that raises there (it breaks its contract for every dataset) spends nothing.
    with pytest.raises(RuntimeError, match="data touched"):
        _mech(CountingLoss(fail=True)).sample(rng=0, method=method, accountant=acc, **opts)
    assert acc.spent().epsilon == 1


def test_bad_options_fail_before_charging():
    acc = Accountant(epsilon=3)
    loss = CountingLoss()
    mech = _mech(loss)
    for bad in ({"w": 1.0}, {"k": 0.0, "normalising_constant": 0.3}, {"kappa": -1.0},
                {"k": 0.3}, {"size": 0}):
        with pytest.raises((ValueError, TypeError)):
            mech.sample(rng=0, accountant=acc, **bad)
    with pytest.raises(TypeError, match="accountant"):
        mech.sample(rng=0, accountant="budget")
    with pytest.raises(TypeError, match="rng"):
        mech.sample(rng=1.5, accountant=acc)
    assert acc.spent() == PureDP(0) and loss.calls == 0


def _random_atom_law(mean, eps, points, variant, eps_disc, kappa=None):
    """Closed-form output law of RandomAtomPerfect for the 1-D L1 mean: continuous density on a
    grid (w.r.t. Lebesgue) and masses at the fixed candidate points."""
    loss = MeanL1Loss(np.full(10, mean))
    c = loss.rate(eps)
    c_x = loss.normalising_constant(eps)
    grid = np.linspace(0, 1, 2001)
    g = np.exp(-c * np.abs(grid - mean))
    if variant == "U":
        kappa = atom_design(loss.mechanism(eps), kappa=kappa).kappa
        cont = g / (kappa + c_x)
        atom = kappa / (kappa + c_x)
    else:
        cont = (1 - 0.3) * g / c_x
        atom = 0.3
    s = np.exp(-eps_disc * np.abs(points - mean) / (2 * loss.sensitivity))
    return cont, atom * s / s.sum()


@pytest.mark.parametrize("variant", ["U", "N"])
def test_random_atom_budget_split_bounds_the_privacy_loss(variant):
    """For neighbours (one record moved by 1, so the mean moves by 1/n) the
    output density/mass ratio stays <= e^eps with the library's discrete epsilon; negative
    control: variant U with the full epsilon for the discrete part exceeds e^eps (visible with a
    small kappa, where the weight kappa / (kappa + C_X) moves most)."""
    eps = 1.0
    points = np.linspace(0.0, 1.0, 41)
    design = atom_design(MeanL1Loss(np.full(10, 0.5)).mechanism(eps),
                         **({} if variant == "U" else {"k": 0.3, "normalising_constant": 0.2}))
    eps_d = discrete_epsilon(design, eps)
    kappas = [None, 0.01] if variant == "U" else [None]
    for kappa in kappas:
        worst = 0.0
        for mean in np.linspace(0.0, 0.9, 10):
            a = _random_atom_law(mean, eps, points, variant, eps_d, kappa)
            b = _random_atom_law(mean + 0.1, eps, points, variant, eps_d, kappa)
            for x, y in zip(a, b):
                worst = max(worst, float(np.max(np.abs(np.log(x) - np.log(y)))))
        assert worst <= eps + 1e-9
    if variant == "U":
        worst_full = 0.0
        for mean in np.linspace(0.0, 0.9, 10):
            a = _random_atom_law(mean, eps, points, variant, eps, 0.01)
            b = _random_atom_law(mean + 0.1, eps, points, variant, eps, 0.01)
            worst_full = max(worst_full, float(np.max(np.abs(np.log(a[1]) - np.log(b[1])))))
        assert worst_full > eps + 0.05


def test_design_constants_match_spec_designs():
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    mech = loss.mechanism(1.0)
    a = atom_design(mech)
    assert a.kappa == 1.0 and a.beta == 0.5 and a.always_accept and a.variant == "U"
    b = atom_design(mech, k=0.3, normalising_constant=loss.normalising_constant(1.0))
    assert math.isclose(b.kappa, 0.1497148, abs_tol=1e-7)
    assert math.isclose(b.beta, 0.0748574, abs_tol=1e-7)
    c = atom_design(mech, exit=loss.laplace_exit(1.0))
    assert math.isclose(c.kappa, 0.4) and c.beta == 0.5
    assert math.isclose(c.atom_weight(loss.normalising_constant(1.0)), 0.5338070, abs_tol=1e-7)
    assert mean_l1_doeblin_uniform(10, 1.0, 1) == pytest.approx(0.198652, abs=1e-6)
