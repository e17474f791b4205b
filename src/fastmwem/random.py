"""Explicit random number generators.

Every function in fastmwem that draws randomness takes an ``rng`` keyword and passes it through
:func:`make_rng`. Nothing in the library touches numpy's global random state.

By default (``rng=None``) the stream is ChaCha20, a cryptographically strong stream cipher
(randomgen's ``ChaCha``), keyed with 256 bits from the operating system: someone who sees many
outputs cannot recover the state and subtract the noise, as they could for a seeded PCG64 or
Mersenne Twister. An integer seed gives numpy's PCG64 instead:
reproducible, fast, and *not* for real releases.

The generators :func:`secure_rng` and :func:`make_rng` return are tagged with where their key
came from (:func:`generator_origin`), so that a release can tell randomness drawn from the
operating system from a generator the caller made (whose state the caller may know).
"""

from __future__ import annotations

import numbers
import os
from typing import TypeAlias

import numpy as np
from randomgen import ChaCha

__all__ = ["make_rng", "secure_rng", "split_seed", "generator_origin", "RNGLike"]

#: What every ``rng`` argument accepts (see :func:`make_rng`).
RNGLike: TypeAlias = int | np.random.Generator | None

# Private tags: only this module's functions set them, so a Generator the caller builds (over
# ChaCha with a key of their choosing, say) is never taken for one keyed from the OS.
_OS = object()
_SEED = object()


class _TaggedGenerator(np.random.Generator):
    """A ``Generator`` made here; ``_origin`` says where its key came from (unset: unknown)."""

    __slots__ = ("_origin",)
    _origin: object


def _tagged(bit_generator: np.random.BitGenerator, origin: object) -> np.random.Generator:
    generator = _TaggedGenerator(bit_generator)
    generator._origin = origin
    return generator


def generator_origin(generator: object) -> str:
    """Where ``generator``'s key came from: ``"os"``, ``"seed"`` or ``"caller"``.

    ``"os"`` only for a generator :func:`secure_rng` made, ``"seed"`` only for one
    :func:`make_rng` made from an integer seed; anything else (a ``Generator`` built by the
    caller, a copy, a spawned child) is ``"caller"``.

    >>> generator_origin(secure_rng()), generator_origin(make_rng(3))
    ('os', 'seed')
    >>> generator_origin(np.random.default_rng(3))
    'caller'
    """
    origin = getattr(generator, "_origin", None) if type(generator) is _TaggedGenerator else None
    return "os" if origin is _OS else "seed" if origin is _SEED else "caller"


def make_rng(seed: RNGLike = None) -> np.random.Generator:
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
    return _tagged(np.random.PCG64(int(seed)), _SEED)


def secure_rng() -> np.random.Generator:
    """A numpy ``Generator`` over ChaCha20 keyed with 256 bits of operating-system entropy.

    >>> type(secure_rng().bit_generator).__name__
    'ChaCha'
    """
    key = np.frombuffer(os.urandom(32), dtype=np.uint64)
    return _tagged(ChaCha(key=key, counter=0, rounds=20), _OS)


def split_seed(seed: int | None) -> tuple[np.random.Generator, np.random.Generator,
                                          np.random.Generator]:
    """Three independent generators for one run: ``(workload, noise, sampling)``.

    With an integer seed, the children of one ``numpy.random.SeedSequence(seed)``: reproducible,
    tagged as seeded (:func:`generator_origin` says ``"seed"``), and independent of each other,
    so that how much one stream is drawn from (the noise, say, which depends on epsilon) never
    moves another (the public workload). Without a seed, three :func:`secure_rng` generators.

    Raises:
        TypeError, ValueError: as :func:`make_rng` for a seed that is not a non-negative int.

    >>> [generator_origin(g) for g in split_seed(5)], [generator_origin(g) for g in split_seed(None)]
    (['seed', 'seed', 'seed'], ['os', 'os', 'os'])
    >>> a, b = split_seed(5)[0].integers(1000), split_seed(5)[0].integers(1000)
    >>> bool(a == b)
    True
    """
    if seed is None:
        return secure_rng(), secure_rng(), secure_rng()
    make_rng(seed)  # the same checks and errors as a seed given to any release
    workload, noise, sampling = np.random.SeedSequence(int(seed)).spawn(3)
    return (_tagged(np.random.PCG64(workload), _SEED), _tagged(np.random.PCG64(noise), _SEED),
            _tagged(np.random.PCG64(sampling), _SEED))
