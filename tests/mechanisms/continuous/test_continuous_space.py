"""Output spaces: validation, volume, membership and uniform draws."""

import math

import numpy as np
import pytest
from scipy import stats

from fastmwem.mechanisms.continuous import Ball, Box

ALPHA = 1e-3  # false-positive rate of each statistical check below


def test_box_basics():
    box = Box([0.0, -1.0], [2.0, 1.0])
    assert box.dim == 2 and box.volume == 4.0 and box.l1_diameter == 4.0
    assert math.isclose(box.log_volume, math.log(4.0))
    assert box.contains([[0, 0], [2, 1], [2.01, 0], [1, -1.5]]).tolist() == [True, True, False, False]
    assert Box(0, 1) == Box([0.0], [1.0])


@pytest.mark.parametrize("lower, upper", [(1, 1), (1, 0), ([0, 0], [1]), ([0, np.nan], [1, 1]),
                                          ([0, 0], [1, np.inf]), ([], [])])
def test_box_rejects_invalid(lower, upper):
    with pytest.raises(ValueError, match="lower|upper|volume"):
        Box(lower, upper)


def test_box_rejects_non_numeric():
    with pytest.raises(TypeError, match="lower"):
        Box("a", [1.0])


def test_box_uniform_is_uniform():
    box = Box([0.0, 10.0], [1.0, 12.0])
    pts = box.uniform(20000, rng=0)
    assert pts.shape == (20000, 2) and box.contains(pts).all()
    assert stats.kstest(pts[:, 0], "uniform", args=(0, 1)).pvalue > ALPHA
    assert stats.kstest(pts[:, 1], "uniform", args=(10, 2)).pvalue > ALPHA
    # Power: the second margin is not uniform on [10, 11].
    assert stats.kstest(pts[:, 1], "uniform", args=(10, 1)).pvalue < ALPHA


def test_ball_basics_and_uniformity():
    ball = Ball.centered(3, 2.0)
    assert math.isclose(ball.volume, 4.0 / 3.0 * math.pi * 8.0)
    assert ball.contains([[0, 0, 2.0], [0, 0, 2.01]]).tolist() == [True, False]
    pts = ball.uniform(20000, rng=1)
    assert ball.contains(pts).all()
    # Radius law of a uniform point in a d-ball: P(|y| <= r) = (r / R)^d.
    r = np.linalg.norm(pts, axis=1)
    assert stats.kstest(r, lambda t: np.clip(t / 2.0, 0, 1) ** 3).pvalue > ALPHA
    assert stats.kstest(r, lambda t: np.clip(t / 2.0, 0, 1) ** 2).pvalue < ALPHA  # power


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan])
def test_ball_rejects_bad_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        Ball(center=[0.0], radius=radius)
