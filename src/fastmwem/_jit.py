"""numba compilation with the on-disk cache where numba can write one, without it elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["njit_cached"]

F = TypeVar("F", bound=Callable[..., object])


def njit_cached(function: F, **options: Any) -> F:
    """``numba.njit(cache=True, **options)(function)``, or without the cache if numba has nowhere
    to write it.

    numba caches next to the source file (``__pycache__``), else under ``NUMBA_CACHE_DIR`` or
    the user's cache folder in ``HOME``; when none is writable (a read-only installation run with
    an unwritable or missing ``HOME``, as in many containers and services), ``njit(cache=True)``
    raises ``RuntimeError`` as the function is decorated, which would make ``import fastmwem``
    fail. The cache only saves compile time, so the function is then compiled at each process's
    first call instead.
    """
    from numba import njit

    try:
        return njit(cache=True, **options)(function)
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
        return njit(**options)(function)
