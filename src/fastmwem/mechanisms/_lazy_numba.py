"""Compiled helper of the lazy exponential mechanism: the tail ids' acceptance (numba).

``accept`` runs the one-by-one pass over a batch of drawn ids that
:func:`fastmwem.mechanisms.lazy._distinct_ids` defines (each id not forbidden and not accepted
before, in draw order, until enough are accepted) with an open-addressing hash set of the
forbidden and accepted ids: a few operations per draw, where the array version sorts every
batch. The draws themselves stay with the caller's generator, so the accepted ids are the same.
Imported only where numba is installed.
"""

from __future__ import annotations

import numpy as np

from fastmwem._jit import njit_cached

__all__ = ["new_table", "accept"]

_EMPTY = -1  # ids are >= 0
# Fibonacci hashing: the top bits of id * 2^64 / golden ratio (mod 2^64) spread any ids.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


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


def _fill(table: np.ndarray, bits: np.uint64, forbidden: np.ndarray) -> None:
    # pragma: no cover - compiled
    table[:] = _EMPTY
    for x in forbidden:
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


_slot = njit_cached(_slot)
_insert = njit_cached(_insert)
_fill = njit_cached(_fill)
_accept = njit_cached(_accept)


def new_table(forbidden: np.ndarray, t: int) -> tuple[np.ndarray, np.uint64]:
    """A hash set holding ``forbidden``, with room for ``t`` more ids at load at most a half."""
    bits = max(4, int(2 * (forbidden.size + t)).bit_length())
    table = np.empty(1 << bits, dtype=np.int64)
    _fill(table, np.uint64(bits), forbidden)
    return table, np.uint64(bits)


def accept(draw: np.ndarray, table: np.ndarray, bits: np.uint64, chosen: np.ndarray,
           count: int) -> int:
    """Accept, in draw order, the ids of ``draw`` not in the set (adding them to it), into
    ``chosen[count:]`` until it is full; return the new count."""
    return int(_accept(draw, table, bits, chosen, count))
