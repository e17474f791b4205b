"""Bad input is rejected with exceptions naming the argument, before any randomness is used."""

import numpy as np
import pytest

from fastmwem.mechanisms.continuous import (
    Ball,
    Box,
    ContinuousExponentialMechanism,
    LaplaceExit,
    LaplaceProposal,
    MeanL1Loss,
    RidgeGradientLoss,
    atom_perfect,
    metropolis,
    random_atom_perfect,
)


def _loss(points):
    return np.abs(points[:, 0] - 0.3)


def _mech(**kw):
    args = {"loss": _loss, "sensitivity": 0.1, "epsilon": 1.0, "space": Box(0, 1)}
    args.update(kw)
    return ContinuousExponentialMechanism(**args)


@pytest.mark.parametrize("kw, exc, name", [
    ({"epsilon": 0.0}, ValueError, "epsilon"),
    ({"epsilon": -1.0}, ValueError, "epsilon"),
    ({"epsilon": float("inf")}, ValueError, "epsilon"),
    ({"epsilon": "1"}, TypeError, "epsilon"),
    ({"sensitivity": 0.0}, ValueError, "sensitivity"),
    ({"loss": 3.0}, TypeError, "loss"),
    ({"space": (0, 1)}, TypeError, "space"),
    ({"loss_bound": -1.0}, ValueError, "loss_bound"),
])
def test_mechanism_rejects(kw, exc, name):
    with pytest.raises(exc, match=name):
        _mech(**kw)


def test_mechanism_is_frozen():
    mech = _mech()
    with pytest.raises(AttributeError):
        mech.epsilon = 2.0


@pytest.mark.parametrize("bad_loss, match", [
    (lambda p: np.full(p.shape[0], np.nan), "finite"),
    (lambda p: np.full(p.shape[0], np.inf), "finite"),
    (lambda p: -np.ones(p.shape[0]), ">= 0"),
    (lambda p: np.ones(p.shape[0] + 1), "one value per point"),
])
def test_bad_losses(bad_loss, match):
    mech = _mech(loss=bad_loss)
    with pytest.raises(ValueError, match="loss"):
        mech.sample(rng=0)
    with pytest.raises(ValueError, match=match):
        mech.evaluate_loss([[0.5]])


@pytest.mark.parametrize("kw, name", [
    ({"w": 0.0}, "w"), ({"w": 1.0}, "w"), ({"w": 1.5}, "w"),
    ({"k": 0.0, "normalising_constant": 0.3}, "k"), ({"k": 1.0, "normalising_constant": 0.3}, "k"),
    ({"k": 0.3}, "normalising_constant"),
    ({"k": 0.3, "kappa": 1.0}, "kappa"),
    ({"kappa": 0.0}, "kappa"),
    ({"k": 0.3, "normalising_constant": 2.0}, "normalising_constant"),
    ({"k": 0.3, "normalising_constant": 0.3, "normalising_constant_lower": 0.5},
     "normalising_constant_lower"),
    ({"normalising_constant": 0.3}, "normalising_constant"),
])
@pytest.mark.parametrize("sampler", [atom_perfect, random_atom_perfect])
def test_kernel_options_rejected(sampler, kw, name):
    with pytest.raises(ValueError, match=name):
        sampler(_mech(), rng=0, **kw)


def test_other_bad_options():
    mech = _mech()
    with pytest.raises(ValueError, match="method"):
        mech.sample(rng=0, method="gibbs")
    with pytest.raises(ValueError, match="size"):
        mech.sample_many(0, rng=0)
    with pytest.raises(TypeError, match="proposal"):
        atom_perfect(mech, rng=0, proposal="laplace")
    with pytest.raises(TypeError, match="exit"):
        atom_perfect(mech, rng=0, exit="uniform")
    with pytest.raises(ValueError, match="rate"):
        LaplaceProposal(rate=0.0)
    with pytest.raises(ValueError, match="ratio_bound"):
        LaplaceExit(center=[0.3], rate=5.0, ratio_bound=0.0)
    with pytest.raises(ValueError, match="dimension"):
        atom_perfect(mech, rng=0, exit=LaplaceExit(center=[0.3, 0.3], rate=5.0, ratio_bound=1.0))
    with pytest.raises(ValueError, match="n_points"):
        random_atom_perfect(mech, rng=0, n_points=0)
    with pytest.raises(ValueError, match="points"):
        random_atom_perfect(mech, rng=0, points=[[1.5]])
    with pytest.raises(TypeError, match="mech"):
        atom_perfect("mech", rng=0)


def test_metropolis_bad_options():
    mech = _mech()
    with pytest.raises(ValueError, match="steps and delta"):
        metropolis(mech, rng=0, beta=0.5)
    with pytest.raises(ValueError, match="steps and delta"):
        metropolis(mech, rng=0, beta=0.5, steps=3, delta=0.1)
    with pytest.raises(ValueError, match="loss_bound"):
        metropolis(mech, rng=0, steps=3)  # no loss_bound and no beta
    with pytest.raises(ValueError, match="too short"):
        metropolis(mech, rng=0, steps=1, beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        metropolis(mech, rng=0, steps=10, beta=0.0)
    with pytest.raises(ValueError, match="delta"):
        metropolis(mech, rng=0, delta=1.0, beta=0.5)
    with pytest.raises(ValueError, match="start"):
        metropolis(mech, rng=0, steps=10, beta=0.5, start=[2.0])


def test_wrong_ratio_bound_is_detected():
    """A LaplaceExit whose ratio bound is too small would bias the draw; the sampler refuses."""
    mech = MeanL1Loss(np.full(10, 0.3)).mechanism(1.0)
    bad_exit = LaplaceExit(center=[0.3], rate=50.0, ratio_bound=0.04)  # true sup g/h is huge
    with pytest.raises(RuntimeError, match="ratio_bound"):
        atom_perfect(mech, size=2000, rng=0, exit=bad_exit)


def test_example_losses_reject_bad_data():
    with pytest.raises(ValueError, match="data"):
        MeanL1Loss([0.5, 1.5])
    with pytest.raises(ValueError, match="data"):
        MeanL1Loss([np.nan])
    with pytest.raises(ValueError, match="features"):
        RidgeGradientLoss(np.full((3, 2), 2.0), np.zeros(3))
    with pytest.raises(ValueError, match="responses"):
        RidgeGradientLoss(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="lam"):
        RidgeGradientLoss(np.zeros((3, 2)), np.zeros(3), lam=-1.0)
    with pytest.raises(ValueError, match="radius"):
        Ball(center=[0.0], radius=0.0)
