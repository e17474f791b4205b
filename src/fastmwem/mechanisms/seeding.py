"""Which randomness a release may call private, and the warnings a release gives otherwise.

Only randomness fastmwem drew from the operating system is private: ``rng=None``, or a generator
:func:`fastmwem.random.secure_rng` made. An integer seed makes the noise reproducible: anyone who
knows it can replay the generator and subtract the noise from every released value. A
``Generator`` the caller made is no better as far as the library can tell (whoever built it may
know its seed or key), so its results are marked ``"caller_rng"``, not private. Seeds and
caller generators are for tests and benchmarks only. (This lives here rather than in
:mod:`fastmwem.random`, which sits below :mod:`fastmwem.data` in the layers and so cannot raise
its :class:`~fastmwem.data.PrivacyLeakWarning`.)
"""

from __future__ import annotations

import numbers
import warnings

from fastmwem.random import RNGLike, generator_origin
from fastmwem.warnings import PrivacyLeakWarning

__all__ = ["SeededRunWarning", "CallerRNGWarning", "is_seed", "rng_provenance", "check_rng",
           "warn_if_seeded"]


class SeededRunWarning(PrivacyLeakWarning):
    """A private release was made with an integer seed, so its noise can be removed."""


class CallerRNGWarning(PrivacyLeakWarning):
    """A release drew its noise from a caller's ``Generator``, so it is not marked private."""


# The caller's generator last warned about: a release that hands it on to another (mwem_auto to
# mwem) or a loop of releases over one generator warns once, not at every call.
_last_warned: list[object] = [None]


def is_seed(rng: RNGLike) -> bool:
    """Whether ``rng`` is an integer seed (a ``Generator`` or ``None`` is not)."""
    return isinstance(rng, numbers.Integral) and not isinstance(rng, bool)


def rng_provenance(rng: RNGLike) -> tuple[str, ...]:
    """Why a release drawn from ``rng`` is not private; ``()`` when it is.

    ``()`` for ``None`` or a generator :func:`~fastmwem.random.secure_rng` made;
    ``("seeded",)`` for an integer seed or a generator :func:`~fastmwem.random.make_rng` made
    from one; ``("caller_rng",)`` for any other ``Generator``.

    >>> import numpy as np
    >>> rng_provenance(None), rng_provenance(7), rng_provenance(np.random.default_rng(7))
    ((), ('seeded',), ('caller_rng',))
    """
    if rng is None:
        return ()
    if is_seed(rng):
        return ("seeded",)
    origin = generator_origin(rng)
    return () if origin == "os" else ("seeded",) if origin == "seed" else ("caller_rng",)


def check_rng(rng: RNGLike, what: str, *, stacklevel: int = 3) -> tuple[str, ...]:
    """:func:`rng_provenance` of ``rng``, warning first when it is not private.

    An integer seed warns (:class:`SeededRunWarning`); a caller's ``Generator`` warns
    (:class:`CallerRNGWarning`) the first time in a row it is seen. The seed is never echoed.

    Args:
        rng: the ``rng`` argument of a releasing function.
        what: the release, named in the message.
        stacklevel: passed to :func:`warnings.warn` (the default points at the caller's caller).
    """
    reasons = rng_provenance(rng)
    if is_seed(rng):
        warnings.warn(
            f"{what} was run with an integer seed: anyone who knows the seed can reproduce the "
            "noise and remove it, so the output is not private. Seeds are for tests only; pass "
            "rng=None for a release.",
            SeededRunWarning,
            stacklevel=stacklevel,
        )
    elif reasons == ("caller_rng",) and _last_warned[0] is not rng:
        _last_warned[0] = rng
        warnings.warn(
            f"{what} drew its noise from a numpy Generator the caller made: whoever knows its "
            "seed or key can reproduce the noise and remove it, so the output is not marked "
            "private. Pass rng=None (or fastmwem.random.secure_rng()) for a release.",
            CallerRNGWarning,
            stacklevel=stacklevel,
        )
    return reasons


def warn_if_seeded(rng: RNGLike, what: str, *, stacklevel: int = 3) -> bool:
    """:func:`check_rng` (it warns alike), returning only whether ``rng`` was seeded."""
    return "seeded" in check_rng(rng, what, stacklevel=stacklevel + 1)
