"""Proposal kernels Q (moves inside the space) and exit densities h (moves out of the atom).

* :class:`UniformProposal` -- the independence proposal ``q(y, .) = 1 / vol(Y)`` on ``Y``.
* :class:`LaplaceProposal` -- the random walk ``q(y, y') = (rate / 2)^d exp(-rate ||y - y'||_1)``;
  a proposal outside ``Y`` is rejected (the chain stays), which keeps ``q`` symmetric.
* :class:`UniformExit` -- exit density ``h = 1 / vol(Y)``; ``sup g / h <= vol(Y)`` holds for every
  dataset because ``g <= 1``.
* :class:`LaplaceExit` -- exit density ``h`` = product Laplace centred at ``center`` (usually the
  confidential answer), untruncated; mass off ``Y`` is rejected. The caller states a
  data-independent ``ratio_bound >= sup_y g_X(y) / h(y)``.

Source: Seeman, Reimherr and Slavkovic, arXiv:2204.01132, s.2.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_positive
from fastmwem.mechanisms.continuous.space import Space, as_points

__all__ = ["UniformProposal", "LaplaceProposal", "UniformExit", "LaplaceExit",
           "Proposal", "ExitDensity"]


@dataclass(frozen=True)
class UniformProposal:
    """Independence proposal: a fresh uniform point of the space, whatever the current state.

    >>> UniformProposal()
    UniformProposal()
    """

    def propose(self, current: np.ndarray, space: Space, rng: np.random.Generator) -> np.ndarray:
        return space.uniform(current.shape[0], rng=rng)


@dataclass(frozen=True)
class LaplaceProposal:
    """Symmetric Laplace random walk with the given ``rate`` (inverse scale) in each coordinate.

    >>> LaplaceProposal(rate=5.0).rate
    5.0
    """

    rate: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", check_positive(self.rate, "rate"))

    def propose(self, current: np.ndarray, space: Space, rng: np.random.Generator) -> np.ndarray:
        return current + rng.laplace(0.0, 1.0 / self.rate, size=current.shape)


Proposal = UniformProposal | LaplaceProposal


@dataclass(frozen=True)
class UniformExit:
    """Exit density ``h = 1 / vol(Y)`` on the space."""

    def bound(self, space: Space) -> float:
        """``sup_y g(y) / h(y) <= vol(Y)``, valid for every dataset since ``g <= 1``."""
        return space.volume

    def sample(self, size: int, space: Space, rng: np.random.Generator) -> np.ndarray:
        return space.uniform(size, rng=rng)

    def log_density(self, points: np.ndarray, space: Space) -> np.ndarray:
        return np.full(points.shape[0], -space.log_volume)


@dataclass(frozen=True, eq=False)
class LaplaceExit:
    """Exit density: product Laplace centred at ``center`` with ``rate`` (untruncated).

    Args:
        center: the centre ``a`` (typically the confidential answer; it may depend on the data,
            the output law does not).
        rate: inverse scale in each coordinate.
        ratio_bound: an upper bound on ``sup_{y in Y} g_X(y) / h(y)`` that holds for the data at
            hand; for the runtime of ``random_atom_perfect`` to be data-independent and for the
            atom weight ``kappa`` derived from it to be data-independent, it must hold for every
            dataset and must not itself depend on the data. For the L1 mean (Example 1) with
            ``rate <= c = epsilon n / (2 d)`` the bound ``(2 / rate)^d`` works.

    If the stated bound is wrong, the sampler detects it at the first visited point where it
    fails and raises ``RuntimeError`` rather than return a draw of the wrong law.
    """

    center: np.ndarray
    rate: float
    ratio_bound: float

    def __post_init__(self) -> None:
        c = np.atleast_1d(np.asarray(self.center, dtype=np.float64))
        if c.ndim != 1 or not np.all(np.isfinite(c)):
            raise ValueError(f"center must be a finite 1-D point, got {self.center!r}")
        c.setflags(write=False)
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "rate", check_positive(self.rate, "rate"))
        object.__setattr__(self, "ratio_bound", check_positive(self.ratio_bound, "ratio_bound"))

    def __repr__(self) -> str:
        return (f"LaplaceExit(center={self.center.tolist()}, rate={self.rate}, "
                f"ratio_bound={self.ratio_bound})")

    def _check(self, space: Space) -> None:
        if self.center.size != space.dim:
            raise ValueError(
                f"center has dimension {self.center.size} but the space has dimension {space.dim}"
            )

    def bound(self, space: Space) -> float:
        """The caller's bound on ``sup_y g(y) / h(y)``."""
        self._check(space)
        return self.ratio_bound

    def sample(self, size: int, space: Space, rng: np.random.Generator) -> np.ndarray:
        self._check(space)
        return self.center + rng.laplace(0.0, 1.0 / self.rate, size=(size, space.dim))

    def log_density(self, points: np.ndarray, space: Space) -> np.ndarray:
        pts = as_points(points, space.dim)
        d = space.dim
        return d * math.log(self.rate / 2.0) - self.rate * np.abs(pts - self.center).sum(axis=1)


ExitDensity = UniformExit | LaplaceExit
