"""Compiled kernels of the bit-packed index (numba, when installed).

They compute exactly what the numpy kernels of ``indices.bitpacked`` compute (integer sums, and
float64 sums of the set cells in ascending order), so both backends return identical results.
Without numba the module still imports (``AVAILABLE`` is False) and is not used.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit, prange
except ImportError:  # the numpy kernels of indices.bitpacked are used instead
    AVAILABLE = False
    prange = range
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "scan", "exact_scores"]

# Rows per parallel task: large enough to amortise scheduling, small enough to balance 2+ cores.
_CHUNK = 8192


def _scan(packed, table, out):  # pragma: no cover - compiled
    n, nb = packed.shape
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            acc = 0
            for j in range(nb):
                acc += table[j * 256 + packed[i, j]]
            out[i] = acc


def _scan_serial(packed, table, out):  # pragma: no cover - compiled
    n, nb = packed.shape
    for i in range(n):
        acc = 0
        for j in range(nb):
            acc += table[j * 256 + packed[i, j]]
        out[i] = acc


def _exact(packed, ids, v, out):  # pragma: no cover - compiled
    nb = packed.shape[1]
    for r in range(ids.size):
        acc = 0.0
        for j in range(nb):
            byte = packed[ids[r], j]
            if byte:
                for b in range(8):
                    if byte & (128 >> b):
                        acc += v[8 * j + b]
        out[r] = acc


if AVAILABLE:
    _scan = njit(parallel=True, cache=True, boundscheck=False)(_scan)
    _scan_serial = njit(cache=True, boundscheck=False)(_scan_serial)
    _exact = njit(cache=True, boundscheck=False)(_exact)


def scan(packed: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Integer score of every packed row: the sum of ``table[j, byte j of the row]``."""
    out = np.empty(packed.shape[0], dtype=np.int32)
    # Waking the worker threads costs more than a small scan (milliseconds on a busy machine).
    (_scan if packed.shape[0] > 4 * _CHUNK else _scan_serial)(packed, table, out)
    return out


def exact_scores(packed: np.ndarray, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Float64 sum of ``v`` over the set cells of each row ``ids``, in ascending cell order."""
    out = np.empty(ids.size)
    _exact(packed, ids, v, out)
    return out
