"""The target of a continuous exponential mechanism: ``exp(-epsilon loss(y) / (2 sensitivity))``.

:class:`ExponentialDensity` holds the loss, its calibration and the output space, and evaluates
the (unnormalised) log-density. The samplers work on it; the mechanism class that dispatches to
them (:class:`~fastmwem.mechanisms.continuous.ContinuousExponentialMechanism`) extends it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_epsilon, check_positive
from fastmwem.accounting import BoundedRange
from fastmwem.mechanisms.continuous.space import Space, as_points

__all__ = ["ExponentialDensity"]


@dataclass(frozen=True)
class ExponentialDensity:
    """The density ``g(y) = exp(-epsilon * loss(y) / (2 * sensitivity))`` on a compact space.

    Args:
        loss: vectorised loss: an array of shape (n, d) -> n finite losses >= 0. It holds the
            data; the samplers call it only after the privacy budget is charged.
        sensitivity: a bound on ``|loss_X(y) - loss_X'(y)|`` over neighbours and points (> 0).
        epsilon: privacy parameter (> 0).
        space: the output space (:class:`Box`, :class:`Ball`).
        loss_bound: optional data-independent bound ``sup_X sup_y loss_X(y)``; Metropolis uses it
            for its minorisation constant when no sharper ``beta`` is given.
    """

    loss: Callable[[np.ndarray], np.ndarray]
    sensitivity: float
    epsilon: float
    space: Space
    loss_bound: float | None = None

    def __post_init__(self) -> None:
        if not callable(self.loss):
            raise TypeError(f"loss must be callable, got {type(self.loss).__name__}")
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if not isinstance(self.space, Space):
            raise TypeError(f"space must be a Box or Ball, got {type(self.space).__name__}")
        if self.loss_bound is not None:
            object.__setattr__(self, "loss_bound", check_positive(self.loss_bound, "loss_bound"))

    @property
    def dim(self) -> int:
        return self.space.dim

    @property
    def scale(self) -> float:
        """``epsilon / (2 * sensitivity)``, the multiplier of the loss in the log-density."""
        return self.epsilon / (2.0 * self.sensitivity)

    @property
    def privacy(self) -> BoundedRange:
        """The event of one exact draw."""
        return BoundedRange(self.epsilon)

    def evaluate_loss(self, points: object) -> np.ndarray:
        """The loss at ``points`` (n, d), checked: shape (n,), finite, >= 0."""
        pts = as_points(points, self.dim)
        out = np.asarray(self.loss(pts), dtype=np.float64)
        if out.shape != (pts.shape[0],):
            out = out.reshape(-1) if out.size == pts.shape[0] else out
            if out.shape != (pts.shape[0],):
                raise ValueError(
                    f"loss must return one value per point, shape ({pts.shape[0]},), got {out.shape}"
                )
        if not np.all(np.isfinite(out)):
            raise ValueError("loss must return finite values, got a non-finite loss")
        if np.any(out < 0):
            raise ValueError(f"loss must be >= 0, got {float(out.min())}")
        return out

    def log_weight(self, points: object, *, epsilon: float | None = None) -> np.ndarray:
        """``log g(y) = -epsilon * loss(y) / (2 * sensitivity)`` (<= 0) at ``points``."""
        eps = self.epsilon if epsilon is None else epsilon
        return -(eps / (2.0 * self.sensitivity)) * self.evaluate_loss(points)

    def normalising_constant(self, *, grid: int = 2001) -> float:
        """``C = integral of g`` by the midpoint rule (1-D boxes only; for tests and plots)."""
        lower = getattr(self.space, "lower", None)
        if self.dim != 1 or lower is None:
            raise ValueError("normalising_constant is available for 1-D boxes only")
        lo, hi = float(self.space.lower[0]), float(self.space.upper[0])
        mids = lo + (np.arange(grid) + 0.5) * (hi - lo) / grid
        return float(np.exp(self.log_weight(mids[:, None])).sum() * (hi - lo) / grid)
