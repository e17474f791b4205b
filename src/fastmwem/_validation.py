"""Argument checks shared by every public entry point.

Each check raises ``TypeError`` for a value of the wrong type and ``ValueError`` for a value out
of range, and names the argument, so that bad input fails before any randomness or budget is used.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "check_epsilon",
    "check_positive",
    "check_probability",
    "check_int",
    "check_scores",
]


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}: {value!r}")
    return float(value)


def check_positive(value: object, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking it is a finite number > 0."""
    x = _real(value, name)
    if math.isnan(x):
        raise ValueError(f"{name} must be a number > 0, got nan")
    if math.isinf(x) and not (allow_inf and x > 0):
        raise ValueError(f"{name} must be finite and > 0, got {x}")
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    return x


def check_epsilon(value: object, name: str = "epsilon") -> float:
    """Return a privacy parameter epsilon as a float: finite and > 0."""
    return check_positive(value, name)


def check_probability(value: object, name: str, *, open_left: bool = True,
                      open_right: bool = True) -> float:
    """Return ``value`` after checking it lies in the interval (0, 1) (ends as requested)."""
    x = _real(value, name)
    low_ok = x > 0 if open_left else x >= 0
    high_ok = x < 1 if open_right else x <= 1
    if math.isnan(x) or not (low_ok and high_ok):
        left = "(" if open_left else "["
        right = ")" if open_right else "]"
        raise ValueError(f"{name} must lie in {left}0, 1{right}, got {x}")
    return x


def check_int(value: object, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as an int after checking type and bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}: {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_scores(scores: object, name: str = "scores") -> np.ndarray:
    """Return scores as a 1-D float64 array: non-empty, finite, real."""
    if isinstance(scores, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array of real numbers, got {type(scores).__name__}")
    try:
        arr = np.asarray(scores)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{name} must be a 1-D array of real numbers: {exc}") from None
    if arr.dtype == np.bool_:
        # True/False are not scores: a mask passed by mistake would silently become 1/0
        raise TypeError(f"{name} must hold real numbers, not booleans (dtype bool)")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    out = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite: {name}[{i}] = {out[i]}")
    return out
