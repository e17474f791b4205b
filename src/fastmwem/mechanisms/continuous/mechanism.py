"""The exponential mechanism on a compact continuous output space, and its draw records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_epsilon, check_positive
from fastmwem.accounting import Accountant, BoundedRange, PrivacyEvent
from fastmwem.mechanisms.continuous.space import Space, as_points

__all__ = ["ContinuousExponentialMechanism", "ContinuousDraw", "ContinuousDraws", "METHODS"]

METHODS = ("atom", "random-atom", "metropolis")


@dataclass(frozen=True)
class ContinuousDraw:
    """One released point and what producing it cost.

    Attributes:
        value: the released point, shape (d,).
        proposals: number of proposals (evaluations of the loss inside the chain); for
            ``random-atom`` the ``n_points`` discrete scores are counted in ``loss_evaluations``.
        runs: number of Algorithm-1 runs (atom samplers) or 1 (one Metropolis chain).
        loss_evaluations: every point the loss was evaluated at (proposals inside the space plus,
            for ``random-atom``, the discrete candidate points).
        from_discrete: ``random-atom`` only: whether the value came from the discrete mechanism.
        privacy: the privacy event of this draw.
        method: the sampler used.
    """

    value: np.ndarray
    proposals: int
    runs: int
    loss_evaluations: int
    from_discrete: bool
    privacy: PrivacyEvent
    method: str


@dataclass(frozen=True)
class ContinuousDraws:
    """``n`` independent draws (arrays indexed by draw).

    ``privacy`` is the event of one draw; the batch costs its ``n``-fold composition (the
    accountant is charged ``n`` times, atomically).
    """

    values: np.ndarray
    proposals: np.ndarray
    runs: np.ndarray
    loss_evaluations: np.ndarray
    from_discrete: np.ndarray
    privacy: PrivacyEvent
    method: str

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __getitem__(self, i: int) -> ContinuousDraw:
        return ContinuousDraw(
            value=self.values[i].copy(), proposals=int(self.proposals[i]), runs=int(self.runs[i]),
            loss_evaluations=int(self.loss_evaluations[i]),
            from_discrete=bool(self.from_discrete[i]), privacy=self.privacy, method=self.method,
        )


@dataclass(frozen=True)
class ContinuousExponentialMechanism:
    """The exponential mechanism with density ``exp(-epsilon * loss(y) / (2 * sensitivity))``.

    The density is with respect to Lebesgue measure on the compact ``space``. It is sampled
    exactly by :func:`~fastmwem.mechanisms.continuous.atom_perfect` (``method="atom"``), as a
    mixture with a discrete exponential mechanism by
    :func:`~fastmwem.mechanisms.continuous.random_atom_perfect` (``"random-atom"``), or
    approximately by :func:`~fastmwem.mechanisms.continuous.metropolis` (``"metropolis"``).

    Privacy: the exact mechanism is ``epsilon``-DP and ``epsilon``-bounded range, so
    ``privacy`` is ``BoundedRange(epsilon)``; ``random-atom`` is ``PureDP(epsilon)``;
    ``metropolis`` with ``m`` steps is ``ApproxDP(epsilon, delta_m)``. Only the released value is
    covered: the runtime of ``atom`` depends on the data (see ``perfect.py``).

    Sensitivity assumption: for neighbouring datasets (one record changed) and every ``y`` in
    the space, ``|loss_X(y) - loss_X'(y)| <= sensitivity``; the loss is >= 0.
    Source: arXiv:2204.01132 (Seeman, Reimherr and Slavkovic), Def. 2; the samplers follow
    exact-continuous-sampling.md, which corrects the paper's kernel.

    Args:
        loss: vectorised loss: an array of shape (n, d) -> n finite losses >= 0. It holds the
            data; the mechanism calls it only after the privacy budget is charged.
        sensitivity: the bound above (> 0).
        epsilon: privacy parameter (> 0).
        space: the output space (:class:`Box`, :class:`Ball`).
        loss_bound: optional data-independent bound ``sup_X sup_y loss_X(y)``; Metropolis uses it
            for its minorisation constant when no sharper ``beta`` is given.

    >>> from fastmwem.mechanisms.continuous import Box
    >>> mech = ContinuousExponentialMechanism(
    ...     loss=lambda y: np.abs(y[:, 0] - 0.3), sensitivity=0.1, epsilon=1.0, space=Box(0, 1))
    >>> mech.privacy
    BoundedRange(epsilon=1)
    >>> mech.sample(rng=0).value.shape
    (1,)
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

    def _sampler(self, method: str) -> Callable[..., object]:
        from fastmwem.mechanisms.continuous.metropolis import metropolis
        from fastmwem.mechanisms.continuous.perfect import atom_perfect, random_atom_perfect

        table = {"atom": atom_perfect, "random-atom": random_atom_perfect, "metropolis": metropolis}
        if not isinstance(method, str) or method not in table:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        return table[method]

    def sample(self, *, rng: object = None, method: str = "atom",
               accountant: Accountant | None = None, **options: object) -> ContinuousDraw:
        """One draw by ``method``; ``options`` go to the sampler (see its docstring)."""
        sampler = self._sampler(method)
        return sampler(self, rng=rng, accountant=accountant, **options)  # type: ignore[return-value]

    def sample_many(self, n: int, *, rng: object = None, method: str = "atom",
                    accountant: Accountant | None = None, **options: object) -> ContinuousDraws:
        """``n`` independent draws, vectorised across draws; the accountant is charged ``n`` times."""
        sampler = self._sampler(method)
        return sampler(self, size=n, rng=rng, accountant=accountant,  # type: ignore[return-value]
                       **options)

