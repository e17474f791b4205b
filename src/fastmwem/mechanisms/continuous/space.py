"""Compact output spaces for continuous exponential mechanisms.

A space gives what the samplers need and nothing more: its dimension, its volume (the mass of
the base measure, Lebesgue here), its L1 diameter (for the Laplace random-walk minorisation
bound), membership of a batch of points, and uniform draws.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_int, check_positive
from fastmwem.random import RNGLike, make_rng

__all__ = ["Space", "Box", "Ball", "as_points"]

# Where the probe points sit along a segment of the space (0 and 1 are its ends).
_PROBE_STEPS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def as_points(points: object, dim: int, name: str = "points") -> np.ndarray:
    """Return ``points`` as a float64 array of shape (n, dim); a single point (dim,) becomes (1, dim)."""
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim == 1 and arr.shape[0] == dim:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ValueError(f"{name} must have shape (n, {dim}), got {arr.shape}")
    return arr


class Space(abc.ABC):
    """Base class of the output spaces (a compact subset of R^d with Lebesgue base measure)."""

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Dimension d."""

    @property
    @abc.abstractmethod
    def volume(self) -> float:
        """Lebesgue volume."""

    @property
    def log_volume(self) -> float:
        return math.log(self.volume)

    @property
    @abc.abstractmethod
    def l1_diameter(self) -> float:
        """Largest L1 distance between two points of the space."""

    @property
    @abc.abstractmethod
    def interior_point(self) -> np.ndarray:
        """A fixed, data-independent point of the space (used to pad work)."""

    def probe_points(self) -> np.ndarray:
        """Fixed, data-independent points of the space, shape (n, d), at which a sampler checks
        the loss before it charges the budget (here: the interior point)."""
        return self.interior_point[None, :].copy()

    @abc.abstractmethod
    def contains(self, points: object) -> np.ndarray:
        """Boolean membership of each row of ``points`` (shape (n, d))."""

    @abc.abstractmethod
    def uniform(self, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """``size`` uniform draws from the space, shape (size, d)."""


def _vector(value: object, name: str) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array of real numbers, got {type(value).__name__}")
    arr = np.asarray(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = np.atleast_1d(arr.astype(np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr}")
    return arr


@dataclass(frozen=True, eq=False)
class Box(Space):
    """The axis-aligned box ``[lower_1, upper_1] x ... x [lower_d, upper_d]``.

    Args:
        lower: lower corner, a scalar (d = 1) or a 1-D array of length d.
        upper: upper corner, same shape, with ``lower < upper`` in every coordinate.

    >>> box = Box([0.0, 0.0], [1.0, 2.0])
    >>> box.dim, box.volume, box.l1_diameter
    (2, 2.0, 3.0)
    >>> box.contains([[0.5, 1.5], [1.5, 0.0]]).tolist()
    [True, False]
    """

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        lo = _vector(self.lower, "lower")
        hi = _vector(self.upper, "upper")
        if lo.shape != hi.shape:
            raise ValueError(f"lower and upper must have the same shape, got {lo.shape} and {hi.shape}")
        if not np.all(lo < hi):
            raise ValueError(f"upper must exceed lower in every coordinate, got lower={lo}, upper={hi}")
        width = hi - lo
        vol = float(np.prod(width))
        if not (math.isfinite(vol) and vol > 0):
            raise ValueError(f"the box must have a finite positive volume, got {vol}")
        lo.setflags(write=False)
        hi.setflags(write=False)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    def __repr__(self) -> str:
        return f"Box(lower={self.lower.tolist()}, upper={self.upper.tolist()})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Box) and np.array_equal(self.lower, other.lower)
                and np.array_equal(self.upper, other.upper))

    def __hash__(self) -> int:
        return hash((self.lower.tobytes(), self.upper.tobytes()))

    @property
    def dim(self) -> int:
        return int(self.lower.size)

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    @property
    def log_volume(self) -> float:
        return float(np.sum(np.log(self.upper - self.lower)))

    @property
    def l1_diameter(self) -> float:
        return float(np.sum(self.upper - self.lower))

    @property
    def interior_point(self) -> np.ndarray:
        return (self.lower + self.upper) / 2.0

    def probe_points(self) -> np.ndarray:
        """Five points of the main diagonal, from ``lower`` to ``upper`` (both corners)."""
        points = self.lower + _PROBE_STEPS[:, None] * (self.upper - self.lower)
        return np.clip(points, self.lower, self.upper)  # rounding must not leave the box

    def contains(self, points: object) -> np.ndarray:
        """Boolean mask of the points (shape (n, d)) that lie in the closed box."""
        pts = as_points(points, self.dim)
        return np.all((pts >= self.lower) & (pts <= self.upper), axis=1)

    def uniform(self, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """``size`` independent uniform points, shape (size, d)."""
        n = check_int(size, "size", minimum=0)
        gen = make_rng(rng)
        return self.lower + gen.random((n, self.dim)) * (self.upper - self.lower)


@dataclass(frozen=True, eq=False)
class Ball(Space):
    """The closed Euclidean ball ``{y in R^d : ||y - center||_2 <= radius}``.

    >>> ball = Ball(center=[0.0, 0.0], radius=1.0)
    >>> round(ball.volume, 6)
    3.141593
    >>> bool(ball.contains(ball.uniform(100, rng=0)).all())
    True
    """

    center: np.ndarray
    radius: float

    def __post_init__(self) -> None:
        c = _vector(self.center, "center")
        r = check_positive(self.radius, "radius")
        c.setflags(write=False)
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "radius", r)
        if not (math.isfinite(self.log_volume) and self.volume > 0):
            raise ValueError(f"the ball must have a finite positive volume (radius={r}, d={c.size})")

    def __repr__(self) -> str:
        return f"Ball(center={self.center.tolist()}, radius={self.radius})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Ball) and np.array_equal(self.center, other.center)
                and self.radius == other.radius)

    def __hash__(self) -> int:
        return hash((self.center.tobytes(), self.radius))

    @classmethod
    def centered(cls, dim: int, radius: float) -> Ball:
        """The ball of the given radius around the origin of R^dim."""
        return cls(center=np.zeros(check_int(dim, "dim", minimum=1)), radius=radius)

    @property
    def dim(self) -> int:
        return int(self.center.size)

    @property
    def log_volume(self) -> float:
        d = self.dim
        return 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d + 1.0) + d * math.log(self.radius)

    @property
    def volume(self) -> float:
        return math.exp(self.log_volume)

    @property
    def l1_diameter(self) -> float:
        return 2.0 * self.radius * math.sqrt(self.dim)

    @property
    def interior_point(self) -> np.ndarray:
        return self.center.copy()

    def probe_points(self) -> np.ndarray:
        """Five points of a diameter along ``(1, ..., 1)``: both ends, the center and halfway."""
        direction = np.full(self.dim, self.radius / math.sqrt(self.dim))
        points = self.center + (2.0 * _PROBE_STEPS[:, None] - 1.0) * direction
        # Rounding may put an end a hair outside the sphere: pull it back along the diameter
        # (or, should that not do, to the center).
        outside = ~self.contains(points)
        points[outside] = self.center + (points[outside] - self.center) * (1.0 - 1e-9)
        points[~self.contains(points)] = self.center
        return points

    def contains(self, points: object) -> np.ndarray:
        pts = as_points(points, self.dim)
        diff = pts - self.center
        return np.einsum("ij,ij->i", diff, diff) <= self.radius * self.radius

    def uniform(self, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """Uniform points: ``center + radius * U^(1/d) * xi / ||xi||`` with Gaussian ``xi``."""
        n = check_int(size, "size", minimum=0)
        gen = make_rng(rng)
        xi = gen.standard_normal((n, self.dim))
        norms = np.linalg.norm(xi, axis=1)
        # A zero Gaussian vector has probability zero; redraw defensively rather than divide by 0.
        while n and np.any(norms == 0):
            bad = norms == 0
            xi[bad] = gen.standard_normal((int(bad.sum()), self.dim))
            norms = np.linalg.norm(xi, axis=1)
        radii = self.radius * gen.random(n) ** (1.0 / self.dim)
        return self.center + xi * (radii / np.where(norms == 0, 1.0, norms))[:, None]
