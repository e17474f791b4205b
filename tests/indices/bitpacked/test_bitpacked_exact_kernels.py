"""The bit-packed index's compiled exact steps give the numpy steps' results, bit for bit.

With numba, a search builds the byte tables, keeps the window, gathers and sums the keys'
scores and orders the top-k in compiled code (``indices.bitpacked._exact_numba``); the numpy backend
(and the code before) does it in array operations. The float64 scores must be the same bits
(the same additions in the same order) and the top-k the same ids in the same order, ties
included.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, numba_available
from fastmwem.indices._topk import best_k
from fastmwem.indices.bitpacked import _byte_tables, _numpy_rows, _numpy_sums

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _exact():
    from fastmwem.indices.bitpacked import _exact_numba

    return _exact_numba


def _index(d: int, n: int, seed: int) -> BitPackedIndex:
    index = BitPackedIndex(d, backend="numba", progress=False)
    index.add(np.random.default_rng(seed).random((n, d)) < 0.5)
    return index


def _vector(d: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=d) * rng.choice([1e-300, 1.0, 1e4, 1e300], size=d)
    v[rng.random(d) < 0.2] = -0.0
    return v


@pytest.mark.parametrize("d", [5, 64, 200, 256])
def test_the_tables_and_scores_are_numpys(d):
    rng = np.random.default_rng(d)
    index = _index(d, 5000, d)
    for _ in range(10):
        v = _vector(d, rng)
        padded = np.zeros(8 * index.n_bytes)
        padded[:d] = v
        tables = _byte_tables(padded).reshape(index.n_bytes, 256)
        compiled = _exact().byte_tables(v, index.n_bytes)
        assert compiled.tobytes() == tables.tobytes()
        ids = rng.choice(5000, size=700, replace=True).astype(np.int64)
        want = _numpy_sums(_numpy_rows(index._words, ids), tables)
        assert _exact().rescore(index._words, ids, compiled).tobytes() == want.tobytes()


def _sparse(d: int, rng: np.random.Generator, nonzero: int) -> np.ndarray:
    # A few non-zero cells (a whole byte or word of zeros is skipped by the rescoring), signed
    # zeros elsewhere, and a byte whose two cells cancel (its sums hit +0.0 and -0.0 cases).
    v = np.where(rng.random(d) < 0.5, -0.0, 0.0)
    cells = rng.choice(d, size=nonzero, replace=False)
    v[cells] = rng.normal(size=nonzero) * 100.0
    if d >= 16:
        v[8:10] = [3.5, -3.5]
    return v


@pytest.mark.parametrize("d", [64, 200, 1024])
@pytest.mark.parametrize("nonzero", [0, 1, 8])
def test_rescoring_skips_zero_bytes_and_words_with_the_same_bits(d, nonzero):
    rng = np.random.default_rng([d, nonzero])
    index = _index(d, 3000, d + nonzero)
    for _ in range(5):
        v = _sparse(d, rng, nonzero)
        tables = _exact().byte_tables(v, index.n_bytes)
        ids = rng.choice(3000, size=1100, replace=True).astype(np.int64)  # more than a batch
        want = _numpy_sums(_numpy_rows(index._words, ids), tables)
        got = _exact().rescore(index._words, ids, tables)
        assert got.tobytes() == want.tobytes()
        assert not np.signbit(got[got == 0]).any()  # no -0.0 from a skipped byte


@pytest.mark.parametrize("absolute", [False, True])
def test_the_compiled_top_k_is_best_k(absolute):
    rng = np.random.default_rng(int(absolute))
    for _ in range(200):
        n = int(rng.integers(1, 3000))
        ids = rng.choice(10**6, size=n, replace=False).astype(np.int64)
        scores = rng.integers(-6, 7, size=n) * rng.choice([1.0, 0.5, 1e-3])  # many ties
        if rng.random() < 0.5:
            scores = scores + rng.normal(size=n) * 1e-9
        k = int(rng.integers(1, n + 5))
        got = _exact().best(ids, scores, k, absolute)
        want = best_k(ids, scores, k, key=np.abs(scores) if absolute else None)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_the_compiled_window_is_the_array_windows():
    rng = np.random.default_rng(3)
    index = _index(64, 20000, 4)
    for _ in range(30):
        v = _vector(64, rng)
        ids = rng.choice(20000, size=int(rng.integers(50, 3000)), replace=False).astype(np.int64)
        approx = rng.integers(-50, 50, size=ids.size)
        k, window = int(rng.integers(1, ids.size + 1)), int(rng.integers(0, 20))
        tables = _exact().byte_tables(v, index.n_bytes)
        kth = np.partition(approx, approx.size - k)[approx.size - k]
        kept = ids[approx >= kth - window]
        want = best_k(kept, _exact().rescore(index._words, kept, tables), k,
                      key=np.abs(_exact().rescore(index._words, kept, tables)))
        got = _exact().window_top(index._words, ids, approx, k, window, tables, True)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[2] == kept.size


def test_searches_that_reuse_the_working_arrays_find_what_fresh_ones_do():
    """One index keeps its search buffers between searches (any k, either sign, wide planes);
    every search must equal the same search on an index that never searched before."""
    rng = np.random.default_rng(8)
    keys = rng.random((9 * 4096 + 77, 64)) < 0.5
    index = BitPackedIndex(64, backend="numba", progress=False)
    index.add(keys)
    for trial in range(12):
        v = rng.normal(size=64) * 10
        if trial % 4 == 3:
            v[0] = 1e6  # a dominant cell: the wide planes
        k = int(rng.choice([1, 5, 300, 2000]))
        fresh = BitPackedIndex(64, backend="numba", progress=False)
        fresh.add(keys)
        search = "search_abs" if trial % 2 else "search"
        want = getattr(fresh, search)(v[None, :], k)
        got = getattr(index, search)(v[None, :], k)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert index._buffers  # kept
