"""Deprecated location; import from fastmwem.release.mwem (:mod:`fastmwem.release.mwem.annealing`).

Kept for one release so that old imports keep working; it re-exports the same objects and warns
nothing at import.
"""

from fastmwem.release.mwem.annealing import (
    ADAPTIVE_REUSE_PASSES,
    ADAPTIVE_STEP,
    INITIAL_ROUNDS_PER_ATTRIBUTE,
    Annealing,
    RoundBudget,
    expected_abs_noise,
    noise_std,
    should_anneal,
    split_round,
)

__all__ = ["Annealing", "RoundBudget", "should_anneal", "expected_abs_noise", "noise_std",
           "split_round", "ADAPTIVE_REUSE_PASSES", "INITIAL_ROUNDS_PER_ATTRIBUTE",
           "ADAPTIVE_STEP"]
