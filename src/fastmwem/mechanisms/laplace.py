"""Additive noise for measurements: Laplace on reals, two-sided geometric on integers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fastmwem._validation import (
    big_ints_error,
    check_epsilon,
    check_noise_scale,
    check_positive,
    holds_big_ints,
)
from fastmwem.accounting import Accountant, PureDP
from fastmwem.mechanisms.base import charge
from fastmwem.random import make_rng

__all__ = ["Laplace", "Geometric"]

_FLOAT_MAX = float(np.finfo(np.float64).max)


def _values(value: object, *, integer: bool) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"value must be a number or an array of numbers, got {type(value).__name__}")
    arr = np.asarray(value)
    if holds_big_ints(arr):
        raise big_ints_error("value")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"value must hold real numbers, got dtype {arr.dtype}")
    if integer and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"value must hold integers for the geometric mechanism, got {arr.dtype}")
    if not integer:
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"value must be finite, got {arr[bad].ravel()[0]}")
    return arr


def _integers(value: object, bound: int) -> np.ndarray:
    """``value`` as int64 after checking every entry lies within ``+-bound``.

    The check happens before the cast: numpy's own conversion of a huge unsigned or Python
    integer would wrap or fail with an unclear message.
    """
    if not isinstance(value, (str, bytes)) and holds_big_ints(np.asarray(value)):
        # numpy keeps integers beyond int64 as Python objects: every such value is out of range
        raise _out_of_range(bound)
    arr = _values(value, integer=True)
    if arr.size and (int(arr.max()) > bound or int(arr.min()) < -bound):
        raise _out_of_range(bound)
    return arr.astype(np.int64)


def _out_of_range(bound: int) -> ValueError:
    # The message names the bound only: the value is private.
    return ValueError(f"value must lie within +-{bound} (2**62) for the geometric mechanism, so "
                      "that the noisy result fits in a 64-bit integer")


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism: adds ``Laplace(0, sensitivity / epsilon)`` noise to each entry.

    Privacy: ``epsilon``-DP (``privacy`` is ``PureDP(epsilon)``) for a value whose L1 norm
    changes by at most ``sensitivity`` between neighbouring datasets (for an array, the L1 norm of
    the whole array). Source: the MWEM paper (arXiv:1012.4763) s.2.1 (Dwork, McSherry, Nissim and Smith 2006).

    Numerics: floating-point Laplace noise; it is not hardened against precision-based attacks
    (Mironov 2012). NaN or infinite values are rejected: releasing them
    would reveal the input. A scale whose noise could overflow (``sensitivity / epsilon`` above
    :data:`~fastmwem._validation.MAX_NOISE_SCALE`) is refused at construction; a noisy value
    beyond the float range saturates at the largest float (post-processing).

    >>> Laplace(epsilon=1.0, sensitivity=2.0).scale
    2.0
    """

    epsilon: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_positive(self.sensitivity, "sensitivity")
        check_noise_scale(float(self.sensitivity), float(self.epsilon), "Laplace")

    @property
    def scale(self) -> float:
        return float(self.sensitivity) / float(self.epsilon)

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def release(self, value: object, *, rng: object = None,
                accountant: Accountant | None = None) -> float | np.ndarray:
        """Return ``value`` plus independent Laplace noise (a float for a scalar input)."""
        arr = _values(value, integer=False).astype(np.float64)
        generator = make_rng(rng)
        charge(accountant, self.privacy, "laplace")
        with np.errstate(over="ignore"):
            noisy = arr + generator.laplace(0.0, self.scale, size=arr.shape)
        # A value near the float range plus large noise can overflow to +-inf; saturating at the
        # largest float is post-processing (no privacy cost) and keeps the output a number.
        noisy = np.clip(noisy, -_FLOAT_MAX, _FLOAT_MAX)
        return float(noisy) if noisy.ndim == 0 else noisy


@dataclass(frozen=True)
class Geometric:
    """The two-sided geometric mechanism on integers (Ghosh, Roughgarden and Sundararajan 2009).

    Adds integer noise ``Z`` with ``P[Z = z]`` proportional to ``exp(-epsilon |z| / sensitivity)``.
    Privacy: ``epsilon``-DP for an integer value (or array) of L1 sensitivity ``sensitivity``.
    The output lies on the integer lattice, so it has no float-precision leak. Values must lie
    within ``+-MAX_VALUE`` (2**62), so that value plus noise fits in int64 (numpy would wrap it
    around silently).
    """

    #: Largest absolute value accepted: the noise is below 2**62 except with probability
    #: ``exp(-2**22)`` at the smallest allowed epsilon / sensitivity.
    MAX_VALUE: ClassVar[int] = 2**62

    epsilon: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        if isinstance(self.sensitivity, bool) or not isinstance(self.sensitivity, (int, np.integer)):
            raise TypeError("sensitivity must be a positive integer for the geometric mechanism")
        if self.sensitivity <= 0:
            raise ValueError(f"sensitivity must be > 0, got {self.sensitivity}")
        # numpy's int64 geometric sampler saturates at 2**63 - 1 when p is tiny; two saturated
        # draws cancel and would release the value without noise. 2**-40 keeps saturation
        # impossible in practice (probability exp(-2**23)).
        if float(self.epsilon) / float(self.sensitivity) < 2.0**-40:
            raise ValueError(
                f"epsilon / sensitivity must be >= 2**-40 for the geometric mechanism, got "
                f"epsilon={self.epsilon}, sensitivity={self.sensitivity}"
            )

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def release(self, value: object, *, rng: object = None,
                accountant: Accountant | None = None) -> int | np.ndarray:
        """Return ``value`` plus independent two-sided geometric noise."""
        arr = _integers(value, self.MAX_VALUE)
        generator = make_rng(rng)
        charge(accountant, self.privacy, "geometric")
        # A difference of two iid geometric variables (support 0, 1, ...) is two-sided geometric.
        p = -math.expm1(-float(self.epsilon) / float(self.sensitivity))
        noise = generator.geometric(p, size=arr.shape) - generator.geometric(p, size=arr.shape)
        # Saturating the noise below 2**62 (reached with probability exp(-2**22)) is
        # post-processing, and keeps the sum inside int64 whatever the draw.
        noise = np.clip(noise, 1 - self.MAX_VALUE, self.MAX_VALUE - 1)
        noisy = arr + noise
        return int(noisy) if noisy.ndim == 0 else noisy
