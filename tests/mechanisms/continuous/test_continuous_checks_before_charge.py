"""What can be checked before the charge is: the loss's contract on public points, batch sizes."""

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.mechanisms.continuous import Ball, Box, ContinuousExponentialMechanism, _common

METHODS = {
    "atom": {},
    "random-atom": {},
    "metropolis": {"steps": 5, "beta": 0.5},
}


def _mech(loss, space=None):
    return ContinuousExponentialMechanism(loss=loss, sensitivity=0.1, epsilon=1.0,
                                          space=Box(0, 1) if space is None else space,
                                          loss_bound=1.0)


def _fresh():
    return Accountant(epsilon=100, delta=0.5)


def _good(points):
    return np.abs(points[:, 0] - 0.3)


BAD_LOSSES = {
    "nan": (lambda p: np.full(p.shape[0], np.nan), ValueError, "finite"),
    "inf": (lambda p: np.full(p.shape[0], np.inf), ValueError, "finite"),
    "negative": (lambda p: np.full(p.shape[0], -3.7), ValueError, ">= 0"),
    # one value per record instead of one per point: the message must not give the count
    "shape": (lambda p: np.full(137, 0.5), ValueError, "one value per point"),
    "text": (lambda p: np.full(p.shape[0], "secret-13"), TypeError, "real numbers"),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad", BAD_LOSSES)
def test_a_loss_breaking_its_contract_is_refused_before_the_charge(method, bad):
    loss, exc, match = BAD_LOSSES[bad]
    acc = _fresh()
    with pytest.raises(exc, match=match) as info:
        _mech(loss).sample_many(3, rng=0, method=method, accountant=acc, **METHODS[method])
    assert acc.spent().epsilon == 0 and acc.ledger == ()
    for value in ("3.7", "137", "secret", "nan", "inf"):
        assert value not in str(info.value)  # no loss value, no shape the loss chose


@pytest.mark.parametrize("method", METHODS)
def test_a_bad_loss_found_after_the_charge_names_no_value(method):
    # Negative only away from the probe points: found while sampling, after the charge; the
    # refusal still names only the rule.
    def loss(points):
        x = points[:, 0]
        return np.where(np.abs(x - 0.6) < 0.1, -0.123, np.abs(x - 0.3))

    with pytest.raises(ValueError, match=">= 0") as info:
        _mech(loss).sample_many(200, rng=0, method=method, **METHODS[method])
    assert "0.123" not in str(info.value)


def test_the_caller_s_public_points_are_checked_too():
    def loss(points):
        return np.where(points[:, 0] == 0.9, np.nan, np.abs(points[:, 0] - 0.3))

    acc = _fresh()
    mech = _mech(loss)
    with pytest.raises(ValueError, match="finite"):
        mech.sample(rng=0, method="random-atom", points=[[0.1], [0.9]], accountant=acc)
    with pytest.raises(ValueError, match="finite"):
        mech.sample(rng=0, method="metropolis", start=[0.9], accountant=acc, **METHODS["metropolis"])
    assert acc.ledger == ()


@pytest.mark.parametrize("space", [
    Box(0, 1), Box([0.1, -2.0, 3.0], [0.3, 5.0, 3.0000001]), Box([-1e100] * 2, [1e100] * 2),
    Ball(center=[0.0], radius=1.0), Ball(center=[0.1, 0.2, 0.3], radius=0.7),
    Ball.centered(50, 1.0 / 3.0), Ball(center=[1e8, -1e8], radius=1e-3),
])
def test_probe_points_are_fixed_points_of_the_space(space):
    points = space.probe_points()
    assert points.ndim == 2 and points.shape[1] == space.dim and points.shape[0] >= 1
    assert space.contains(points).all()
    np.testing.assert_array_equal(points, space.probe_points())


@pytest.mark.parametrize("method", METHODS)
def test_a_batch_too_large_for_memory_is_refused_before_the_charge(method):
    mech = _mech(_good)
    for acc in (None, _fresh()):
        with pytest.raises(ValueError, match="GiB of working memory.*several calls"):
            mech.sample_many(10**12, rng=0, method=method, accountant=acc, **METHODS[method])
        assert acc is None or acc.ledger == ()


@pytest.mark.parametrize("method", METHODS)
def test_the_documented_batch_limit(method, monkeypatch):
    # 100 draws of dimension 1 use 100 * (4 + 16) words: the limit is set to exactly that.
    monkeypatch.setattr(_common, "MAX_BATCH_BYTES", 8 * 20 * 100)
    mech = _mech(_good)
    acc = _fresh()
    assert len(mech.sample_many(100, rng=0, method=method, **METHODS[method])) == 100
    with pytest.raises(ValueError, match="size=101 draws in dimension 1"):
        mech.sample_many(101, rng=0, method=method, accountant=acc, **METHODS[method])
    assert acc.ledger == ()
    if method == "random-atom":
        with pytest.raises(ValueError, match="n_points=10000 candidates"):
            mech.sample(rng=0, method=method, n_points=10_000, accountant=acc)
        assert acc.ledger == ()
