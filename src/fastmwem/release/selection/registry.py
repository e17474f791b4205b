"""The registry of round selections by name: ``selection="exponential"`` and the others."""

from __future__ import annotations

from collections.abc import Callable

from fastmwem.release.selection.base import RoundSelection
from fastmwem.release.selection.lazy import LazySelection
from fastmwem.release.selection.scan import ScanSelection

__all__ = ["register_selection", "resolve_selection", "selection_names"]


def _scan(mechanism: str) -> Callable[..., RoundSelection]:
    def make(**options: object) -> RoundSelection:
        if options:
            raise ValueError(f"selection {mechanism!r} takes no options, got {sorted(options)} "
                             "(index=, k= and allow_uncertified= are for selection='lazy')")
        return ScanSelection(mechanism)

    return make


_REGISTRY: dict[str, Callable[..., RoundSelection]] = {
    "exponential": _scan("exponential"),
    "permute-and-flip": _scan("permute-and-flip"),
    "lazy": lambda **options: LazySelection(**options),
}


def register_selection(name: str, factory: Callable[..., RoundSelection]) -> None:
    """Make ``name`` usable as ``selection=name``; ``factory(**options)`` builds the selection."""
    if not isinstance(name, str) or not name:
        raise ValueError("a selection name must be a non-empty string")
    _REGISTRY[name] = factory


def selection_names() -> tuple[str, ...]:
    """The registered selection names (for command-line choices)."""
    return tuple(_REGISTRY)


def resolve_selection(selection: object, **options: object) -> RoundSelection:
    """A :class:`RoundSelection` from a registered name (with its options) or an object."""
    if isinstance(selection, str):
        if selection not in _REGISTRY:
            raise ValueError(f"selection must be one of {list(_REGISTRY)}, got {selection!r}")
        return _REGISTRY[selection](**{k: v for k, v in options.items() if v is not None})
    if options and any(v is not None for v in options.values()):
        raise ValueError("selection options (index=, k=) go with a selection name, not an object")
    if not isinstance(selection, RoundSelection):
        raise TypeError(
            f"selection must be a name or a RoundSelection, got {type(selection).__name__}")
    return selection
