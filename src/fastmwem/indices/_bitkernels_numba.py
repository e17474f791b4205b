"""Compiled kernels of the bit-packed index (numba; imported only when numba is installed).

They compute exactly what the numpy kernels of ``indices.bitpacked`` compute (integer sums, and
float64 sums of the set cells in ascending order), so both backends return identical results.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["scan", "exact_scores"]

# Rows per parallel task: large enough to amortise scheduling, small enough to balance 2+ cores.
_CHUNK = 8192


@njit(parallel=True, cache=True, boundscheck=False)
def _scan(packed, table, out):  # pragma: no cover - compiled
    n, nb = packed.shape
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            acc = 0
            for j in range(nb):
                acc += table[j * 256 + packed[i, j]]
            out[i] = acc


@njit(cache=True, boundscheck=False)
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


def scan(packed: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Integer score of every packed row: the sum of ``table[j, byte j of the row]``."""
    out = np.empty(packed.shape[0], dtype=np.int32)
    _scan(packed, table, out)
    return out


def exact_scores(packed: np.ndarray, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Float64 sum of ``v`` over the set cells of each row ``ids``, in ascending cell order."""
    out = np.empty(ids.size)
    _exact(packed, ids, v, out)
    return out
