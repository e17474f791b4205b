"""Compiled exact-score helpers of the bit-packed index (numba; imported only with it).

The float64 score of a key is ``sum_j tables[j, byte j]`` added in ascending ``j`` from 0.0,
where ``tables[j, b]`` sums the query's cells of byte ``j`` set in the byte value ``b``
(``indices.bitpacked._byte_tables``). These kernels compute exactly those sums with exactly
the additions of the numpy code (``indices.bitpacked``'s rescoring), so every backend returns
the same bits; they only spare a search the dozen array operations (and buffers) of
the steps between the scan and the top-k: building the tables, keeping the keys within the
window, gathering their words and summing. Also here: the build's transposition of packed keys
into the scan's word layout.
"""

from __future__ import annotations

import numpy as np

from fastmwem._jit import njit_cached
from fastmwem.indices.bitpacked._kernels_numba import _popcount

__all__ = ["byte_tables", "rescore", "window_top", "best", "fill_words"]

# Keys whose words are gathered before they are summed: independent loads overlap their cache
# misses (a key's words lie a storage block apart), and the batch stays in L1 cache.
_BATCH = 512


def _tables(v: np.ndarray, tables: np.ndarray) -> None:  # pragma: no cover - compiled
    """``indices.bitpacked._byte_tables`` of ``v`` padded with zeros, addition for addition:
    the entries of byte values in ``[2^p, 2^(p+1))`` add cell ``7 - p`` of the byte (packbits
    is big-endian) to those below ``2^p``."""
    for j in range(tables.shape[0]):
        tables[j, 0] = 0.0
        for p in range(8):
            c = 8 * j + 7 - p
            cell = v[c] if c < v.size else 0.0
            low = 1 << p
            for b in range(low):
                tables[j, low + b] = tables[j, b] + cell


def _active(tables: np.ndarray, n_words: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """The bytes with a non-zero cell (``tables[j, 2^p] != 0``) in ascending order, the key
    words holding them (``used``), and each used word's place in that list (``slot[w]``)."""
    n_bytes = tables.shape[0]
    active = np.empty(n_bytes, np.int64)
    n_active = 0
    for j in range(n_bytes):
        for p in range(8):
            if tables[j, 1 << p] != 0.0:
                active[n_active] = j
                n_active += 1
                break
    slot = np.full(n_words, -1, np.int64)
    used = np.empty(n_words, np.int64)
    n_used = 0
    for a in range(n_active):
        w = active[a] >> 3
        if slot[w] < 0:
            slot[w] = n_used
            used[n_used] = w
            n_used += 1
    return active[:n_active], used[:n_used], slot


def _add_bytes(rows: np.ndarray, count: int, tables: np.ndarray,  # pragma: no cover - compiled
               active: np.ndarray, slot: np.ndarray, sums: np.ndarray) -> None:
    """``sums[i]`` = the float64 score of the key whose used words are ``rows[:, i]``
    (``i < count``): its active bytes' table entries added in ascending byte order from 0.0.

    Byte by byte over the batch: each key's sum takes its additions in the same order, and the
    keys' sums are independent chains (one key at a time waited on each addition's latency)."""
    sums[:count] = 0.0
    for a in range(active.size):
        j = active[a]
        row = rows[slot[j >> 3]]
        shift = np.uint64(8 * (j & 7))
        table = tables[j]
        for i in range(count):
            sums[i] += table[(row[i] >> shift) & np.uint64(0xFF)]


def _sums(words: np.ndarray, ids: np.ndarray, tables: np.ndarray,  # pragma: no cover
          out: np.ndarray) -> None:
    """``out[i]`` = the float64 score of key ``ids[i]``: its bytes' table entries added in
    ascending byte order from 0.0.

    Bytes whose eight cells are all zero are skipped, and so are the key words holding only
    such bytes (a key's words lie a storage block apart: one cache miss each). The same bits:
    such a byte's entries are all +0.0 (0.0 plus zeros), the sum starts at +0.0 and never
    becomes -0.0 (an exact cancellation rounds to +0.0), and ``x + 0.0 == x`` for every other
    ``x``."""
    width = words.shape[2]
    active, used, slot = _active(tables, words.shape[1])
    rows = np.empty((max(used.size, 1), _BATCH), np.uint64)
    sums = np.empty(_BATCH)
    for s in range(0, ids.size, _BATCH):
        stop = min(s + _BATCH, ids.size)
        for i in range(s, stop):
            b, r = ids[i] // width, ids[i] % width
            for t in range(used.size):
                rows[t, i - s] = words[b, used[t], r]
        _add_bytes(rows, stop - s, tables, active, slot, sums)
        out[s:stop] = sums[:stop - s]


def _row_sums(key_rows: np.ndarray, chosen: np.ndarray, tables: np.ndarray,  # pragma: no cover
              out: np.ndarray) -> None:
    """``out[i]`` = the float64 score of the key whose words are ``key_rows[chosen[i]]``, as
    ``_sums`` adds it (the same bytes in the same order)."""
    active, used, slot = _active(tables, key_rows.shape[1])
    rows = np.empty((max(used.size, 1), _BATCH), np.uint64)
    sums = np.empty(_BATCH)
    for s in range(0, chosen.size, _BATCH):
        stop = min(s + _BATCH, chosen.size)
        for i in range(s, stop):
            for t in range(used.size):
                rows[t, i - s] = key_rows[chosen[i], used[t]]
        _add_bytes(rows, stop - s, tables, active, slot, sums)
        out[s:stop] = sums[:stop - s]


def _window(ids: np.ndarray, approx: np.ndarray, k: int, window: int) -> np.ndarray:
    # pragma: no cover - compiled
    """The ids whose integer score is at least the k-th largest one minus ``window``, in the
    order given."""
    kth = np.partition(approx, approx.size - k)[approx.size - k]
    keep = 0
    for i in range(approx.size):
        keep += approx[i] >= kth - window
    out = np.empty(keep, np.int64)
    keep = 0
    for i in range(approx.size):
        if approx[i] >= kth - window:
            out[keep] = ids[i]
            keep += 1
    return out


def _before(key: np.ndarray, ids: np.ndarray, a: int, b: int) -> bool:
    # pragma: no cover - compiled
    """Whether entry ``a`` comes before entry ``b``: larger key, or equal key and smaller id."""
    return key[a] > key[b] or (key[a] == key[b] and ids[a] < ids[b])


def _sorted(key: np.ndarray, ids: np.ndarray, order: np.ndarray) -> np.ndarray:
    # pragma: no cover - compiled
    """``order`` (positions) sorted best first, ties by id: runs of 16 by insertion, then
    merged pairwise. The ids are distinct, so the order is total and any sort gives it."""
    n = order.size
    for lo in range(0, n, 16):
        for i in range(lo + 1, min(lo + 16, n)):
            x = order[i]
            j = i
            while j > lo and _before(key, ids, x, order[j - 1]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = x
    src, dst = order, np.empty_like(order)
    width = 16
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for o in range(lo, hi):
                if j < hi and (i >= mid or _before(key, ids, src[j], src[i])):
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
        src, dst = dst, src
        width *= 2
    return src


def _best(ids: np.ndarray, scores: np.ndarray, k: int, absolute: bool
          ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """``indices._topk.best_k``: the ``k`` entries of largest score (``|score|`` with
    ``absolute``), best first, ties by id (the ids are distinct). Every entry of a key at least
    the k-th largest key, sorted; the first k are the answer."""
    key = np.abs(scores) if absolute else scores
    if ids.size > k:
        kth = np.partition(key, ids.size - k)[ids.size - k]
        order = np.flatnonzero(key >= kth)
    else:
        order = np.arange(ids.size)
    order = _sorted(key, ids, order)[:k]
    return scores[order], ids[order]


def _fill(packed: np.ndarray, words: np.ndarray, first: int) -> int:  # pragma: no cover
    """Keys ``first .. first + len(packed) - 1`` from their packed bytes into ``words`` (byte
    ``8 w + i`` of a key is byte ``i`` of its word ``w``, little-endian); returns the largest
    popcount among them."""
    width = words.shape[2]
    n_bytes = packed.shape[1]
    top = 0
    for i in range(packed.shape[0]):
        b, r = (first + i) // width, (first + i) % width
        count = 0
        for w in range(words.shape[1]):
            word = np.uint64(0)
            for j in range(min(8, n_bytes - 8 * w)):
                word |= np.uint64(packed[i, 8 * w + j]) << np.uint64(8 * j)
            words[b, w, r] = word
            count += _popcount(word)  # type: ignore[call-arg]
        top = max(top, count)
    return top


_tables = njit_cached(_tables, boundscheck=False)
_active = njit_cached(_active, boundscheck=False)
_add_bytes = njit_cached(_add_bytes, boundscheck=False)
_sums = njit_cached(_sums, boundscheck=False)
_row_sums = njit_cached(_row_sums, boundscheck=False)
_window = njit_cached(_window, boundscheck=False)
_fill = njit_cached(_fill, boundscheck=False)
_before = njit_cached(_before, boundscheck=False)
_sorted = njit_cached(_sorted, boundscheck=False)
_best = njit_cached(_best, boundscheck=False)


def byte_tables(v: np.ndarray, n_bytes: int) -> np.ndarray:
    """The ``(n_bytes, 256)`` subset-sum tables of ``v`` (zero beyond its length)."""
    tables = np.empty((n_bytes, 256))
    _tables(v, tables)
    return tables


def rescore(words: np.ndarray, ids: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """The float64 scores of the keys ``ids`` (see the module docstring)."""
    out = np.empty(ids.size)
    _sums(words, ids, tables, out)
    return out


def window_top(words: np.ndarray, ids: np.ndarray, approx: np.ndarray, k: int, window: int,
               tables: np.ndarray, absolute: bool, rows: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """The exact top-``k`` (scores, ids), best first with ties by id, of the distinct
    candidates ``ids`` given their integer scores ``approx`` (``k <= len(ids)``): those within
    ``window`` of the k-th best integer score, rescored in float64; and how many those were.
    ``rows[i]``, if given, holds the words of key ``ids[i]`` (read there, not in ``words``)."""
    if rows is None:
        kept = _window(ids, approx, k, window)
        scores = rescore(words, kept, tables)
    else:
        chosen = _window(np.arange(ids.size), approx, k, window)
        kept = ids[chosen]
        scores = np.empty(chosen.size)
        _row_sums(rows, chosen, tables, scores)
    top_scores, top = best(kept, scores, k, absolute)
    return top_scores, top, kept.size


def best(ids: np.ndarray, scores: np.ndarray, k: int, absolute: bool
         ) -> tuple[np.ndarray, np.ndarray]:
    """``indices._topk.best_k(ids, scores, k, key=|scores| if absolute)`` for distinct ids."""
    return _best(ids, scores, k, absolute)


def fill_words(packed: np.ndarray, words: np.ndarray, first: int) -> int:
    """Write the keys ``packed`` (rows of ``np.packbits`` bytes) into ``words`` from key
    ``first`` on; return their largest popcount."""
    return int(_fill(packed, words, first))
