"""Deprecated location; import from fastmwem.release.mwem (:mod:`fastmwem.release.mwem.rounds`).

Kept for one release so that old imports keep working; it re-exports the same objects and warns
nothing at import.
"""

from fastmwem.release.mwem.rounds import (
    noise_threshold,
    synthetic_answers,
    within_noise,
)

__all__ = ["noise_threshold", "synthetic_answers", "within_noise"]
