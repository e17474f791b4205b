"""The warning a release made from an integer seed gives.

A seed makes the noise reproducible: anyone who knows it can replay the generator and subtract
the noise from every released value. Seeds are for tests and benchmarks only. (This lives here
rather than in :mod:`fastmwem.random`, which sits below :mod:`fastmwem.data` in the layers and so
cannot raise its :class:`~fastmwem.data.PrivacyLeakWarning`.)
"""

from __future__ import annotations

import numbers
import warnings

from fastmwem.data.warnings import PrivacyLeakWarning

__all__ = ["SeededRunWarning", "is_seed", "warn_if_seeded"]


class SeededRunWarning(PrivacyLeakWarning):
    """A private release was made with an integer seed, so its noise can be removed."""


def is_seed(rng: object) -> bool:
    """Whether ``rng`` is an integer seed (a ``Generator`` or ``None`` is not)."""
    return isinstance(rng, numbers.Integral) and not isinstance(rng, bool)


def warn_if_seeded(rng: object, what: str, *, stacklevel: int = 3) -> bool:
    """Warn (:class:`SeededRunWarning`) when ``rng`` is an integer seed; return whether it was.

    A ``Generator`` passed in is the caller's business and does not warn; ``None`` draws from
    the operating system.

    Args:
        rng: the ``rng`` argument of a releasing function.
        what: the release, named in the message.
        stacklevel: passed to :func:`warnings.warn` (the default points at the caller's caller).
    """
    if not is_seed(rng):
        return False
    warnings.warn(
        f"{what} was run with an integer seed: anyone who knows the seed can reproduce the noise "
        "and remove it, so the output is not private. Seeds are for tests only; pass rng=None "
        "for a release.",
        SeededRunWarning,
        stacklevel=stacklevel,
    )
    return True
