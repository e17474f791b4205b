"""Warnings: privacy leaks the caller opted into, and CSV cells a spreadsheet may execute."""

from __future__ import annotations

__all__ = ["PrivacyLeakWarning", "SpreadsheetFormulaWarning"]


class PrivacyLeakWarning(UserWarning):
    """An operation read public-looking metadata (categories, bounds) from the private data.

    Such metadata is not protected by differential privacy: the released domain itself reveals,
    e.g., which rare categories occur and the exact minimum and maximum. It is emitted only when
    the caller has explicitly opted in (``Schema.infer(..., allow_private_inference=True)``).
    """


class SpreadsheetFormulaWarning(UserWarning):
    """A CSV output holds text that a spreadsheet may run as a formula (CSV injection).

    Text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (and not a plain
    number) is written unchanged, so that the tool reads back exactly what it wrote; open such a
    file as text, or sanitise it, before opening it in a spreadsheet.
    """
