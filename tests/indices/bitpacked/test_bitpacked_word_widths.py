"""The compiled bit-packed scan on only the planes each group of key words needs.

A word's cells that all fit in ``t`` bits of two's complement are scored on ``t`` planes, a word
of zeros on none (``_kernels_numba._make_plan``), and a query whose 10-bit window is wide
against its scores' spread is quantised on 11 to 16 bits (``bitpacked._extra_bits``). Both only
change the speed: these tests check the integer scores against ``keys @ q`` on queries built to
hit every width at its edges (``-2^(t-1)`` and ``2^(t-1) - 1``), and whole searches against the
numpy backend and the brute force on ties, huge, tiny and signed-zero entries and zero words.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, bitpacked, numba_available
from fastmwem.indices.bitpacked import BLOCK

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _kernels():
    from fastmwem.indices.bitpacked import _kernels_numba

    return _kernels_numba


def _edge_query(rng: np.random.Generator, d: int, n_planes: int) -> tuple[np.ndarray, list[int]]:
    """Integers on ``n_planes`` bits whose 64-cell words each need a chosen width ``t`` (0 for
    a word of zeros): every word holds ``-2^(t-1)`` or ``2^(t-1) - 1``, the rest random in
    range; the cells from ``d`` on are 0. Returns ``q`` and the width each word needs."""
    n_words = -(-d // 64)
    q = np.zeros(64 * n_words, dtype=np.int64)
    for w in range(n_words):
        t = int(rng.integers(0, n_planes + 1)) if w > 1 else (n_planes, 0)[w]
        cells = slice(64 * w, 64 * w + 64)
        if t:
            low, high = -(2 ** (t - 1)), 2 ** (t - 1) - 1
            q[cells] = rng.integers(low, high + 1, size=64)
            q[64 * w + int(rng.integers(64))] = low if rng.random() < 0.5 else high
            if t > 1 and rng.random() < 0.5:  # both edges, or only the negative one
                q[64 * w + int(rng.integers(64))] = high if q[cells].min() == low else low
    q[d:] = 0
    return q, [_width(q[64 * w:64 * w + 64]) for w in range(n_words)]


def _width(cells: np.ndarray) -> int:
    """Bits of two's complement that hold every one of ``cells`` (0 when they are all 0)."""
    if not cells.any():
        return 0
    t = 1
    while cells.min() < -(2 ** (t - 1)) or cells.max() > 2 ** (t - 1) - 1:
        t += 1
    return t


@pytest.mark.parametrize("n_planes", [10, 16])
@pytest.mark.parametrize("d", [64, 200, 1000, 1024])
def test_group_passes_score_exactly_on_the_planes_each_word_needs(n_planes, d):
    rng = np.random.default_rng(d + n_planes)
    n = 2 * BLOCK + 77  # the last block padded
    keys = rng.random((n, d)) < 0.5
    keys[:5] = True  # every cell set: each plane and word counted whole
    keys[5:9] = False
    index = BitPackedIndex(d, backend="numba", threads=1, progress=False)
    index.add(keys)
    kernels = _kernels()
    n_words = index._words.shape[1]
    for trial in range(6):
        q, widths = _edge_query(rng, d, n_planes)
        if trial == 5:  # one cell at each edge of the top plane, the others 0 or -1
            q[:] = 0
            q[:d] = -(rng.random(d) < 0.3).astype(np.int64)
            q[0], q[d - 1] = -(2 ** (n_planes - 1)), 2 ** (n_planes - 1) - 1
            widths = [_width(q[64 * w:64 * w + 64]) for w in range(n_words)]
        planes = kernels.bit_planes(q, n_words, n_planes)
        scores = kernels.scan(index._words, planes, False, 1)[:n]
        np.testing.assert_array_equal(scores, keys.astype(np.int64) @ q[:d])
        absolute = kernels.scan(index._words, planes, True, 1)[:n]
        np.testing.assert_array_equal(absolute, np.abs(keys.astype(np.int64) @ q[:d]))
        group_widths, slots, _ = kernels.plan(planes)
        assert np.all(np.diff(group_widths) <= 0)
        # each word on its own width (zero words left out), groups of 4 at their widest
        needed = sorted((t for t in widths if t), reverse=True)
        np.testing.assert_array_equal(group_widths, needed[::4])
        assert slots.shape == (-(-len(needed) // 4), 4)


def _adversarial(rng: np.random.Generator, d: int) -> list[np.ndarray]:
    zeros_first = rng.normal(size=d) * 30.0
    zeros_first[:128] = 0.0  # two whole key words of zeros
    signed = np.where(rng.random(d) < 0.5, -0.0, 0.0)
    signed[rng.choice(d, 40, replace=False)] = rng.normal(size=40)
    huge = rng.normal(size=d)
    huge[:3] = [1e300, -1e300, 5e299]
    tiny = rng.normal(size=d) * 1e-310  # subnormal
    tiny[7] = 2.0
    moderate = rng.normal(size=d) * 20.0  # a moderately dominant entry: 11 to 13 bits
    moderate[3] = 900.0
    one = np.zeros(d)
    one[5] = -3.0
    return [np.full(d, 0.25), zeros_first, signed, huge, tiny, moderate, one,
            np.round(rng.normal(size=d) * 3.0) / 4.0]  # ties


@pytest.mark.parametrize("threads", [1, 2])
def test_searches_on_adversarial_queries_match_the_numpy_backend_and_brute_force(threads):
    rng = np.random.default_rng(21)
    d, n = 300, 9 * BLOCK + 13  # 9 blocks: two threads share them
    keys = rng.random((n, d)) < 0.5
    fast = BitPackedIndex(d, backend="numba", threads=threads, progress=False)
    slow = BitPackedIndex(d, backend="numpy", progress=False)
    fast.add(keys)
    slow.add(keys)
    exact_of = np.arange(n)
    for v in _adversarial(rng, d):
        exact = slow.score(exact_of, v)
        for k in (1, 50, 333):
            for method, key in (("search", exact), ("search_abs", np.abs(exact))):
                scores, ids = getattr(fast, method)(v, k)
                other = getattr(slow, method)(v, k)
                np.testing.assert_array_equal(ids, other[1])
                np.testing.assert_array_equal(scores.view(np.int64), other[0].view(np.int64))
                expected = np.lexsort((exact_of, -key))[:k]  # best first, ties by id
                np.testing.assert_array_equal(ids[0], expected)


def test_the_extra_bits_halve_the_window_share_down_to_the_target():
    rng = np.random.default_rng(22)
    q = np.round(rng.normal(size=1024) * 50.0).astype(np.int64)
    spread = 0.5 * np.sqrt(np.sum(q.astype(float) ** 2) - np.max(q.astype(float) ** 2))
    share = bitpacked._SHARE
    assert bitpacked._extra_bits(q, 1, 6) == 0  # nothing rounded away
    assert bitpacked._extra_bits(q, int(share * spread) - 1, 6) == 0
    for extra in range(1, 7):
        window = int(share * spread * 2 ** (extra - 0.5))
        assert bitpacked._extra_bits(q, window, 6) == extra
        assert bitpacked._extra_bits(q, window, 3) == min(extra, 3)
        assert bitpacked._wide(q, window)
    assert bitpacked._extra_bits(q, int(share * spread * 1e6), 6) == 6
    spike = np.zeros(1024, dtype=np.int64)
    spike[9] = 511  # no spread without the largest entry: any window is wide
    assert bitpacked._extra_bits(spike, 2, 6) == 6


def test_moderately_wide_queries_take_fewer_than_16_bits_and_stay_exact(monkeypatch):
    rng = np.random.default_rng(23)
    d, n, k = 1024, 3 * BLOCK, 120
    keys = rng.random((n, d)) < 0.5
    fast = BitPackedIndex(d, backend="numba", threads=1, progress=False)
    fast.add(keys)
    v = rng.normal(size=d) * 20.0
    v[3] = 900.0
    q, window = fast._quantized(fast._padded(v), 10)
    extra = bitpacked._extra_bits(q, window, 6)
    assert 1 <= extra < 6
    used = []
    real = bitpacked._plane_quantize
    monkeypatch.setattr(bitpacked, "_plane_quantize",
                        lambda v, bits: used.append(bits) or real(v, bits))
    scores, ids = fast.search(v, k)
    assert used == [10, 10 + extra] and fast.last_planes == 16
    exact = keys.astype(np.float64) @ v
    np.testing.assert_array_equal(np.sort(ids[0]), np.sort(np.lexsort((np.arange(n), -exact))[:k]))


@pytest.mark.parametrize("threads", [1, 2])
def test_key_words_copied_by_the_pass_rescore_as_those_read_from_the_index(monkeypatch, threads):
    # The pass copies its candidates' key words (compacted with them as the threshold rises);
    # rescored from those copies or from the index, a search returns the same bits.
    kernels = _kernels()
    rng = np.random.default_rng(24)
    d, n = 520, 9 * BLOCK + 100
    keys = rng.random((n, d)) < 0.5
    index = BitPackedIndex(d, backend="numba", threads=threads, progress=False)
    index.add(keys)
    queries = _adversarial(rng, d)
    found, copied = [], 0
    for row_bytes in (kernels._ROW_BYTES, 0):
        monkeypatch.setattr(kernels, "_ROW_BYTES", row_bytes)
        for v in queries:
            planes, window = index._planes(v)
            ids, approx, rows, rescanned = kernels.top_candidates(
                index._words, planes, n, True, 40, window, threads, {})
            if row_bytes and rescanned < 0:  # a second look's keys are not copied
                assert rows is not None and rows.shape == (ids.size, index._words.shape[1])
                width = index._words.shape[2]
                np.testing.assert_array_equal(rows, index._words[ids // width, :, ids % width])
                copied += 1
            else:
                assert rows is None
            found.append([index.search_abs(v, k) for k in (1, 40, 700)])
    assert copied >= len(queries) - 2
    half = len(found) // 2
    for with_rows, without in zip(found[:half], found[half:]):
        for (s1, i1), (s2, i2) in zip(with_rows, without):
            np.testing.assert_array_equal(i1, i2)
            assert s1.tobytes() == s2.tobytes()
