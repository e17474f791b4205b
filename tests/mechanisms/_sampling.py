"""Shared helpers for the statistical tests of tests/mechanisms (not a test module)."""

from __future__ import annotations

import numpy as np


def select_counts(mech, scores, n_draws: int, seed: int) -> np.ndarray:
    """Counts of each index over ``n_draws`` calls of the public ``select`` with one stream."""
    values = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng(seed)
    select = mech.select
    draws = np.fromiter((select(values, rng=rng) for _ in range(n_draws)), dtype=np.int64,
                        count=n_draws)
    return np.bincount(draws, minlength=values.size)
