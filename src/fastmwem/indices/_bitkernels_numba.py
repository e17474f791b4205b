"""Compiled kernels of the bit-packed index (numba, when installed).

The keys are stored in blocks of ``width`` keys, byte-major within a block (``blocks[b, j, r]``
is byte ``j`` of key ``b * width + r``): a scan then adds one table per byte column over a whole
block of independent accumulators, about twice as fast as a row-by-row scan. The kernels compute
exactly what the numpy kernels of ``indices.bitpacked`` compute (integer sums, and float64 sums
of the set cells in ascending order), so both backends return identical results. Without numba
the module still imports (``AVAILABLE`` is False) and is not used.
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

# Blocks below which the scan stays on one thread: waking workers costs more (milliseconds on a
# busy machine) than it saves.
_PARALLEL_BLOCKS = 8


def _scan(blocks, table, absolute, out):  # pragma: no cover - compiled
    n_blocks, nb, width = blocks.shape
    for b in prange(n_blocks):
        acc = out[b * width:(b + 1) * width]
        acc[:] = 0
        j = 0
        while j + 4 <= nb:  # four byte columns per pass: fewer passes over the accumulators
            t0 = table[j * 256:(j + 1) * 256]
            t1 = table[(j + 1) * 256:(j + 2) * 256]
            t2 = table[(j + 2) * 256:(j + 3) * 256]
            t3 = table[(j + 3) * 256:(j + 4) * 256]
            c0, c1, c2, c3 = blocks[b, j], blocks[b, j + 1], blocks[b, j + 2], blocks[b, j + 3]
            for r in range(width):
                acc[r] += (t0[c0[r]] + t1[c1[r]]) + (t2[c2[r]] + t3[c3[r]])
            j += 4
        while j < nb:
            t0 = table[j * 256:(j + 1) * 256]
            c0 = blocks[b, j]
            for r in range(width):
                acc[r] += t0[c0[r]]
            j += 1
        if absolute:
            for r in range(width):
                acc[r] = abs(acc[r])


def _exact(blocks, ids, v, out):  # pragma: no cover - compiled
    nb, width = blocks.shape[1], blocks.shape[2]
    for k in range(ids.size):
        b, r = ids[k] // width, ids[k] % width
        acc = 0.0
        for j in range(nb):
            byte = blocks[b, j, r]
            for bit in range(8):
                # Branch-free: an unset cell adds an exact zero, so the sum is still the
                # ascending-order sum of the set cells (random bits defeat branch prediction).
                acc += v[8 * j + bit] * ((byte >> (7 - bit)) & 1)
        out[k] = acc


if AVAILABLE:
    _scan_parallel = njit(parallel=True, cache=True, boundscheck=False)(_scan)
    _scan_serial = njit(cache=True, boundscheck=False)(_scan)
    _exact = njit(cache=True, boundscheck=False)(_exact)


def scan(blocks: np.ndarray, table: np.ndarray, absolute: bool, threads: int) -> np.ndarray:
    """Integer score of every stored key (the sum of ``table[j, byte j of the key]``), or its
    absolute value, on ``threads`` threads; padding keys of the last block included."""
    out = np.empty(blocks.shape[0] * blocks.shape[2], dtype=np.int32)
    if threads <= 1 or blocks.shape[0] < _PARALLEL_BLOCKS:
        _scan_serial(blocks, table, absolute, out)
        return out
    before = get_num_threads()
    set_num_threads(min(threads, config.NUMBA_NUM_THREADS))
    try:
        _scan_parallel(blocks, table, absolute, out)
    finally:
        set_num_threads(before)
    return out


def exact_scores(blocks: np.ndarray, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Float64 sum of ``v`` over the set cells of each key ``ids``, in ascending cell order."""
    out = np.empty(ids.size)
    _exact(blocks, ids, v, out)
    return out


def default_threads() -> int:
    """Threads numba would use (its default: every core)."""
    return get_num_threads()
