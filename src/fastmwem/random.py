"""Explicit random number generators.

Every function in fastmwem that draws randomness takes an ``rng`` keyword and passes it through
:func:`make_rng`. Nothing in the library touches numpy's global random state.

By default (``rng=None``) the stream is ChaCha20, a cryptographically strong stream cipher
(randomgen's ``ChaCha``), keyed with 256 bits from the operating system: someone who sees many
outputs cannot recover the state and subtract the noise, as they could for a seeded PCG64 or
Mersenne Twister. An integer seed gives numpy's PCG64 instead:
reproducible, fast, and *not* for real releases.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
from randomgen import ChaCha

__all__ = ["make_rng", "secure_rng", "RNGLike"]

RNGLike = "int | np.random.Generator | None"


def make_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """Return a numpy ``Generator``.

    Args:
        seed: ``None`` for a cryptographically strong generator keyed from the operating
            system (:func:`secure_rng`, the default for real releases), an ``int`` for a
            reproducible PCG64 stream (tests, benchmarks; not secure), or an existing
            ``Generator``, which is returned unchanged so that callers share one stream.

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
        return secure_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"rng must be None, an int seed or a numpy.random.Generator, got {type(seed).__name__}"
        )
    if seed < 0:
        raise ValueError(f"rng seed must be a non-negative integer, got {seed}")
    return np.random.default_rng(int(seed))


def secure_rng() -> np.random.Generator:
    """A numpy ``Generator`` over ChaCha20 keyed with 256 bits of operating-system entropy.

    >>> type(secure_rng().bit_generator).__name__
    'ChaCha'
    """
    key = np.frombuffer(os.urandom(32), dtype=np.uint64)
    return np.random.Generator(ChaCha(key=key, counter=0, rounds=20))
