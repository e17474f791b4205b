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
            data; the samplers call it only after the privacy budget is charged, apart from a
            check on public points just before the charge (see :meth:`check_loss`).
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
        """The loss at ``points`` (n, d), checked: shape (n,), finite, >= 0.

        The loss holds the data, so a refusal names the rule broken, never a loss value or the
        shape returned (a loss returning one value per record would show the record count).
        """
        pts = as_points(points, self.dim)
        try:
            out = np.asarray(self.loss(pts), dtype=np.float64)
        except (TypeError, ValueError):  # numpy's message would quote what the loss returned
            raise TypeError("loss must return real numbers, one per point") from None
        if out.shape != (pts.shape[0],):
            out = out.reshape(-1) if out.size == pts.shape[0] else out
            if out.shape != (pts.shape[0],):
                raise ValueError(f"loss must return one value per point: shape "
                                 f"({pts.shape[0]},) for {pts.shape[0]} points")
        if not np.all(np.isfinite(out)):
            raise ValueError("loss must return finite values, got a non-finite loss")
        if np.any(out < 0):
            raise ValueError("loss must be >= 0, got a negative loss")
        return out

    def check_loss(self, points: object = None) -> None:
        """Check the loss on public points before a sampler charges the budget.

        The points are the space's :meth:`~Space.probe_points` (fixed, data-independent) and
        ``points`` (the caller's own public points, if any). A loss that returns other than
        finite values >= 0, one per point, breaks the mechanism's contract, which must hold for
        every dataset; such a loss is a caller's bug, refused here before any budget is spent.
        Whether the check passes is therefore part of the contract, not a release: for a loss
        that meets it, the check passes whatever the data. Points the samplers draw later can
        still find a bad value after the charge; the refusal then names only the rule broken.
        These few evaluations are made once per call, whatever the data, and are not counted in
        the draws' ``loss_evaluations``.

        Raises:
            ValueError: a non-finite or negative loss, or not one value per point.
            TypeError: the loss returns something other than real numbers.
        """
        probes = self.space.probe_points()
        if points is not None:
            probes = np.concatenate([probes, as_points(points, self.dim)])
        self.evaluate_loss(probes)

    def log_weight(self, points: object, *, epsilon: float | None = None) -> np.ndarray:
        """``log g(y) = -epsilon * loss(y) / (2 * sensitivity)`` (<= 0) at ``points``."""
        eps = self.epsilon if epsilon is None else epsilon
        return -(eps / (2.0 * self.sensitivity)) * self.evaluate_loss(points)

    def normalising_constant(self, *, grid: int = 2001) -> float:
        """``C = integral of g`` by the midpoint rule (1-D boxes only; for tests and plots)."""
        lower = getattr(self.space, "lower", None)
        upper = getattr(self.space, "upper", None)
        if self.dim != 1 or lower is None or upper is None:
            raise ValueError("normalising_constant is available for 1-D boxes only")
        lo, hi = float(lower[0]), float(upper[0])
        mids = lo + (np.arange(grid) + 0.5) * (hi - lo) / grid
        return float(np.exp(self.log_weight(mids[:, None])).sum() * (hi - lo) / grid)
