"""Compiled steps of the lazy exponential mechanism's draw (numba; imported only with it).

Each function here does what the numpy code of ``mechanisms._lazy_draws`` (or, for
:func:`false_positions`, ``np.flatnonzero(~mask)``) does, with the same floating-point
operations in the same order, so the results are the same bits:

* ``accept``: the one-by-one pass over a batch of drawn tail ids (each id neither forbidden
  nor accepted before, in draw order, until enough), against an open-addressing hash set of
  the forbidden and accepted ids, where the array version sorts every batch;
* ``noisy_best``: ``_log_weights`` (``(s / 2 - top / 2) * scale * 2``, nan to ``-inf``) plus the
  Gumbels, its first argmax and the smallest log-weight, in one pass;
* ``ordered_top``: whether an oracle's candidates, without padding and excluded ids, are
  distinct and already best first with ties by id, and then their first ``k``.

The random numbers stay with the caller's generator and the transcendental functions with numpy.
"""

from __future__ import annotations

import numpy as np

from fastmwem._jit import njit_cached

__all__ = ["new_table", "new_table2", "accept", "noisy_best", "ordered_top", "false_positions"]

_EMPTY = -1  # ids are >= 0
# Fibonacci hashing: the top bits of id * 2^64 / golden ratio (mod 2^64) spread any ids.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# Eight True bytes of a boolean mask read as one 64-bit word (any byte order).
_OPEN = np.uint64(0x0101010101010101)


def _slot(x: np.int64, bits: np.uint64) -> np.int64:  # pragma: no cover - compiled
    return np.int64((np.uint64(x) * _GOLDEN) >> (np.uint64(64) - bits))


def _insert(table: np.ndarray, bits: np.uint64, x: np.int64) -> bool:  # pragma: no cover
    """Add ``x`` to the set; False if it was there already."""
    mask = table.size - 1
    i = _slot(x, bits)
    while table[i] != _EMPTY:
        if table[i] == x:
            return False
        i = (i + 1) & mask
    table[i] = x
    return True


def _bits(size: int) -> int:  # pragma: no cover - compiled
    """Bits of a table holding ``size`` ids at load at most a half."""
    bits = 4
    while (1 << bits) < 2 * size:
        bits += 1
    return bits


def _fill(table: np.ndarray, bits: np.uint64, ids: np.ndarray) -> None:  # pragma: no cover
    for x in ids:
        _insert(table, bits, x)


def _accept(draw: np.ndarray, table: np.ndarray, bits: np.uint64, chosen: np.ndarray,
            count: int) -> int:  # pragma: no cover - compiled
    """Accept the new ids of ``draw`` in order into ``chosen[count:]``; the new count."""
    for x in draw:
        if count == chosen.size:
            break
        if _insert(table, bits, x):
            chosen[count] = x
            count += 1
    return count


def _log_weight(score: float, scale: float, top: float) -> float:  # pragma: no cover
    # mechanisms.exponential._log_weights for one finite scale, operation for operation
    out = ((score * 0.5 - top * 0.5) * scale) * 2.0
    return -np.inf if np.isnan(out) else out


def _noisy_best(scores: np.ndarray, scale: float, top: float,  # pragma: no cover - compiled
                gumbels: np.ndarray) -> tuple[int, float, float]:
    winner, best, lowest = 0, 0.0, 0.0
    for i in range(scores.size):
        y = _log_weight(scores[i], scale, top)
        noisy = y + gumbels[i]
        if i == 0 or noisy > best:
            winner, best = i, noisy
        if i == 0 or y < lowest:
            lowest = y
    return winner, best, lowest


def _ordered_top(ids: np.ndarray, scores: np.ndarray, k: int,  # pragma: no cover - compiled
                 excluded: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    for i in range(1, excluded.size):
        if excluded[i] <= excluded[i - 1]:  # not sorted and distinct: the array version
            return ids[:0], scores[:0], False
    kept = np.empty(ids.size, np.int64)
    size = 0
    for i in range(ids.size):
        x = ids[i]
        if x < 0:
            continue
        if excluded.size:
            pos = min(np.searchsorted(excluded, x), excluded.size - 1)
            if excluded[pos] == x:
                continue
        if size and not (scores[i] < scores[kept[size - 1]] or (
                scores[i] == scores[kept[size - 1]] and x > ids[kept[size - 1]])):
            return ids[:0], scores[:0], False
        kept[size] = i
        size += 1
    if size == 0:
        return ids[:0], scores[:0], False
    # equal scores came in increasing ids; an id listed twice with two scores is still caught
    bits = _bits(size)
    table = np.full(1 << bits, _EMPTY, np.int64)
    for c in range(size):
        if not _insert(table, np.uint64(bits), ids[kept[c]]):
            return ids[:0], scores[:0], False
    take = kept[:min(k, size)]
    return ids[take], scores[take], True


def _false_positions(words: np.ndarray, mask: np.ndarray) -> np.ndarray:  # pragma: no cover
    out = np.empty(64, np.int64)
    count = 0
    for w in range(words.size + 1):
        if w < words.size and words[w] == _OPEN:
            continue
        for j in range(8 * w, min(8 * w + 8, mask.size)):
            if mask[j] == 0:
                if count == out.size:
                    grown = np.empty(2 * out.size, np.int64)
                    grown[:count] = out
                    out = grown
                out[count] = j
                count += 1
    return out[:count].copy()


_slot = njit_cached(_slot)
_insert = njit_cached(_insert)
_bits = njit_cached(_bits)
_fill = njit_cached(_fill)
_accept = njit_cached(_accept)
_log_weight = njit_cached(_log_weight)
_noisy_best = njit_cached(_noisy_best)
_ordered_top = njit_cached(_ordered_top)
_false_positions = njit_cached(_false_positions)


def new_table(forbidden: np.ndarray, t: int) -> tuple[np.ndarray, np.uint64]:
    """A hash set holding ``forbidden``, with room for ``t`` more ids at load at most a half."""
    return new_table2(forbidden, forbidden[:0], t)


def new_table2(first: np.ndarray, second: np.ndarray, t: int) -> tuple[np.ndarray, np.uint64]:
    """A hash set holding ``first`` and ``second``, with room for ``t`` more ids."""
    bits = int(_bits(first.size + second.size + t))
    table = np.full(1 << bits, _EMPTY, dtype=np.int64)
    _fill(table, np.uint64(bits), np.asarray(first, dtype=np.int64))
    _fill(table, np.uint64(bits), np.asarray(second, dtype=np.int64))
    return table, np.uint64(bits)


def accept(draw: np.ndarray, table: np.ndarray, bits: np.uint64, chosen: np.ndarray,
           count: int) -> int:
    """Accept, in draw order, the ids of ``draw`` not in the set (adding them to it), into
    ``chosen[count:]`` until it is full; return the new count."""
    return int(_accept(draw, table, bits, chosen, count))


def noisy_best(scores: np.ndarray, scale: float, top: float, gumbels: np.ndarray
               ) -> tuple[int, float, float]:
    """The first argmax and the maximum of ``_log_weights(scores, scale, top) + gumbels``
    (``scale`` finite), and the smallest log-weight."""
    winner, best, lowest = _noisy_best(scores, float(scale), float(top), gumbels)
    return int(winner), float(best), float(lowest)


def ordered_top(ids: np.ndarray, scores: np.ndarray, k: int, excluded: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The first ``k`` candidates that are not padding (``-1``) nor in the sorted ``excluded``,
    and True, if those candidates are distinct and best first with ties by id; else False."""
    top_ids, top_scores, ordered = _ordered_top(ids, scores, int(k), excluded)
    return top_ids, top_scores, bool(ordered)


def false_positions(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(~mask)`` of a C-contiguous 1-D boolean ``mask``, read 8 entries at a
    time (most are True, and whole words of True are passed over)."""
    whole = mask.size - mask.size % 8
    return _false_positions(mask[:whole].view(np.uint64), mask.view(np.uint8))
