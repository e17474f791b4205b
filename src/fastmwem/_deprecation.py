"""Deprecated aliases of renamed keywords, fields and methods, kept for one release.

Each alias still works, warns with a :class:`DeprecationWarning` that names its replacement, and
gives the same result as the new name. The warning points at the first caller outside fastmwem,
however deep inside the library the alias is resolved, so that Python's default filters (which
show a ``DeprecationWarning`` raised in ``__main__``) show it to a script that uses the old name.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

__all__ = ["warn_renamed", "renamed_keyword", "renamed_field"]

T = TypeVar("T", bound=type)


def _outside_stacklevel() -> int:
    """The ``stacklevel`` (as seen by this function's caller) of the first frame outside
    fastmwem."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "fastmwem":
        frame = frame.f_back
        level += 1
    return level


def warn_renamed(old: str, new: str, *, where: str) -> None:
    """Warn that ``old`` (of ``where``) is deprecated in favour of ``new``."""
    warnings.warn(f"{where}: {old} is deprecated and will be removed in the next release; use "
                  f"{new} instead", DeprecationWarning, stacklevel=_outside_stacklevel())


def renamed_keyword(old: str, new: str, old_value: object, new_value: object, *, where: str,
                    default: object = None) -> Any:
    """The value of keyword ``new``, taken from its deprecated alias ``old`` when that is given.

    ``old_value`` is None when the alias was not passed. Both given with different values (the
    new one not at its ``default``) is refused, so that neither is silently ignored.
    """
    if old_value is None:
        return new_value
    warn_renamed(f"{old}=", f"{new}=", where=where)
    if new_value != default and new_value != old_value:
        raise ValueError(f"{where}: {old}= is a deprecated alias of {new}=; give {new}= only")
    return old_value


def renamed_field(old: str, new: str) -> Callable[[T], T]:
    """Class decorator (over ``@dataclass``): ``cls(old=...)`` and ``instance.old`` keep working
    as deprecated aliases of the field ``new``.

    The alias is not a field, so ``dataclasses.fields``, ``replace`` and ``asdict`` see only the
    new name.
    """

    def decorate(cls: T) -> T:
        init = cls.__init__  # type: ignore[misc]

        @functools.wraps(init)
        def __init__(self: object, *args: object, **kwargs: object) -> None:
            if old in kwargs:
                kwargs[new] = renamed_keyword(old, new, kwargs.pop(old), kwargs.get(new),
                                              where=cls.__name__)
            init(self, *args, **kwargs)

        def alias(self: object) -> object:
            warn_renamed(old, new, where=cls.__name__)
            return getattr(self, new)

        cls.__init__ = __init__  # type: ignore[misc]
        setattr(cls, old, property(alias, doc=f"Deprecated alias of ``{new}``."))
        return cls

    return decorate
