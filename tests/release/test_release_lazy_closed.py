"""The lazy chooser's scan of the closed candidates: ``np.flatnonzero(~available)``, faster.

The mask has an entry per candidate (a million queries) and each round reads it; the chooser
reads it 8 entries at a time (compiled with numba, else in array operations) and must find
exactly the positions of the False entries, in order, for any length and any pattern.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.mechanisms import _lazy_draws
from fastmwem.release.selection.lazy import _closed


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_the_closed_positions_are_flatnonzero_of_the_negation(path, monkeypatch):
    if path == "numpy":
        monkeypatch.setattr(_lazy_draws, "_kernels", None)
    elif _lazy_draws._tail_kernels() is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 8, 9, 63, 64, 65, 1000, 10**6 + 3):
        for share in (0.0, 1e-4, 0.01, 0.5, 1.0):
            mask = rng.random(n) >= share
            got, want = _closed(mask), np.flatnonzero(~mask)
            np.testing.assert_array_equal(got, want)
            assert got.dtype.kind == "i"


def test_a_mask_that_is_not_a_contiguous_bool_vector_is_read_as_before():
    mask = np.ones(40, dtype=bool)
    mask[[3, 17]] = False
    np.testing.assert_array_equal(_closed(mask[::2]), [])  # a strided view: positions 3, 17
    mask[4] = False
    np.testing.assert_array_equal(_closed(mask[::2]), [2])
    np.testing.assert_array_equal(_closed(mask.astype(np.int8) > 0), [3, 4, 17])
