"""The compiled bit-packed search: bit planes, the running k-th best threshold, exact rescoring.

The compiled scan quantises the query to 10-bit planes and keeps only the keys near each
thread's running k-th best score; these tests check it against a float64 brute force and the
numpy backend on sizes that cross blocks, thread chunks, word groups and buffer refills, with
ties that crowd the buffer, and with the buffer made tiny so that every refill path runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, numba_available
from fastmwem.indices.bitpacked import BLOCK, _plane_quantize

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _kernels():
    from fastmwem.indices.bitpacked import _kernels_numba

    return _kernels_numba


def _pair(keys: np.ndarray, threads: int = 1) -> tuple[BitPackedIndex, BitPackedIndex]:
    fast = BitPackedIndex(keys.shape[1], backend="numba", threads=threads)
    slow = BitPackedIndex(keys.shape[1], backend="numpy")
    fast.add(keys)
    slow.add(keys)
    return fast, slow


def _check(fast: BitPackedIndex, slow: BitPackedIndex, keys: np.ndarray, v: np.ndarray,
           k: int) -> None:
    """A true top-k by score and by |score|, best first with ties by id, identical to numpy."""
    truth = keys.astype(np.float64) @ v
    for method, key in (("search", truth), ("search_abs", np.abs(truth))):
        scores, ids = getattr(fast, method)(v, k)
        expected = np.lexsort((np.arange(key.size), -key))[:k]
        kth = key[expected[-1]]
        assert np.all(key[ids[0]] >= kth - 1e-9)  # every returned key reaches the k-th score
        outside = np.setdiff1d(np.arange(key.size), ids[0])
        assert np.all(key[outside] <= kth + 1e-9)  # none left out beats it
        np.testing.assert_array_equal(scores[0], fast.score(ids[0], v))
        other = getattr(slow, method)(v, k)
        np.testing.assert_array_equal(ids, other[1])
        np.testing.assert_array_equal(scores, other[0])


@pytest.mark.parametrize("d", [3, 64, 100, 130, 200, 300])  # 1 .. 5 words: every pass shape
def test_compiled_search_is_exact_across_blocks_and_word_groups(d):
    rng = np.random.default_rng(d)
    n = 2 * BLOCK + 777
    keys = rng.random((n, d)) < 0.5
    fast, slow = _pair(keys)
    for v in (rng.normal(size=d), rng.dirichlet(np.full(d, 0.5)) - rng.dirichlet(np.ones(d))):
        for k in (1, 37, 600):
            _check(fast, slow, keys, v, k)


def test_compiled_search_on_two_threads_matches_one():
    # 9 blocks: above the size where the scan splits into one chunk per thread
    rng = np.random.default_rng(1)
    keys = rng.random((9 * BLOCK - 5, 40)) < 0.5
    one, slow = _pair(keys, threads=1)
    two = BitPackedIndex(40, threads=2)
    two.add(keys)
    v = rng.normal(size=40)
    for method in ("search", "search_abs"):
        a, b, c = (getattr(index, method)(v, 300) for index in (one, two, slow))
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[1], c[1])
        np.testing.assert_array_equal(a[0], b[0])


def test_serial_and_parallel_kernels_have_their_own_cache_entries():
    # Numba files a cached function by name and bytecode, not by parallel=True: one shared entry
    # served the serial build to the parallel dispatcher (a two-thread search ran on one thread).
    kernels = _kernels()
    for serial, parallel in ((kernels._scan_serial, kernels._scan_parallel),
                             (kernels._top_serial, kernels._top_parallel)):
        assert serial._cache._cache_file._index_path != parallel._cache._cache_file._index_path


_CHILD = """
import sys
import numpy as np
from fastmwem.indices import BitPackedIndex
from fastmwem.indices.bitpacked import _kernels_numba as kernels
rng = np.random.default_rng(0)
index = BitPackedIndex(40, threads=int(sys.argv[1]), progress=False)
index.add(rng.random((9 * 4096, 40)) < 0.5)  # 9 blocks: parallel on two threads
v = rng.normal(size=40)
index.search(v, 50)
index._scan(v, False)
print(sum(len(f.stats.cache_hits) for f in (kernels._scan_parallel, kernels._top_parallel)))
"""


@pytest.mark.slow
def test_a_one_thread_run_does_not_serve_its_build_to_a_two_thread_run(tmp_path):
    # The way the bug showed: a process searching on one thread fills the on-disk cache; a later
    # process asking for two threads must compile the parallel kernels, not load the serial ones.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}

    def child(threads: int) -> str:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(threads)], env=env,
                              capture_output=True, text=True, timeout=600, check=True)
        return done.stdout.strip()

    child(1)
    assert child(2) == "0"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("buffer", [(1, 8), (2, 64), (32, 16384)])
def test_refills_and_crowded_buffers_keep_the_exact_top(monkeypatch, buffer, threads):
    # A tiny buffer refills (raises its threshold) constantly and overflows under ties, which
    # then takes a second look at the sub-blocks that can reach the window; two threads share
    # blocks and thresholds. The result must not change.
    monkeypatch.setattr(_kernels(), "_BUFFER", buffer[0])
    monkeypatch.setattr(_kernels(), "_MIN_BUFFER", buffer[1])
    rng = np.random.default_rng(2)
    n, d = 8 * BLOCK + 11, 24  # 9 blocks: parallel with two threads
    keys = rng.random((n, d)) < 0.5
    fast, slow = _pair(keys, threads)
    flat = np.full(d, 0.25)  # scores 0.25 * popcount: thousands of ties at every value
    fine = 1.0 + rng.integers(0, 1000, size=d) * 1e-13  # below the planes' resolution
    for v in (*rng.normal(size=(4, d)), flat, -flat, np.zeros(d), fine):
        for k in (1, 5, 200):
            _check(fast, slow, keys, v, k)


def test_extreme_queries_on_the_compiled_path():
    rng = np.random.default_rng(3)
    d = 70
    keys = rng.random((BLOCK + 100, d)) < 0.3
    fast, slow = _pair(keys)
    spike = np.zeros(d)
    spike[5] = 1e300
    tiny = rng.normal(size=d) * 1e-310  # subnormal entries
    mixed = rng.normal(size=d)
    mixed[::7] *= 1e-250
    for v in (spike, -spike, tiny, mixed, np.full(d, -1.0)):
        _check(fast, slow, keys, v, 9)


def test_below_the_plane_resolution():
    # Entries 1 + i 1e-13: one integer value on 10-bit planes; only the exact rescoring of the
    # window tells the keys apart.
    rng = np.random.default_rng(4)
    d = 40
    keys = rng.random((2 * BLOCK, d)) < 0.5
    v = 1.0 + rng.integers(0, 1000, size=d) * 1e-13
    fast, slow = _pair(keys)
    scores, _ = fast._scan(v, False)
    truth = keys @ v
    naive = np.argsort(-scores, kind="stable")[:45]
    kth = np.sort(truth)[::-1][44]
    assert not np.all(truth[naive] >= kth)  # the planes alone miss true top keys
    _check(fast, slow, keys, v, 45)


def test_bit_planes_hold_the_quantised_query_and_bound_the_rest():
    rng = np.random.default_rng(5)
    d = 128
    v = rng.dirichlet(np.full(d, 0.5)) - rng.dirichlet(np.ones(d))
    q, residual, l1 = _plane_quantize(v, 10)
    scaled = np.ldexp(v, 9 - np.frexp(np.abs(v).max())[1])
    np.testing.assert_array_equal(q, np.clip(np.rint(scaled), -512, 511))
    keys = rng.random((5000, d)) < 0.5
    assert np.all(np.abs(keys @ (scaled - q)) <= residual)
    assert l1 >= np.abs(scaled).sum()
    planes = _kernels().bit_planes(q, 2)
    # plane p's words hold np.packbits bytes little-endian: bytes back, then bits per cell
    cells = np.stack([np.unpackbits(planes[:, p].astype("<u8").view(np.uint8))[:d]
                      for p in range(10)]).astype(np.int64)
    weights = np.array([2**p for p in range(9)] + [-(2**9)])
    np.testing.assert_array_equal(weights @ cells, q)


def test_kth_bound_is_a_lower_bound_within_a_bin():
    bound = _kernels()._kth_bound
    rng = np.random.default_rng(6)
    bins = np.empty(256, dtype=np.int64)
    for values in (rng.integers(-10**6, 10**6, size=5000), rng.integers(0, 3, size=999),
                   np.zeros(300, dtype=np.int64), np.arange(-50, 50, dtype=np.int64)):
        values = values.astype(np.int64)
        spread = int(values.max() - values.min())
        for k in (1, 7, values.size // 2, values.size):
            kth = np.sort(values)[::-1][k - 1]
            got = bound(values, k, bins)
            assert got <= kth
            assert kth - got <= max(1, 2 * spread // 256)


def _spy_guesses(monkeypatch) -> list[bool]:
    """Record every check of a starting guess (True: the guess held)."""
    kernels = _kernels()
    seen: list[bool] = []
    real = kernels._guess_holds

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(kernels, "_guess_holds", spy)
    return seen


@pytest.mark.parametrize("threads", [1, 2])
def test_a_starting_guess_from_random_keys_holds(monkeypatch, threads):
    rng = np.random.default_rng(7)
    n, d = 12 * BLOCK, 64
    keys = rng.random((n, d)) < 0.5
    fast, slow = _pair(keys, threads)
    seen = _spy_guesses(monkeypatch)
    _check(fast, slow, keys, rng.normal(size=d), 40)
    assert seen == [True, True]  # search and search_abs each started from a guess that held


@pytest.mark.parametrize("threads", [1, 2])
def test_a_starting_guess_too_high_is_caught(monkeypatch, threads):
    # Keys sorted best first: the sampled first blocks (8 of 40) hold the best scores, so the
    # guessed rank, 2 k / 5 + 16 < k, lies above the true k-th best; the scan must notice and
    # take a second look (tests/indices/bitpacked/test_bitpacked_second_look.py counts it).
    rng = np.random.default_rng(8)
    n, d = 40 * BLOCK, 64
    v = rng.normal(size=d)
    keys = rng.random((n, d)) < 0.5
    keys = keys[np.argsort(-(keys @ np.abs(v)), kind="stable")]
    fast, slow = _pair(keys, threads)
    seen = _spy_guesses(monkeypatch)
    _check(fast, slow, keys, np.abs(v), 200)
    assert False in seen


def test_without_a_guess_the_search_is_the_same(monkeypatch):
    rng = np.random.default_rng(9)
    n, d = 10 * BLOCK + 3, 50
    keys = rng.random((n, d)) < 0.5
    fast, slow = _pair(keys, 2)
    monkeypatch.setattr(_kernels(), "_guesses", False)
    seen = _spy_guesses(monkeypatch)
    _check(fast, slow, keys, rng.normal(size=d), 25)
    assert seen == []
