"""Building the bit-packed index block by block: keys appended in pieces of any size land where a
one-piece build puts them, and the largest popcount (the numpy scan's window) is the same; the
compiled build (numba) writes what the numpy one does."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, bitpacked
from fastmwem.indices.bitpacked import BLOCK


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("d", [5, 64, 200])
def test_pieces_of_any_size_build_the_same_index(d, backend):
    rng = np.random.default_rng(d)
    keys = rng.random((3 * BLOCK + 123, d)) < 0.4
    packed = np.packbits(keys, axis=1)
    whole = BitPackedIndex(d, backend="numpy", progress=False)
    whole.add_packed(packed)
    pieces = BitPackedIndex(d, backend=backend, progress=False)
    for lo, hi in ((0, 1), (1, BLOCK - 7), (BLOCK - 7, BLOCK + 5), (BLOCK + 5, 3 * BLOCK + 123)):
        pieces.add_packed(packed[lo:hi])
    np.testing.assert_array_equal(pieces._words, whole._words)
    np.testing.assert_array_equal(pieces.packed, packed)
    assert pieces._max_popcount == whole._max_popcount == int(keys.sum(axis=1).max())


def test_the_popcount_table_matches_numpys_bit_count(monkeypatch):
    rng = np.random.default_rng(1)
    words = rng.integers(0, 2**63, size=(500, 3), dtype=np.uint64) * np.uint64(2) + \
        rng.integers(0, 2, size=(500, 3), dtype=np.uint64)
    expected = np.array([sum(bin(int(w)).count("1") for w in row) for row in words])
    np.testing.assert_array_equal(bitpacked._popcounts(words), expected)
    monkeypatch.delattr(np, "bitwise_count", raising=False)  # numpy before 2.0
    np.testing.assert_array_equal(bitpacked._popcounts(words), expected)
