"""Ready-made losses: the two examples of Seeman, Reimherr and Slavkovic (arXiv:2204.01132, s.3).

* :class:`MeanL1Loss` -- Example 1: the d-dimensional mean with L1 loss on ``[0, 1]^d``,
  ``loss_X(y) = ||y - mean(X)||_1``, sensitivity ``d / n`` (records in ``[0, 1]^d``). Its target
  factorises over coordinates, so every margin has a closed-form CDF (a worked 1-D example with
  check values is ``MeanL1Loss(WORKED_EXAMPLE_DATA)``).
* :class:`RidgeGradientLoss` -- Example 2: ridge regression by the K-norm gradient mechanism,
  ``loss_X(y) = ||X^T (X y - Z) + lambda y||_2`` on the ball of radius ``B``, sensitivity
  ``2 (1 + B) p`` (features in ``[-1, 1]^p``; responses clipped to ``[-1, 1]`` so the bound holds).
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_positive
from fastmwem.mechanisms.continuous.mechanism import ContinuousExponentialMechanism
from fastmwem.mechanisms.continuous.proposals import LaplaceExit
from fastmwem.mechanisms.continuous.space import Ball, Box, as_points
from fastmwem.random import RNGLike, make_rng

__all__ = [
    "MeanL1Loss",
    "RidgeGradientLoss",
    "WORKED_EXAMPLE_DATA",
    "mean_l1_doeblin_uniform",
    "mean_l1_doeblin_laplace",
    "mean_l1_normalising_constant_bounds",
    "ridge_example_data",
]

#: A worked 1-D example: n = 10, mean 0.3; at epsilon = 1, C_X = 0.349334491 and the output's
#: CDF at 0.2 is 0.2195034 (see :class:`MeanL1Loss`).
WORKED_EXAMPLE_DATA = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.3, 0.4, 0.5, 0.6])


def _data(data: object, name: str) -> np.ndarray:
    arr = np.asarray(data, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty (n, d) or (n,) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _rate(n: int, epsilon: float, dim: int) -> float:
    return check_epsilon(epsilon) * n / (2.0 * dim)


def _one_minus_exp(x: np.ndarray | float) -> np.ndarray:
    """``1 - exp(-x)`` for ``x >= 0`` without cancellation."""
    return -np.expm1(-np.asarray(x, dtype=np.float64))


def mean_l1_normalising_constant_bounds(n: int, epsilon: float, dim: int) -> tuple[float, float]:
    """``(inf_X C_X, sup_X C_X)`` for Example 1: ``((1 - e^-c)/c)^d`` and ``(2(1 - e^-c/2)/c)^d``.

    >>> lo, hi = mean_l1_normalising_constant_bounds(10, 1.0, 1)
    >>> round(lo, 6), round(hi, 6)
    (0.198652, 0.367166)
    """
    n = check_int(n, "n", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    c = _rate(n, epsilon, d)
    return float((_one_minus_exp(c) / c) ** d), float((2.0 * _one_minus_exp(c / 2.0) / c) ** d)


def mean_l1_doeblin_uniform(n: int, epsilon: float, dim: int) -> float:
    """Example 1, uniform independence Metropolis: ``beta_U = inf_X C_X`` (paper Eq. 4).

    >>> round(mean_l1_doeblin_uniform(10, 0.1, 1), 4)
    0.7869
    """
    return mean_l1_normalising_constant_bounds(n, epsilon, dim)[0]


def mean_l1_doeblin_laplace(n: int, epsilon: float, dim: int, alpha: float) -> float:
    """Example 1, Laplace random walk of rate ``alpha``: ``(alpha/2)^d exp(-(alpha + c) d)``.

    Here ``c = epsilon n / (2 d)``: the general Laplace-walk bound of
    :func:`~fastmwem.mechanisms.continuous.doeblin_constant` with volume 1, L1 diameter ``d``
    and ``loss_bound = d``.

    >>> round(mean_l1_doeblin_laplace(10, 0.1, 1, 0.5), 5)
    0.09197
    """
    n = check_int(n, "n", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    a = check_positive(alpha, "alpha")
    c = _rate(n, epsilon, d)
    return float(math.exp(d * math.log(a / 2.0) - (a + c) * d))


class MeanL1Loss:
    """Example 1: ``loss_X(y) = ||y - mean(X)||_1`` on ``[0, 1]^d``; sensitivity ``d / n``.

    Args:
        data: records, shape (n, d) or (n,), each in ``[0, 1]^d`` (the public bound that makes
            the sensitivity ``d / n``).

    >>> loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    >>> round(loss.normalising_constant(1.0), 9)
    0.349334491
    >>> round(float(loss.marginal_cdf(0.2, 1.0)), 7)
    0.2195034
    """

    def __init__(self, data: object) -> None:
        arr = _data(data, "data")
        if np.any(arr < 0) or np.any(arr > 1):
            raise ValueError("data must lie in [0, 1]^d (the sensitivity bound d / n needs it)")
        self._center = arr.mean(axis=0)
        self._center.setflags(write=False)
        self.n = int(arr.shape[0])
        self.dim = int(arr.shape[1])
        self.sensitivity = self.dim / self.n
        self.space = Box(np.zeros(self.dim), np.ones(self.dim))
        self.loss_bound = float(self.dim)

    @property
    def center(self) -> np.ndarray:
        """The sample mean (confidential; the atom point ``a`` with loss 0)."""
        return self._center

    def __call__(self, points: np.ndarray) -> np.ndarray:
        pts = as_points(points, self.dim)
        return np.abs(pts - self._center).sum(axis=1)

    def rate(self, epsilon: float) -> float:
        """``c = epsilon / (2 * sensitivity) = epsilon n / (2 d)``."""
        return _rate(self.n, epsilon, self.dim)

    def mechanism(self, epsilon: float) -> ContinuousExponentialMechanism:
        """The exponential mechanism for this loss (with its data-free ``loss_bound = d``).

        With the default uniform exit, an exact draw (``method="atom"``) needs about
        ``1 + (c / 2)^d`` runs of the atom kernel when the mean is inside the cube, ``c =
        epsilon n / (2 d)``: about 2.5 million at ``n = 10, epsilon = 10^6`` (under a second;
        a progress bar appears after 2 s). Pass ``exit=loss.laplace_exit(epsilon)`` to
        ``sample`` for a cost that stays bounded as ``epsilon`` grows: at most
        ``1 + (2 / (1 - e^-c))^d`` runs on average.
        """
        return ContinuousExponentialMechanism(loss=self, sensitivity=self.sensitivity,
                                              epsilon=epsilon, space=self.space,
                                              loss_bound=self.loss_bound)

    def laplace_exit(self, epsilon: float) -> LaplaceExit:
        """Exit density Laplace(mean, rate c) with the data-free ratio bound ``(2 / c)^d``."""
        c = self.rate(epsilon)
        return LaplaceExit(center=self._center, rate=c, ratio_bound=(2.0 / c) ** self.dim)

    def _margin(self, epsilon: float, axis: int) -> tuple[float, float, float]:
        axis = check_int(axis, "axis", minimum=0, maximum=self.dim - 1)
        c = self.rate(epsilon)
        m = float(self._center[axis])
        norm = float(_one_minus_exp(c * m) + _one_minus_exp(c * (1.0 - m))) / c
        return c, m, norm

    def normalising_constant(self, epsilon: float) -> float:
        """``C_X = prod_j (2 - e^{-c m_j} - e^{-c (1 - m_j)}) / c`` (closed form)."""
        return float(np.prod([self._margin(epsilon, j)[2] for j in range(self.dim)]))

    def marginal_cdf(self, t: object, epsilon: float, axis: int = 0) -> np.ndarray:
        """Exact CDF of coordinate ``axis`` of the mechanism's output (closed form)."""
        c, m, norm = self._margin(epsilon, axis)
        tt = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
        left = (np.exp(-c * np.clip(m - tt, 0.0, None)) - math.exp(-c * m)) / (c * norm)
        right = (float(_one_minus_exp(c * m)) + _one_minus_exp(c * np.clip(tt - m, 0.0, None))) / (
            c * norm)
        return np.where(tt <= m, left, right)

    def marginal_ppf(self, q: object, epsilon: float, axis: int = 0) -> np.ndarray:
        """Inverse of :meth:`marginal_cdf`."""
        c, m, norm = self._margin(epsilon, axis)
        qq = np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
        head = float(_one_minus_exp(c * m))
        split = head / (c * norm)
        with np.errstate(divide="ignore"):
            left = m + np.log(np.maximum(qq * c * norm + math.exp(-c * m), 1e-300)) / c
            right = m - np.log(np.maximum(1.0 - (qq * c * norm - head), 1e-300)) / c
        return np.clip(np.where(qq <= split, left, right), 0.0, 1.0)

    def marginal_mean(self, epsilon: float, axis: int = 0) -> float:
        """Exact mean of coordinate ``axis`` of the output."""
        c, m, norm = self._margin(epsilon, axis)
        ea, eb = math.exp(-c * m), math.exp(-c * (1.0 - m))
        first = m * norm * c / c  # m * integral of the weight
        rest = ea * (m / c + 1.0 / c**2) - eb * ((1.0 - m) / c + 1.0 / c**2)
        return float((first + rest) / norm)


class RidgeGradientLoss:
    """Example 2: K-norm gradient mechanism for ridge regression.

    ``loss_X(y) = ||X^T (X y - Z) + lambda y||_2`` on ``{||y||_2 <= B}``; sensitivity
    ``2 (1 + B) p`` when one record ``(x_i, z_i)`` changes, features lie in ``[-1, 1]^p`` and
    responses in ``[-1, 1]`` (responses are clipped to ``[-1, 1]`` here so the bound holds; the
    paper's simulation draws responses that can leave that range).

    Args:
        features: X, shape (n, p), entries in [-1, 1].
        responses: Z, shape (n,); clipped to [-1, 1].
        lam: ridge penalty lambda >= 0.
        radius: B > 0, radius of the output ball.
    """

    def __init__(self, features: object, responses: object, *, lam: float = 2.0,
                 radius: float = 1.0) -> None:
        x = _data(features, "features")
        z = np.asarray(responses, dtype=np.float64).reshape(-1)
        if z.shape[0] != x.shape[0]:
            raise ValueError(f"responses must have {x.shape[0]} entries, got {z.shape[0]}")
        if not np.all(np.isfinite(z)):
            raise ValueError("responses must be finite")
        if np.any(np.abs(x) > 1):
            raise ValueError("features must lie in [-1, 1] (the sensitivity bound needs it)")
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not math.isfinite(lam) \
                or lam < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
        self.radius = check_positive(radius, "radius")
        self.lam = float(lam)
        z = np.clip(z, -1.0, 1.0)
        self.n, self.dim = int(x.shape[0]), int(x.shape[1])
        self._gram = x.T @ x + self.lam * np.eye(self.dim)
        self._xz = x.T @ z
        self.sensitivity = 2.0 * (1.0 + self.radius) * self.dim
        self.space = Ball.centered(self.dim, self.radius)
        p, b = self.dim, self.radius
        # Each record contributes ||x_i (x_i^T y - z_i)|| <= sqrt(p)(sqrt(p) B + 1); plus lambda B.
        self.loss_bound = self.n * math.sqrt(p) * (math.sqrt(p) * b + 1.0) + self.lam * b

    @property
    def solution(self) -> np.ndarray:
        """The ridge solution ``(X^T X + lambda I)^-1 X^T Z`` (confidential; loss 0 there)."""
        return np.linalg.solve(self._gram, self._xz)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        pts = as_points(points, self.dim)
        return np.linalg.norm(pts @ self._gram - self._xz, axis=1)

    def mechanism(self, epsilon: float) -> ContinuousExponentialMechanism:
        return ContinuousExponentialMechanism(loss=self, sensitivity=self.sensitivity,
                                              epsilon=epsilon, space=self.space,
                                              loss_bound=self.loss_bound)


def ridge_example_data(n: int = 100, *, rng: RNGLike = None) -> tuple[np.ndarray, np.ndarray]:
    """The paper's simulated ridge data (arXiv:2204.01132, App. B.5): p = 5.

    ``X_ij ~ Beta(5, 5)``, ``e_i ~ Beta(20, 20)``, ``Z_i = X_i beta* + (2 e_i - 1)`` with
    ``beta* = (1, .2, -.3, 0, 0)``. Responses are returned unclipped.
    """
    n = check_int(n, "n", minimum=1)
    gen = make_rng(rng)
    coef = np.array([1.0, 0.2, -0.3, 0.0, 0.0])
    x = gen.beta(5.0, 5.0, size=(n, coef.size))
    e = gen.beta(20.0, 20.0, size=n)
    return x, x @ coef + (2.0 * e - 1.0)
