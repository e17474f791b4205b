"""Explicit random number generators.

Every function in fastmwem that draws randomness takes an ``rng`` keyword and passes it through
:func:`make_rng`. Nothing in the library touches numpy's global random state.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["make_rng", "RNGLike"]

RNGLike = "int | np.random.Generator | None"


def make_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """Return a numpy ``Generator``.

    Args:
        seed: ``None`` for a generator seeded from the operating system's entropy (the default
            for real releases), an ``int`` for a reproducible stream (tests, benchmarks), or an
            existing ``Generator``, which is returned unchanged so that callers share one stream.

    Returns:
        A ``numpy.random.Generator``.

    Raises:
        TypeError: if ``seed`` is of any other type (a float, a legacy ``RandomState``, ...).
        ValueError: if ``seed`` is a negative integer.

    >>> a = make_rng(7).integers(1000)
    >>> b = make_rng(7).integers(1000)
    >>> bool(a == b)
    True
    >>> g = make_rng(1)
    >>> make_rng(g) is g
    True
    """
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"rng must be None, an int seed or a numpy.random.Generator, got {type(seed).__name__}"
        )
    if seed < 0:
        raise ValueError(f"rng seed must be a non-negative integer, got {seed}")
    return np.random.default_rng(int(seed))
