"""Warnings: privacy leaks the caller opted into, CSV cells a spreadsheet may execute, and
tables too small for the budget."""

from __future__ import annotations

__all__ = ["PrivacyLeakWarning", "SmallDataWarning", "SpreadsheetFormulaWarning"]


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


class SmallDataWarning(UserWarning):
    """The budget and the record count cannot support even one useful MWEM round.

    Measured alone with the whole budget, even the most accurate candidate marginal of order
    >= 2 would get noise whose expected L1 mass is at least the records' own
    (:mod:`fastmwem.release.mwem.regime`), so the defaults release the noisy 1-way marginals
    only: the output is their product and says nothing about how attributes relate.
    """
