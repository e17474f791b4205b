"""The compiled bit-packed search when its starting guess fails: one pass, a bounded second look.

The search starts its threshold from a guess taken from the first blocks. Keys ordered by score
make that guess too high; the search then rescans only the sub-blocks whose recorded best score
can reach the window of the k-th best (it used to run a whole second pass). These tests count
the passes and the rescanned keys on such keys (counts, not times) and check the top-k set
against a float64 brute force on adversarial queries: ties, all-equal and negative scores,
guesses forced to fail, crowded buffers.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import BitPackedIndex, numba_available
from fastmwem.indices.bitpacked import BLOCK

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _kernels():
    from fastmwem.indices.bitpacked import _kernels_numba

    return _kernels_numba


def _index(keys: np.ndarray, threads: int) -> BitPackedIndex:
    index = BitPackedIndex(keys.shape[1], backend="numba", threads=threads, progress=False)
    index.add(keys)
    return index


def _brute_force(index: BitPackedIndex, v: np.ndarray, k: int, absolute: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The top-k ids (best first, ties by id) and their scores, from every key's exact score
    (``index.score``: the float64 sums the search rescores with, not the compiled scan)."""
    scores = index.score(np.arange(index.n_keys), v)
    key = np.abs(scores) if absolute else scores
    top = np.lexsort((np.arange(key.size), -key))[:k]
    return top, scores[top]


def _check(index: BitPackedIndex, keys: np.ndarray, v: np.ndarray, k: int) -> None:
    truth = keys.astype(np.float64) @ v
    for absolute in (False, True):
        method = index.search_abs if absolute else index.search
        scores, ids = method(v, k)
        expected, expected_scores = _brute_force(index, v, k, absolute)
        np.testing.assert_array_equal(ids[0], expected)  # the same keys, in the same order
        np.testing.assert_array_equal(scores[0], expected_scores)
        np.testing.assert_allclose(scores[0], truth[expected], rtol=1e-12, atol=1e-12)


def _sorted_keys(rng: np.random.Generator, n: int, d: int, v: np.ndarray) -> np.ndarray:
    """Random 0/1 keys ordered best first for ``v``: the sampled first blocks hold the best."""
    keys = rng.random((n, d)) < 0.5
    return keys[np.argsort(-(keys @ v), kind="stable")]


def _count_passes(monkeypatch) -> list[int]:
    """Count the compiled passes over all the keys (serial or parallel build)."""
    kernels = _kernels()
    calls: list[int] = []
    for name in ("_top_serial", "_top_parallel"):
        real = getattr(kernels, name)

        def spy(*args, _real=real):
            calls.append(1)
            return _real(*args)

        monkeypatch.setattr(kernels, name, spy)
    return calls


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_guess_costs_one_pass_and_a_bounded_second_look(monkeypatch, threads):
    # The keys the original code searched twice (a second full pass without a guess): sorted
    # best first, the guess (rank 2 k / 5 + 16 of the first 8 of 40 blocks) lies above the true
    # k-th best.
    rng = np.random.default_rng(8)
    n, d, k = 40 * BLOCK, 64, 200
    v = np.abs(rng.normal(size=d))
    keys = _sorted_keys(rng, n, d, v)
    index = _index(keys, threads)
    passes = _count_passes(monkeypatch)
    for query in (v, v.copy()):
        scores, ids = index.search(query, k)
        np.testing.assert_array_equal(ids[0], _brute_force(index, v, k, False)[0])
    assert len(passes) == 2  # one pass per search
    assert index.searches == 2
    assert index.second_looks == 2  # the guess failed both times...
    # ... and the second look rescanned a few sub-blocks: here the top keys are the first ones,
    # so about the k best sub-blocks' worth, far below a pass (n keys).
    assert 0 < index.rescanned_keys <= 2 * 16 * 4 * k
    assert index.rescanned_keys < n // 20


@pytest.mark.parametrize("threads", [1, 2])
def test_crowded_buffers_take_no_second_pass(monkeypatch, threads):
    # Scores 0.25 * popcount: thousands of keys tie at every value, so a tiny buffer stays
    # crowded; the original code started the whole scan again with a buffer 8 times larger,
    # once per overflow.
    kernels = _kernels()
    monkeypatch.setattr(kernels, "_BUFFER", 1)
    monkeypatch.setattr(kernels, "_MIN_BUFFER", 8)
    rng = np.random.default_rng(2)
    n, d, k = 8 * BLOCK + 11, 24, 5
    keys = rng.random((n, d)) < 0.5
    index = _index(keys, threads)
    passes = _count_passes(monkeypatch)
    _check(index, keys, np.full(d, 0.25), k)
    assert len(passes) == 2  # search and search_abs: one pass each
    assert index.second_looks == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_adversarial_queries_give_the_brute_force_top_k(monkeypatch, threads):
    rng = np.random.default_rng(11)
    n, d = 12 * BLOCK + 5, 40  # the last block padded: padding keys must never be returned
    keys = rng.random((n, d)) < 0.5
    index = _index(keys, threads)
    negative = -np.abs(rng.normal(size=d))  # every score <= 0, below the padding keys' 0
    ties = np.round(rng.normal(size=d)) * 0.5  # a few distinct values: large ties
    spike = np.zeros(d)
    spike[3] = 1.0  # two values: half the keys tie at the top
    fine = 1.0 + rng.integers(0, 1000, size=d) * 2.0**-40  # below the planes' resolution
    queries = (negative, ties, spike, -spike, np.zeros(d), np.full(d, -0.5), fine,
               rng.normal(size=d))
    for v in queries:
        for k in (1, 64, 999):
            _check(index, keys, v, k)


@pytest.mark.parametrize("threads", [1, 2])
def test_second_looks_forced_on_every_search_stay_exact(monkeypatch, threads):
    # A failed check of the guess is the only way into the second look besides crowded
    # buffers; forcing it on every search runs that path on every kind of query, including
    # ones where the threshold rose above the guess during the pass.
    monkeypatch.setattr(_kernels(), "_guess_holds", lambda *args: False)
    rng = np.random.default_rng(12)
    n, d = 10 * BLOCK + 17, 72
    keys = rng.random((n, d)) < 0.5
    index = _index(keys, threads)
    for v in (rng.normal(size=d), -np.abs(rng.normal(size=d)), np.zeros(d),
              np.round(rng.normal(size=d)), rng.dirichlet(np.full(d, 0.5)) - 1.0 / d):
        for k in (1, 37, 500):
            _check(index, keys, v, k)
    assert index.second_looks == index.searches > 0


@pytest.mark.parametrize("order", ["best first", "worst first", "best last"])
def test_keys_in_score_order_give_the_brute_force_top_k(order):
    rng = np.random.default_rng(13)
    n, d = 24 * BLOCK, 48
    v = rng.normal(size=d)
    keys = _sorted_keys(rng, n, d, v)
    if order == "worst first":
        keys = keys[::-1]
    elif order == "best last":  # the best block at the end, the rest best first
        keys = np.concatenate([keys[BLOCK:], keys[:BLOCK]])
    index = _index(keys, 1)
    for k in (10, 300, 2000):
        _check(index, keys, v, k)
        _check(index, keys, -v, k)


def test_sub_block_maxima_bound_the_keys_and_skip_the_padding():
    # The recorded maxima are each the best score of its 16 keys, the flags mark the keys
    # reaching the threshold; the padding keys of the last block never count.
    kernels = _kernels()
    rng = np.random.default_rng(14)
    n, d = 3 * BLOCK - 21, 64
    keys = rng.random((n, d)) < 0.5
    index = _index(keys, 1)
    v = -np.abs(rng.normal(size=d))
    planes, window = index._planes(v)
    words = index._words
    scores = kernels.scan(words, planes, False, 1)[:n]
    n_blocks, width = words.shape[0], words.shape[2]
    maxima = np.empty(n_blocks * width // kernels._SUB, dtype=np.int64)
    acc = np.empty(width, dtype=np.int64)
    pairs = np.empty(width // 2, dtype=np.int64)
    flags = np.empty(width, dtype=np.uint8)
    threshold = int(np.median(scores))
    for b in range(n_blocks):
        acc[:] = kernels.scan(words[b:b + 1], planes, False, 1)
        stop = min(width, n - b * width)
        kernels._record_maxima(acc, stop, b, threshold, flags, pairs, maxima)
        np.testing.assert_array_equal(flags[:stop], scores[b * width:b * width + stop] >= threshold)
        assert not flags[stop:].any()  # padding keys never reach a threshold
    padded = np.full(n_blocks * width, kernels._PADDING, dtype=np.int64)
    padded[:n] = scores
    np.testing.assert_array_equal(maxima, padded.reshape(-1, kernels._SUB).max(axis=1))
    assert maxima[-1] == kernels._PADDING  # a sub-block of padding keys only
