"""The capped KL projection onto s-dense distributions (docs/lp.md, Tests 4 and 5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from fastmwem.lp import dense_projection
from fastmwem.lp.projection import project_log_weights


def _kl_minimiser(p: np.ndarray, s: float) -> np.ndarray:
    """An independent numerical KL projection: minimise sum y log(y / p) over the s-dense
    distributions with SLSQP (no use of the closed form)."""
    m = p.size
    p = p / p.sum()

    def kl(y):
        y = np.maximum(y, 1e-300)
        return float(np.sum(y * np.log(y / p)))

    def grad(y):
        return np.log(np.maximum(y, 1e-300) / p) + 1.0

    start = np.full(m, 1.0 / m)
    res = minimize(kl, start, jac=grad, method="SLSQP", bounds=[(0.0, 1.0 / s)] * m,
                   constraints=[{"type": "eq", "fun": lambda y: y.sum() - 1.0,
                                 "jac": lambda y: np.ones(m)}],
                   options={"ftol": 1e-16, "maxiter": 2000})
    return res.x


def _check_form(y: np.ndarray, lw: np.ndarray, s: float) -> None:
    """``y = min(1/s, c p)`` with a single ``c``: the ratio y/p is one constant on the uncapped."""
    assert abs(y.sum() - 1.0) < 1e-12
    assert y.max() <= (1.0 / s) * (1 + 1e-12)
    uncapped = y < (1.0 / s) * (1 - 1e-9)
    if uncapped.any():
        ratio = np.log(y[uncapped]) - lw[uncapped]
        assert np.ptp(ratio) < 1e-9
        # every capped entry would exceed the cap at that c
        c = ratio.mean()
        assert np.all(lw[~uncapped] + c >= np.log(1.0 / s) - 1e-9)


def test_matches_a_numerical_kl_minimiser_to_1e6():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(25):
        m = int(rng.integers(3, 15))
        s = float(rng.uniform(1.0, m))
        lw = rng.normal(size=m) * 1.5
        y = dense_projection(lw, s)
        ref = _kl_minimiser(np.exp(lw - lw.max()), s)
        worst = max(worst, float(np.abs(y - ref).max()))
    assert worst <= 1e-6


def test_form_sum_cap_and_idempotence():
    rng = np.random.default_rng(1)
    for _ in range(300):
        m = int(rng.integers(1, 60))
        s = float(rng.uniform(1.0, m)) if rng.random() < 0.7 else float(rng.integers(1, m + 1))
        lw = rng.normal(size=m) * rng.choice([0.1, 1.0, 10.0])
        y = dense_projection(lw, s)
        _check_form(y, lw, s)
        again = dense_projection(np.log(y), s)
        np.testing.assert_allclose(again, y, rtol=1e-10, atol=1e-14)


def test_s_equal_1_is_normalisation_and_s_equal_m_is_uniform():
    rng = np.random.default_rng(2)
    lw = rng.normal(size=20) * 3
    p = np.exp(lw - lw.max())
    np.testing.assert_allclose(dense_projection(lw, 1), p / p.sum(), rtol=1e-12)
    np.testing.assert_allclose(dense_projection(lw, 20), np.full(20, 0.05), rtol=1e-12)


def test_extreme_log_weights_keep_their_ratios():
    # exp would underflow every weight but the first; the log-space projection keeps them.
    lw = np.array([0.0, -1000.0, -1001.0, -1002.0])
    y = dense_projection(lw, 2)
    assert y[0] == pytest.approx(0.5)
    np.testing.assert_allclose(y[1:] / y[1], np.exp([0.0, -1.0, -2.0]), rtol=1e-12)
    assert y.sum() == pytest.approx(1.0)
    huge = dense_projection(np.array([1e300, -1e300, 0.0]), 1.5)
    assert np.all(np.isfinite(huge)) and huge.sum() == pytest.approx(1.0)


def test_large_m_partial_sort_agrees_with_full_sort():
    rng = np.random.default_rng(3)
    lw = rng.normal(size=5000) * 4
    for s in (1.0, 7.5, 40.0, 2500.0, 5000.0):
        y = project_log_weights(lw, s)
        # reference: bisection on the scaling constant over all entries
        lo, hi = -50.0, 50.0
        p = lw - lw.max()
        for _ in range(200):
            mid = (lo + hi) / 2
            if np.minimum(1 / s, np.exp(mid + p)).sum() > 1:
                hi = mid
            else:
                lo = mid
        np.testing.assert_allclose(y, np.minimum(1 / s, np.exp(lo + p)), atol=1e-12)


def test_neighbour_lemma():
    """docs/lp.md Test 5: appending a coordinate only lowers the shared ones, and
    s |Pi(w) - Pi(w')|_1 <= 2 (total variation <= 1/s); the bound is attained."""
    rng = np.random.default_rng(4)
    closest = 0.0
    for _ in range(2000):
        m = int(rng.integers(2, 30))
        s = float(rng.uniform(1.0, m))
        lw = rng.normal(size=m) * rng.choice([0.3, 2.0])
        extra = rng.normal() * 3 + rng.choice([0.0, 10.0])
        y = dense_projection(lw, s)
        y2 = dense_projection(np.append(lw, extra), s)
        assert np.all(y2[:m] <= y * (1 + 1e-12) + 1e-300)
        dist = np.abs(np.append(y, 0.0) - y2).sum()
        assert dist == pytest.approx(2 * y2[m], rel=1e-9, abs=1e-15)
        assert s * dist <= 2 + 1e-9
        closest = max(closest, s * dist)
    assert closest > 1.99  # attained: the new row takes a full capped share 1/s


@pytest.mark.parametrize("s", [0.5, 0.999, 21, np.inf, np.nan])
def test_density_outside_1_m_is_refused(s):
    with pytest.raises(ValueError, match="density"):
        dense_projection(np.zeros(20), s)


def test_non_finite_log_weights_are_refused():
    with pytest.raises(ValueError, match="log_weights"):
        dense_projection([0.0, np.nan], 1)
