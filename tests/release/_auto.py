"""The tests of the automatic defaults read the result and its choices as a pair."""

from __future__ import annotations

from fastmwem.release import MWEMChoices, MWEMResult, mwem_with_defaults


def run_with_defaults(*args: object, **kwargs: object) -> tuple[MWEMResult, MWEMChoices]:
    """:func:`mwem_with_defaults`, returning ``(result, result.choices)``."""
    result = mwem_with_defaults(*args, **kwargs)  # type: ignore[arg-type]
    assert result.choices is not None
    return result, result.choices
