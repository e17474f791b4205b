"""Deprecated location; import from fastmwem.release.mwem (:mod:`fastmwem.release.mwem.config`).

Kept for one release so that old imports keep working; it re-exports the same objects and warns
nothing at import.
"""

from fastmwem.release.mwem.config import (
    FINAL_PASSES_FACTORED,
    MAX_FINAL_PASSES,
    MAX_REUSE_PASSES,
    MODELS,
    PROGRESS_SECONDS,
    SELECT_FRACTION_ADAPTIVE,
    SELECT_FRACTION_FACTORED,
    SELECT_FRACTION_FACTORED_EXACT,
    MWEMConfig,
)

__all__ = ["MWEMConfig", "MAX_REUSE_PASSES", "MAX_FINAL_PASSES", "FINAL_PASSES_FACTORED",
           "SELECT_FRACTION_FACTORED", "SELECT_FRACTION_FACTORED_EXACT",
           "SELECT_FRACTION_ADAPTIVE", "MODELS", "PROGRESS_SECONDS"]
