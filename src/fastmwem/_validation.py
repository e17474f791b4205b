"""Argument checks shared by every public entry point.

Each check raises ``TypeError`` for a value of the wrong type and ``ValueError`` for a value out
of range, and names the argument, so that bad input fails before any randomness or budget is used.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys

import numpy as np

__all__ = [
    "check_epsilon",
    "check_noise_scale",
    "check_positive",
    "check_probability",
    "check_int",
    "check_scores",
    "check_memory",
    "holds_big_ints",
    "memory_limit",
    "ResourceLimitError",
    "MAX_NOISE_SCALE",
    "MEMORY_LIMIT_ENV",
]

#: Largest noise scale a mechanism accepts. Laplace and Gumbel draws are at most about 40 times
#: their scale (uniforms have 53 bits), so noise up to this scale never overflows a float.
MAX_NOISE_SCALE = sys.float_info.max / 64

#: Environment variable that overrides the memory limit (bytes, or with a K/M/G/T suffix).
MEMORY_LIMIT_ENV = "FASTMWEM_MEMORY_LIMIT"


class ResourceLimitError(ValueError):
    """A computation would need more memory (or other resources) than the machine has.

    Raised before any randomness or privacy budget is used, with the figures in the message.
    """


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
    """Return a privacy parameter epsilon as a float: finite and at least the smallest normal float.

    A subnormal epsilon (below about 2.2e-308) is refused: its noise scale ``1 / epsilon``
    overflows to infinity, and infinite noise makes outputs that are not merely useless but
    invalid (``inf``, or the same item again and again).
    """
    x = check_positive(value, name)
    if x < sys.float_info.min:
        raise ValueError(
            f"{name} must be at least {sys.float_info.min:.4g} (the smallest normal float), got "
            f"{x:.4g}: its noise scale 1/{name} is not finite"
        )
    return x


def check_noise_scale(numerator: float, epsilon: float, what: str) -> float:
    """Return the noise scale ``numerator / epsilon`` after checking noise of it stays finite.

    Args:
        numerator: the sensitivity (or sensitivity times a count) divided by epsilon.
        epsilon: the epsilon that calibrates the noise (already checked).
        what: names the mechanism or step, for the message.
    """
    with np.errstate(over="ignore", divide="ignore"):
        scale = float(np.float64(numerator) / np.float64(epsilon))
    if not math.isfinite(scale) or scale > MAX_NOISE_SCALE:
        raise ValueError(
            f"{what}: the noise scale {numerator:.4g} / epsilon {epsilon:.4g} is too large "
            f"(above {MAX_NOISE_SCALE:.4g}), so noisy outputs would overflow; use a larger "
            "epsilon"
        )
    return scale


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


def holds_big_ints(arr: np.ndarray) -> bool:
    """Whether ``arr`` is an object array of Python integers (numpy's form for ints beyond int64)."""
    return arr.dtype == object and arr.size > 0 and all(
        isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in arr.flat)


def big_ints_error(name: str) -> TypeError:
    """The error for Python integers that numpy cannot hold as int64 (never converted silently)."""
    return TypeError(f"{name} holds Python integers beyond the 64-bit integer range; pass them "
                     "as floats if that is what you mean")


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
    if holds_big_ints(arr):
        raise big_ints_error(name)
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


_BYTES = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGT]?)I?B?\s*", re.IGNORECASE)


def _parse_bytes(text: str) -> int:
    match = _BYTES.fullmatch(text)
    value = 0.0
    if match:
        value = float(match[1]) * 1024 ** " KMGT".index(match[2].upper() or " ")
    if not match or not math.isfinite(value) or value < 1:
        raise ValueError(
            f"{MEMORY_LIMIT_ENV} must be a number of bytes >= 1 (optionally with a K, M, G or T "
            f"suffix), got {text!r}"
        )
    return int(value)


def memory_limit() -> int:
    """The memory (bytes) a computation may plan to use.

    ``$FASTMWEM_MEMORY_LIMIT`` if set (bytes, or e.g. ``"4G"``); otherwise the machine's physical
    memory, or a cgroup (container) limit when that is smaller.
    """
    override = os.environ.get(MEMORY_LIMIT_ENV)
    if override:
        return _parse_bytes(override)
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system: no limit known
        physical = 2**63
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                physical = min(physical, int(f.read().strip()))
        except (OSError, ValueError):  # absent, unreadable, or "max"
            continue
    return int(physical)


def _size(nbytes: float) -> str:
    for unit, factor in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if nbytes >= factor:
            return f"{nbytes / factor:.1f} {unit}"
    return f"{int(nbytes)} bytes"


def check_memory(nbytes: float, what: str, limit: int | None = None) -> None:
    """Raise :class:`ResourceLimitError` if ``what`` needs more than ``limit`` bytes.

    Args:
        nbytes: the estimated peak memory of the computation.
        what: a description of the computation, for the message.
        limit: the limit in bytes; ``None`` uses :func:`memory_limit`.
    """
    available = memory_limit() if limit is None else int(limit)
    if nbytes > available:
        source = (f"${MEMORY_LIMIT_ENV}" if limit is None and os.environ.get(MEMORY_LIMIT_ENV)
                  else "the memory limit" if limit is not None else "this machine's memory")
        raise ResourceLimitError(
            f"{what} would need about {_size(nbytes)} of memory, more than {source} "
            f"({_size(available)}); reduce the problem size"
        )
