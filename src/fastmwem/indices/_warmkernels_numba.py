"""Compiled kernels of the warm-start index's 16-bit key rows (numba; imported only with it).

The keys ``[A_i, o_i] ~ s q_i`` (``s`` a power of two, ``indices._warm_rows``) are stored in
blocks of ``width`` rows, column after column within a block: ``cols[b, j, r]`` is entry ``j``
of row ``b * width + r``. A scan adds ``q_ij y_j`` column by column into float32 sums over the
rows of a block (vectorised across the rows, with no sum across the lanes of a vector), so it
runs at the speed of the memory. The sums are float32 in an order of their own; the caller's
error bound holds for every order.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._jit import njit_cached

__all__ = ["scan", "select", "gather", "quantize"]


def _block(cols: np.ndarray, b: int, y: np.ndarray,  # pragma: no cover - compiled
           acc: np.ndarray) -> None:
    """``acc[r]`` = ``fl32(sum_j cols[b, j, r] y_j)``, the columns in order."""
    y0 = y[0]
    for r in range(acc.size):
        acc[r] = np.float32(cols[b, 0, r]) * y0
    for j in range(1, y.size):
        yj = y[j]
        for r in range(acc.size):
            acc[r] += np.float32(cols[b, j, r]) * yj


def _scan(cols: np.ndarray, blocks: np.ndarray, y: np.ndarray,  # pragma: no cover - compiled
          out: np.ndarray) -> None:
    width = cols.shape[2]
    acc = np.empty(width, np.float32)
    for i in range(blocks.size):
        _block(cols, blocks[i], y, acc)
        out[i * width:(i + 1) * width] = acc


def _select(cols: np.ndarray, n: int, y: np.ndarray, threshold: np.float32, ids: np.ndarray,
            dots: np.ndarray, region: np.ndarray) -> tuple[int, float]:
    # pragma: no cover - compiled
    """The rows whose dot product reaches ``threshold`` (up to the buffer's size): positions,
    dot products, and their columns copied into ``region`` (``region[j, c]``) while the block
    is in cache; returns their count and the best dot product of those left out because the
    buffer was full (``-inf`` if none)."""
    n_blocks, n_cols, width = cols.shape
    acc = np.empty(width, np.float32)
    picked = np.empty(width, np.int64)
    cap = ids.size
    count = 0
    rest = -np.inf
    for b in range(n_blocks):
        _block(cols, b, y, acc)
        stop = min(width, n - b * width)
        # Branch-free: every row is written at the end of the list, which grows only when the
        # row passes (the loop vectorises; a branch per row cost a third of the scan).
        found = 0
        for r in range(stop):
            picked[found] = r
            found += acc[r] >= threshold
        take = min(found, cap - count)  # the rows that fit in the buffer
        for c in range(take):
            ids[count + c] = b * width + picked[c]
            dots[count + c] = acc[picked[c]]
        for j in range(n_cols):
            for c in range(take):
                region[j, count + c] = cols[b, j, picked[c]]
        count += take
        for c in range(take, found):
            rest = max(rest, np.float64(acc[picked[c]]))
    return count, rest


def _gather(cols: np.ndarray, positions: np.ndarray,  # pragma: no cover - compiled
            region: np.ndarray) -> None:
    # Column by column: each output row is written in order, and sorted positions read each
    # column of a block in order.
    width = cols.shape[2]
    blocks = positions // width
    within = positions % width
    for j in range(cols.shape[1]):
        for c in range(positions.size):
            region[j, c] = cols[blocks[c], j, within[c]]


def _quantize(block: np.ndarray, offsets: np.ndarray, inverse: float,
              cols: np.ndarray) -> float:  # pragma: no cover - compiled
    """``cols[j, r]`` = entry ``j`` of row ``r`` of ``[block, offsets]`` times ``inverse`` (a
    power of two, so exactly), rounded to an integer within ``+- 32767``; returns the largest
    rounding."""
    worst = 0.0
    d = block.shape[1]
    for r in range(block.shape[0]):
        for j in range(d + 1):
            scaled = (block[r, j] if j < d else offsets[r]) * inverse
            rounded = min(max(np.rint(scaled), -32767.0), 32767.0)
            cols[j, r] = np.int16(rounded)
            worst = max(worst, abs(scaled - rounded))
    return worst


# Only the float32 sums of a block may be contracted; the rest runs as written.
_block = njit_cached(_block, boundscheck=False, fastmath={"contract"})
_scan = njit_cached(_scan, boundscheck=False)
_select = njit_cached(_select, boundscheck=False)
_gather = njit_cached(_gather, boundscheck=False)
_quantize = njit_cached(_quantize, boundscheck=False)


def scan(cols: np.ndarray, blocks: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``fl32(q_i . y)`` for every row of the blocks ``blocks`` (padding rows included)."""
    out = np.empty(blocks.size * cols.shape[2], dtype=np.float32)
    _scan(cols, np.asarray(blocks, dtype=np.int64), y, out)
    return out


def select(cols: np.ndarray, n: int, y: np.ndarray, scale: float, threshold: float, cap: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Rows whose score ``fl32(q_i . y) scale`` (``scale`` a power of two) reaches
    ``threshold``, the first ``cap`` of them, possibly with some a hair below it: positions,
    dot products and their columns (``(d + 1, count)``); and an upper bound on the scores of
    the other rows. The test runs on the dot products, against the threshold in their units
    rounded down to float32: a row left out scores below the threshold."""
    ids = np.empty(cap, dtype=np.int64)
    dots_kept = np.empty(cap, dtype=np.float32)
    region = np.empty((cols.shape[1], cap), dtype=cols.dtype)
    units = threshold / scale  # exact: a power of two
    limit = 2.0**100  # beyond any dot product of 16-bit rows and a query scaled into [-1, 1]
    threshold32 = np.float32(min(max(units, -limit), limit))
    if float(threshold32) > units:  # rounded up: one float32 step down
        threshold32 = np.nextafter(threshold32, np.float32(-np.inf))
    count, rest = _select(cols, n, y, threshold32, ids, dots_kept, region)
    return (ids[:count], dots_kept[:count], region[:, :count],
            max(float(threshold), rest * scale))


def gather(cols: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The columns of the rows ``positions``, ``(d + 1, len(positions))``."""
    region = np.empty((cols.shape[1], positions.size), dtype=cols.dtype)
    _gather(cols, np.asarray(positions, dtype=np.int64), region)
    return region


def quantize(block: np.ndarray, offsets: np.ndarray, power: int, cols: np.ndarray) -> float:
    """Fill ``cols`` (``(d + 1, rows)``) with ``[block, offsets] / 2^power`` as 16-bit integers
    (see ``_quantize``); returns the largest rounding."""
    return _quantize(block, offsets, math.ldexp(1.0, -power), cols)
