"""Additive noise for measurements, sampled exactly on a lattice: no raw floating-point noise.

Both mechanisms draw their noise with :func:`~fastmwem.mechanisms.discrete.sample_discrete_laplace`
(integer arithmetic only), so every released value is an integer, or a multiple of a public
power-of-two grid: nothing in it can be read by a precision attack (Mironov, "On significance of
the least significant bits for differential privacy", CCS 2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from fastmwem._validation import (
    big_ints_error,
    check_epsilon,
    check_noise_scale,
    check_positive,
    holds_big_ints,
)
from fastmwem.accounting import Accountant, PureDP, exact
from fastmwem.mechanisms.base import charge
from fastmwem.mechanisms.discrete import (
    MAX_SCALE,
    discrete_laplace_scale,
    sample_discrete_laplace,
)
from fastmwem.random import RNGLike, make_rng

__all__ = ["Laplace", "Geometric", "GRID_BITS", "MAX_GRID_STEPS"]

#: A real value is rounded to a grid ``2**GRID_BITS`` times finer than its sensitivity per entry:
#: the rounding then costs at most ``2**-GRID_BITS`` of the noise scale.
GRID_BITS = 10

#: Values are clamped to ``+-MAX_GRID_STEPS`` grid steps before the noise (clamping is
#: 1-Lipschitz, so the sensitivity holds), so that every output is a float exactly.
MAX_GRID_STEPS = 2**52

_FLOAT_MAX = Fraction(float(np.finfo(np.float64).max))
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




def _exact_scale(sensitivity: object, epsilon: object) -> Fraction:
    """``sensitivity / epsilon`` as the exact rational a draw uses (rounded up, never down)."""
    # A float reads as its binary value in some ledgers and its shortest decimal in others:
    # calibrating to the smaller epsilon and the larger sensitivity covers either charge.
    scale = _largest(sensitivity, "sensitivity") / _smallest(epsilon, "epsilon")
    if scale > MAX_SCALE:
        raise ValueError(
            f"the noise scale sensitivity / epsilon = {float(scale):.4g} is above 2**56: noise "
            "that large would saturate; use a larger epsilon or a smaller sensitivity")
    return discrete_laplace_scale(scale)


def _smallest(value: object, name: str) -> Fraction:
    both = exact(value, name)
    return min(both, Fraction(value)) if isinstance(value, float) else both


def _largest(value: object, name: str) -> Fraction:
    both = exact(value, name)
    return max(both, Fraction(value)) if isinstance(value, float) else both


def grid_of(sensitivity: float, entries: int) -> Fraction:
    """The public grid a real value of ``entries`` entries is rounded to (a power of two).

    ``2**(floor(log2(sensitivity / entries)) - GRID_BITS)``: data-independent, and fine enough
    that the rounding slack (one step per entry) costs at most ``2**-GRID_BITS`` of the noise.

    >>> grid_of(1.0, 1)
    Fraction(1, 1024)
    >>> grid_of(3.0, 2)
    Fraction(1, 1024)
    """
    ratio = exact(sensitivity, "sensitivity") / max(int(entries), 1)
    power = ratio.numerator.bit_length() - ratio.denominator.bit_length()
    if Fraction(2) ** power > ratio:  # make 2**power = largest power of two <= ratio
        power -= 1
    return Fraction(2) ** (power - GRID_BITS)


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism, sampled exactly: discrete Laplace noise on integers or on a grid.

    Privacy: ``epsilon``-DP (``privacy`` is ``PureDP(epsilon)``) for a value (or array) whose L1
    norm changes by at most ``sensitivity`` between neighbouring datasets (Dwork, McSherry, Nissim
    and Smith, "Calibrating Noise to Sensitivity in Private Data Analysis", 2006; the MWEM paper,
    arXiv:1012.4763, s.2.1).

    The noise is never a floating-point sample (see :mod:`fastmwem.mechanisms.discrete`):

    - ``integer=True`` (counts, and any query with integer coefficients): each entry must be an
      integer; the noise ``Z`` has ``P[Z = z]`` proportional to ``exp(-|z| / b)`` with ``b`` the
      scale ``sensitivity / epsilon`` rounded *up* to a multiple of ``2**-16``, the integer
      analogue of Laplace noise. The output is integers (as floats).
    - ``integer=False`` (real values): each of the ``n`` entries is rounded to the nearest
      multiple of the public grid ``g`` of :func:`grid_of`, and discrete Laplace noise of scale
      ``(sensitivity / g + n) / epsilon`` grid steps is added. Rounding moves an entry by at most
      half a step, so the grid values' L1 norm moves by at most ``sensitivity / g + n`` steps
      between neighbours: ``epsilon``-DP exactly, at a noise scale at most ``1 + 2**-GRID_BITS``
      times ``sensitivity / epsilon``. The output lies on the grid.

    Entries beyond ``+-2**52`` grid steps (or integers) are refused before any charge, naming
    the bound only.

    >>> Laplace(epsilon=1.0, sensitivity=2.0).scale
    2.0
    >>> out = Laplace(epsilon=1.0, integer=True).release([3, 4], rng=0)
    >>> bool(np.all(out == np.rint(out)))
    True
    """

    epsilon: float
    sensitivity: float = 1.0
    integer: bool = False

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_positive(self.sensitivity, "sensitivity")
        check_noise_scale(float(self.sensitivity), float(self.epsilon), "Laplace")
        if not isinstance(self.integer, bool):
            raise TypeError(f"integer must be a bool, got {type(self.integer).__name__}")
        # refuses a scale too large to sample (a grid's scale in steps is checked per release:
        # it depends on the number of entries, not on the sensitivity)
        _exact_scale(self.sensitivity if self.integer else 1, self.epsilon)

    @property
    def scale(self) -> float:
        """The nominal Laplace scale ``sensitivity / epsilon`` (the draw's is at most 0.1% more)."""
        return float(self.sensitivity) / float(self.epsilon)

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def grid(self, entries: int) -> Fraction:
        """The grid an output of ``entries`` entries lies on (1 for ``integer=True``)."""
        return Fraction(1) if self.integer else grid_of(self.sensitivity, entries)

    def release(self, value: object, *, rng: RNGLike = None,
                accountant: Accountant | None = None) -> float | np.ndarray:
        """Return ``value`` plus independent noise (a float for a scalar input)."""
        arr = _values(value, integer=False).astype(np.float64)
        n = max(int(arr.size), 1)
        if self.integer:
            steps, unit = _integral(arr), Fraction(1)
            scale = _exact_scale(self.sensitivity, self.epsilon)
        else:
            unit = grid_of(self.sensitivity, n)
            # x / 2**-k is exact in binary floating point: the rounding is the only change
            with np.errstate(over="ignore"):
                steps = _on_grid(arr / float(unit))
            scale = _exact_scale(_largest(self.sensitivity, "sensitivity") / unit + n,
                                 self.epsilon)
        generator = make_rng(rng)
        charge(accountant, self.privacy, "laplace")
        noisy = steps + sample_discrete_laplace(scale, int(arr.size), generator).reshape(arr.shape)
        # Saturating a sum beyond 2**53 steps, or beyond the largest float (a coarse grid), is
        # post-processing and keeps every output a finite, exact float.
        limit = min(2**53, math.floor(_FLOAT_MAX / unit))
        noisy = np.clip(noisy, -limit, limit).astype(np.float64) * float(unit)
        return float(noisy) if noisy.ndim == 0 else noisy


def _integral(arr: np.ndarray) -> np.ndarray:
    """``arr`` as int64 after checking it holds integers within ``+-2**52`` (names no value)."""
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > MAX_GRID_STEPS)
                     or np.any(arr != np.rint(arr))):
        raise ValueError("value must hold integers within +-2**52 for the integer Laplace "
                         "mechanism (integer=True)")
    return arr.astype(np.int64)


def _on_grid(scaled: np.ndarray) -> np.ndarray:
    """Round to the nearest grid step, after checking the steps lie within ``+-2**52``."""
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.rint(scaled)
    if steps.size and not np.all(np.abs(steps) <= MAX_GRID_STEPS):
        raise ValueError("value must lie within +-2**52 steps of its grid (sensitivity * 2**42 "
                         "per entry) for the Laplace mechanism; scale it down or use a larger "
                         "sensitivity")
    return steps.astype(np.int64)


@dataclass(frozen=True)
class Geometric:
    """The two-sided geometric (discrete Laplace) mechanism on integers, sampled exactly.

    Adds integer noise ``Z`` with ``P[Z = z]`` proportional to ``exp(-|z| / b)``, where ``b`` is
    ``sensitivity / epsilon`` rounded up to a multiple of ``2**-16`` (Ghosh, Roughgarden and
    Sundararajan, "Universally Utility-Maximizing Privacy Mechanisms", 2009; sampled with
    integer arithmetic only as in Canonne, Kamath and Steinke, arXiv:2004.00010, Algorithm 2).
    Privacy: ``epsilon``-DP for an integer value (or array) of L1 sensitivity ``sensitivity``.
    Values must lie within ``+-MAX_VALUE`` (2**62), so that value plus noise fits in int64.
    """

    #: Largest absolute value accepted.
    MAX_VALUE: ClassVar[int] = 2**62

    epsilon: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        if isinstance(self.sensitivity, bool) or not isinstance(self.sensitivity, (int, np.integer)):
            raise TypeError("sensitivity must be a positive integer for the geometric mechanism")
        if self.sensitivity <= 0:
            raise ValueError(f"sensitivity must be > 0, got {self.sensitivity}")
        if float(self.epsilon) / float(self.sensitivity) < 2.0**-40:
            raise ValueError(
                f"epsilon / sensitivity must be >= 2**-40 for the geometric mechanism, got "
                f"epsilon={self.epsilon}, sensitivity={self.sensitivity}"
            )

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    @property
    def scale(self) -> Fraction:
        """The exact scale ``b`` of the noise (``sensitivity / epsilon``, rounded up)."""
        return _exact_scale(int(self.sensitivity), self.epsilon)

    def release(self, value: object, *, rng: RNGLike = None,
                accountant: Accountant | None = None) -> int | np.ndarray:
        """Return ``value`` plus independent two-sided geometric noise."""
        arr = _integers(value, self.MAX_VALUE)
        scale = self.scale
        generator = make_rng(rng)
        charge(accountant, self.privacy, "geometric")
        noise = sample_discrete_laplace(scale, int(arr.size), generator).reshape(arr.shape)
        # Saturating the noise below 2**62 is post-processing and keeps the sum inside int64.
        noise = np.clip(noise, 1 - self.MAX_VALUE, self.MAX_VALUE - 1)
        noisy = arr + noise
        return int(noisy) if noisy.ndim == 0 else noisy
