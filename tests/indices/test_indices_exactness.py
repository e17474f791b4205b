"""Exactness of the exact indices where a naive float32 (or quantised) scan gets the top-k wrong.

The lazy exponential mechanism needs a true top-k set: a key missing from it changes the law. The
flat index scans in float32 and the bit-packed index in quantised integers, so each test builds
scores that differ far below that resolution and checks the index against a float64 brute force,
with a companion assertion that the naive scan really does get them wrong (so the test can fail).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, FlatIndex, numba_available
from fastmwem.indices._topk import window_candidates

BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not numba_available(), reason="numba is not installed"))]


def _truth(keys: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    scores = keys @ v
    kth = np.sort(scores)[::-1][k - 1]
    return scores, kth


def _assert_true_top_k(index, keys, v, k):
    scores, ids = index.search(v[None, :], k)
    exact, kth = _truth(keys, v, k)
    assert np.unique(ids[0]).size == k
    # every returned key reaches the k-th exact score, and none left out beats it
    assert np.all(exact[ids[0]] >= kth)
    outside = np.setdiff1d(np.arange(keys.shape[0]), ids[0])
    assert np.all(exact[outside] <= kth)
    np.testing.assert_array_equal(scores[0], index.score(ids[0], v))


def test_flat_float32_near_ties():
    # Scores 1 + i * 1e-10: all equal in float32 (resolution ~6e-8), distinct in float64.
    n = 500
    keys = np.column_stack([np.ones(n), np.arange(n, dtype=np.float64)])
    rng = np.random.default_rng(0)
    keys = keys[rng.permutation(n)]
    v = np.array([1.0, 1e-10])
    index = FlatIndex()
    index.add(keys)
    assert index.storage == np.float32
    naive = np.argsort(-(keys.astype(np.float32) @ v.astype(np.float32)), kind="stable")[:10]
    exact, kth = _truth(keys, v, 10)
    assert not np.all(exact[naive] >= kth)  # the naive float32 scan misses true top keys
    for k in (1, 10, 77):
        _assert_true_top_k(index, keys, v, k)


def test_flat_float64_keys_near_ties():
    # Keys that float32 cannot hold exactly are kept in float64.
    rng = np.random.default_rng(1)
    keys = 1.0 + rng.integers(0, 2**20, size=(300, 3)) * 2.0**-40
    index = FlatIndex()
    index.add(keys)
    assert index.storage == np.float64
    for v in (np.array([1.0, -1.0, 0.5]), np.array([1e-300, 2e-300, 0.0])):
        _assert_true_top_k(index, keys, v, 25)
    wide_ints = np.array([[2**30 + 1, 0], [2**30, 1]], dtype=np.int64)
    ints = FlatIndex()
    ints.add(wide_ints)
    assert ints.storage == np.float64  # float32 would round 2^30 + 1
    assert ints.search([1.0, 0.5], 1)[1][0, 0] == 0


def test_flat_huge_and_tiny_queries():
    rng = np.random.default_rng(2)
    keys = rng.integers(-5, 6, size=(200, 8)).astype(np.float64)
    index = FlatIndex()
    index.add(keys)
    for scale in (1e300, 1e-300, 1e-320):
        _assert_true_top_k(index, keys, rng.normal(size=8) * scale, 13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bitpacked_below_quantisation(backend):
    # Entries that differ by 1e-13 around 1: far below the 2^-31 integer grid of the scan.
    rng = np.random.default_rng(3)
    d = 40
    keys = (rng.random((2000, d)) < 0.5).astype(np.float64)
    v = 1.0 + rng.integers(0, 1000, size=d) * 1e-13
    index = BitPackedIndex(d, backend=backend)
    index.add(keys)
    quantised, _ = index._scan(v, False)
    naive = np.argsort(-quantised, kind="stable")[:45]
    exact, kth = _truth(keys, v, 45)
    assert not np.all(exact[naive] >= kth)  # the integer scan alone misses true top keys
    for k in (1, 5, 45, 300):
        _assert_true_top_k(index, keys, v, k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bitpacked_spike_and_extremes(backend):
    rng = np.random.default_rng(4)
    d = 19  # not a multiple of 8: padding bits
    keys = (rng.random((500, d)) < 0.3).astype(np.float64)
    index = BitPackedIndex(d, backend=backend)
    index.add(keys)
    spike = np.zeros(d)
    spike[5] = 1e300
    for v in (spike, -spike, rng.normal(size=d) * 1e-310, np.full(d, -1.0), np.zeros(d)):
        _assert_true_top_k(index, keys, v, 7)


def test_bitpacked_backends_agree_bit_for_bit():
    if not numba_available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(5)
    keys = rng.random((3000, 70)) < 0.5
    fast, slow = BitPackedIndex(70, backend="numba"), BitPackedIndex(70, backend="numpy")
    fast.add(keys)
    slow.add(keys)
    for v in (rng.normal(size=70), rng.exponential(size=70) * 1e-5):
        for method in ("search", "search_abs"):
            a, b = getattr(fast, method)(v, 50), getattr(slow, method)(v, 50)
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
        ids = np.arange(3000)
        np.testing.assert_array_equal(fast.score(ids, v), slow.score(ids, v))


def test_bitpacked_matches_packbits_layout():
    rng = np.random.default_rng(6)
    keys = rng.random((50, 21)) < 0.5
    a, b = BitPackedIndex(21), BitPackedIndex(21)
    a.add(keys)
    b.add_packed(np.packbits(keys, axis=1))
    np.testing.assert_array_equal(a.packed, b.packed)
    v = rng.normal(size=21)
    np.testing.assert_allclose(a.score(np.arange(50), v), keys @ v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1000, 400_000])
def test_window_candidates_is_a_superset_of_the_window(n):
    # n = 400,000 takes the strided-sample path; ties and a heavy top are the hard cases.
    rng = np.random.default_rng(n)
    for values in (rng.normal(size=n), rng.integers(0, 5, size=n).astype(np.int32),
                   np.zeros(n), np.where(rng.random(n) < 0.001, 10.0, 0.0)):
        for k, window in ((1, 0.0), (37, 0.5), (900, 0.0), (2000, 0.0)):
            got = window_candidates(values, k, window)
            if k >= n:
                assert got.size == n
                continue
            kth = np.sort(values)[::-1][k - 1]
            want = np.flatnonzero(values >= kth - window)
            assert np.isin(want, got).all()
            assert np.all(values[got] >= values.min())


def test_without_numba_the_numpy_backend_is_chosen():
    # A fresh interpreter where importing numba fails, as on an install without the extra.
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "from fastmwem.indices import BitPackedIndex, numba_available\n"
        "assert not numba_available()\n"
        "index = BitPackedIndex(9)\n"
        "assert index.backend == 'numpy'\n"
        "index.add(np.eye(9))\n"
        "assert index.search(np.arange(9.0), 1)[1][0, 0] == 8\n"
        "try:\n"
        "    BitPackedIndex(9, backend='numba')\n"
        "except ImportError as exc:\n"
        "    assert 'fastmwem[numba]' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_bitpacked_threads_do_not_change_results():
    if not numba_available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(7)
    keys = rng.random((40_000, 24)) < 0.5  # above the size where the scan goes parallel
    indices = [BitPackedIndex(24, threads=t) for t in (1, 2)] + [BitPackedIndex(24, backend="numpy")]
    for index in indices:
        index.add(keys)
    v = rng.normal(size=24)
    results = [index.search_abs(v, 200) for index in indices]
    for other in results[1:]:
        np.testing.assert_array_equal(results[0][0], other[0])
        np.testing.assert_array_equal(results[0][1], other[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_bitpacked_adds_across_block_boundaries(backend):
    # Keys live in blocks of 4096: appending 3000 + 3000 + 1 keys fills, crosses and starts blocks.
    rng = np.random.default_rng(8)
    keys = rng.random((6001, 13)) < 0.5
    split = BitPackedIndex(13, backend=backend)
    for part in (keys[:3000], keys[3000:6000], keys[6000:]):
        split.add(part)
    whole = BitPackedIndex(13, backend=backend)
    whole.add_packed(np.packbits(keys, axis=1))
    assert split.n_keys == whole.n_keys == 6001
    np.testing.assert_array_equal(split.packed, np.packbits(keys, axis=1))
    v = rng.normal(size=13)
    for index in (split, whole):
        _assert_true_top_k(index, keys.astype(np.float64), v, 50)
        np.testing.assert_allclose(index.score(np.arange(6001), v), keys @ v, rtol=1e-12,
                                   atol=1e-12)
        # the padding keys of the last block are never returned
        assert index.search(-np.abs(v) - 1.0, 6001)[1].max() == 6000
