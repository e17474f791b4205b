"""Compiled kernels of the bit-packed index (numba, when installed).

They compute exactly what the numpy kernels of ``indices.bitpacked`` compute (integer sums, and
float64 sums of the set cells in ascending order), so both backends return identical results.
Without numba the module still imports (``AVAILABLE`` is False) and is not used.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import config, get_num_threads, njit, prange, set_num_threads
except ImportError:  # the numpy kernels of indices.bitpacked are used instead
    AVAILABLE = False
    prange = range
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "scan", "exact_scores", "default_threads"]

# Rows per parallel task: large enough to amortise scheduling, small enough to balance 2+ cores.
_CHUNK = 8192


def _scan(packed, table, absolute, out):  # pragma: no cover - compiled
    n, nb = packed.shape
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            acc = 0
            for j in range(nb):
                acc += table[j * 256 + packed[i, j]]
            out[i] = abs(acc) if absolute else acc


def _scan_serial(packed, table, absolute, out):  # pragma: no cover - compiled
    n, nb = packed.shape
    for i in range(n):
        acc = 0
        for j in range(nb):
            acc += table[j * 256 + packed[i, j]]
        out[i] = abs(acc) if absolute else acc


def _exact(packed, ids, v, out):  # pragma: no cover - compiled
    nb = packed.shape[1]
    for r in range(ids.size):
        acc = 0.0
        for j in range(nb):
            byte = packed[ids[r], j]
            for b in range(8):
                # Branch-free: an unset cell adds an exact zero, so the sum is still the
                # ascending-order sum of the set cells (random bits defeat branch prediction).
                acc += v[8 * j + b] * ((byte >> (7 - b)) & 1)
        out[r] = acc


if AVAILABLE:
    _scan = njit(parallel=True, cache=True, boundscheck=False)(_scan)
    _scan_serial = njit(cache=True, boundscheck=False)(_scan_serial)
    _exact = njit(cache=True, boundscheck=False)(_exact)


def scan(packed: np.ndarray, table: np.ndarray, absolute: bool, threads: int) -> np.ndarray:
    """Integer score of every packed row (the sum of ``table[j, byte j of the row]``), or its
    absolute value, on ``threads`` threads."""
    out = np.empty(packed.shape[0], dtype=np.int32)
    # Waking worker threads costs more than a small scan (milliseconds on a busy machine).
    if threads <= 1 or packed.shape[0] <= 4 * _CHUNK:
        _scan_serial(packed, table, absolute, out)
        return out
    before = get_num_threads()
    set_num_threads(min(threads, config.NUMBA_NUM_THREADS))
    try:
        _scan(packed, table, absolute, out)
    finally:
        set_num_threads(before)
    return out


def default_threads() -> int:
    """Threads numba would use (its default: every core)."""
    return get_num_threads()


def exact_scores(packed: np.ndarray, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Float64 sum of ``v`` over the set cells of each row ``ids``, in ascending cell order."""
    out = np.empty(ids.size)
    _exact(packed, ids, v, out)
    return out
