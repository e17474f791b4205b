"""best_first: decreasing key, ties by id, on the fast path (no ties) and the tie path."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem._order import best_first


@pytest.mark.parametrize("levels", [None, 3, 50])  # distinct floats, heavy ties, a few ties
def test_best_first_matches_lexsort(levels):
    rng = np.random.default_rng(0 if levels is None else levels)
    for size in (0, 1, 2, 17, 1415):
        key = rng.normal(size=size) if levels is None else rng.integers(0, levels, size) * 0.5
        ids = rng.permutation(10 * size + 1)[:size]
        expected = np.lexsort((ids, -key))
        np.testing.assert_array_equal(best_first(key, ids), expected)


def test_signed_zeros_tie():
    key = np.array([0.0, -0.0, 0.0])
    np.testing.assert_array_equal(best_first(key, np.array([7, 3, 5])), [1, 2, 0])
