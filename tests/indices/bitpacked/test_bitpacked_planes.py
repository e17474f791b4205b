"""The compiled bit-packed search on 10 or 16 bit planes, chosen per query.

A query with a few dominant entries among many small ones (MWEM's ``h - n a`` on a skewed table)
rounds its small entries coarsely on 10 planes: the window of the k-th best then holds a large
share of the keys, which overflowed the threads' buffers into a second look and were all
rescored. Such queries now get 16 planes. These tests check that the choice is made, that it
keeps the search cheap (counts, not times), and that both plane counts return the brute force's
top-k and the numpy backend's results, ties included.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, bitpacked, numba_available
from fastmwem.indices.bitpacked import BLOCK, _plane_quantize

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")

D = 1024


def _kernels():
    from fastmwem.indices.bitpacked import _kernels_numba

    return _kernels_numba


def _skewed(rng: np.random.Generator, dominant: int) -> np.ndarray:
    """Like MWEM's first rounds on a skewed table: ``dominant`` large entries, a few medium
    ones, and small ones on every other cell, some of them tied."""
    v = rng.normal(size=D) * 20.0
    v[rng.choice(D, 10, replace=False)] = rng.normal(size=10) * 300.0
    v[:dominant] = 4300.0 / np.arange(1, dominant + 1)
    v[200:260] = 7.5  # ties
    return v


@pytest.fixture(scope="module")
def pair() -> tuple[np.ndarray, BitPackedIndex, BitPackedIndex]:
    rng = np.random.default_rng(11)
    keys = rng.random((3 * BLOCK + 321, D)) < 0.5
    fast = BitPackedIndex(D, backend="numba", threads=1, progress=False)
    slow = BitPackedIndex(D, backend="numpy", progress=False)
    fast.add(keys)
    slow.add(keys)
    return keys, fast, slow


def _check(keys: np.ndarray, fast: BitPackedIndex, slow: BitPackedIndex, v: np.ndarray,
           k: int) -> None:
    """A true top-k by score and by |score|, identical to the numpy backend."""
    truth = keys.astype(np.float64) @ v
    for method, key in (("search", truth), ("search_abs", np.abs(truth))):
        scores, ids = getattr(fast, method)(v, k)
        kth = np.sort(key)[::-1][k - 1]
        assert np.all(key[ids[0]] >= kth - 1e-6)
        outside = np.setdiff1d(np.arange(key.size), ids[0])
        assert np.all(key[outside] <= kth + 1e-6)
        other = getattr(slow, method)(v, k)
        np.testing.assert_array_equal(ids, other[1])
        np.testing.assert_array_equal(scores, other[0])


@pytest.mark.parametrize("dominant", [1, 2, 3])
def test_skewed_queries_get_the_wide_planes_and_the_exact_top(pair, dominant):
    keys, fast, slow = pair
    rng = np.random.default_rng(dominant)
    v = _skewed(rng, dominant)
    before = fast.wide_searches
    for k in (1, 40, 130):
        _check(keys, fast, slow, v, k)
        assert fast.last_planes == _kernels().WIDE_PLANES
    assert fast.wide_searches - before == 6


def test_spread_queries_keep_the_narrow_planes(pair):
    keys, fast, slow = pair
    rng = np.random.default_rng(12)
    before = fast.wide_searches
    for v in (rng.normal(size=D) * 10.0,
              (rng.dirichlet(np.full(D, 0.5)) - rng.dirichlet(np.ones(D))) * 1e4):
        _check(keys, fast, slow, v, 50)
        assert fast.last_planes == _kernels().PLANES
    assert fast.wide_searches == before


@pytest.mark.parametrize("wide", [False, True])
def test_both_plane_counts_match_the_numpy_backend(pair, monkeypatch, wide):
    # Each plane count forced on every query, whatever the rule would choose: ties (all-equal
    # entries), negative, sparse and skewed queries.
    keys, fast, slow = pair
    monkeypatch.setattr(bitpacked, "_wide", lambda q, window: wide)
    rng = np.random.default_rng(13)
    sparse = np.zeros(D)
    sparse[rng.choice(D, 8, replace=False)] = rng.normal(size=8) * 100.0
    queries = (rng.normal(size=D), _skewed(rng, 1), -_skewed(rng, 2), np.full(D, 0.25),
               sparse, np.zeros(D))
    for v in queries:
        for k in (1, 37, 300):
            _check(keys, fast, slow, v, k)
            expected = _kernels().WIDE_PLANES if wide else _kernels().PLANES
            assert fast.last_planes == expected


def test_a_skewed_query_takes_no_second_look_and_rescores_few_keys():
    # On 10 planes this query's window held most of the keys: the buffers overflowed (a second
    # look rescanning nearly every sub-block) and tens of thousands of keys were rescored.
    rng = np.random.default_rng(14)
    n, k = 12 * BLOCK, 222
    index = BitPackedIndex(D, backend="numba", threads=1, progress=False)
    index.add(rng.random((n, D)) < 0.5)
    v = _skewed(rng, 1)
    scores, ids = index.search_abs(v, k)
    assert index.searches == 1
    assert index.second_looks == 0
    assert 0 < index.last_rescored <= 4 * k  # the keys within the window of the k-th best
    exact = np.abs(index.score(np.arange(n), v))
    np.testing.assert_array_equal(np.sort(ids[0]),
                                  np.sort(np.lexsort((np.arange(n), -exact))[:k]))


def test_wide_bit_planes_hold_the_quantised_query():
    rng = np.random.default_rng(15)
    d = 200
    v = _skewed(rng, 1)[:d]
    q, residual, _ = _plane_quantize(v, 16)
    assert np.abs(q).max() <= 2**15
    keys = rng.random((3000, d)) < 0.5
    scaled = np.ldexp(v, 15 - np.frexp(np.abs(v).max())[1])
    assert np.all(np.abs(keys @ (scaled - q)) <= residual)
    planes = _kernels().bit_planes(q, 4, 16)
    assert planes.shape == (4, 16)
    cells = np.stack([np.unpackbits(planes[:, p].astype("<u8").view(np.uint8))[:d]
                      for p in range(16)]).astype(np.int64)
    weights = np.array([2**p for p in range(15)] + [-(2**15)])
    np.testing.assert_array_equal(weights @ cells, q)
    index = BitPackedIndex(d, backend="numba", threads=1, progress=False)
    index.add(keys)
    scores = _kernels().scan(index._words, planes, False, 1)[:keys.shape[0]]
    np.testing.assert_array_equal(scores, keys.astype(np.int64) @ q)
    with pytest.raises(ValueError, match="n_planes"):
        _kernels().bit_planes(q, 4, 12)


def test_the_rule():
    rng = np.random.default_rng(16)
    spike = np.zeros(D)
    spike[3] = 1.0
    for v, wide in ((rng.normal(size=D), False), (_skewed(rng, 1), True),
                    (np.zeros(D), False), (spike, False)):
        q, residual, _ = _plane_quantize(v, 10)
        assert bitpacked._wide(q, int(2 * residual) + 1) is wide


def test_wide_kernels_have_their_own_cache_entries():
    kernels = _kernels()
    paths = {f._cache._cache_file._index_path
             for f in (kernels._scan_serial, kernels._scan_parallel, kernels._top_serial,
                       kernels._top_parallel, kernels._scan_serial_wide,
                       kernels._scan_parallel_wide, kernels._top_serial_wide,
                       kernels._top_parallel_wide)}
    assert len(paths) == 8


_CHILD = """
import numpy as np
from fastmwem.indices import BitPackedIndex, bitpacked
rng = np.random.default_rng(0)
keys = rng.random((2 * 4096, 300)) < 0.5
index = BitPackedIndex(300, threads=1, progress=False)
index.add(keys)
v = rng.normal(size=300)
wrong = 0
for wide in {order}:
    bitpacked._wide = lambda q, window, wide=wide: wide
    scores, _ = index._scan(v, False)
    planes, _ = index._planes(v)
    q = bitpacked._plane_quantize(index._padded(v), planes.shape[1])[0][:300]
    wrong += not np.array_equal(scores, keys.astype(np.int64) @ q)
print(wrong)
"""


@pytest.mark.slow
def test_cached_and_fresh_kernels_of_two_plane_counts_do_not_mix(tmp_path):
    # A process fills numba's cache with the 10-plane kernels; a later one compiles the 16-plane
    # ones first, then loads the 10-plane ones: its 10-plane scan once ran 16-plane passes (their
    # compiled symbols shared a name).
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}

    def child(order: str) -> str:
        done = subprocess.run([sys.executable, "-c", _CHILD.format(order=order)], env=env,
                              capture_output=True, text=True, timeout=900, check=True)
        return done.stdout.strip()

    assert child("(False,)") == "0"
    assert child("(True, False)") == "0"
