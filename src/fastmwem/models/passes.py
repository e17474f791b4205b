"""Reuse passes over single measured queries of a dense state, in one compiled loop.

A reuse pass applies the multiplicative-weights step of every measured query again, in the order
they were measured. With single queries each step touches the whole (small) histogram and does
little else, so calling it through the workload costs far more in Python overhead and argument
checks than in arithmetic (on 256 cells: about 60 us a step, against under 2 us here). The loop
below performs exactly the step of :func:`~fastmwem.models.state.mw_query_step` (same clipping,
factor and normalisation) on the query rows, gathered once. With numba installed
(``pip install "fastmwem[numba]"``) it is compiled; without, the same arithmetic runs in numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from fastmwem._jit import njit_cached

__all__ = ["fit_queries"]


def _fit_loop(p: np.ndarray, rows: np.ndarray, targets: np.ndarray,  # pragma: no cover - compiled
              s: float, passes: int, tolerance: float, scratch: np.ndarray) -> int:
    """``passes`` passes (stopping once a pass moves ``p`` by less than ``tolerance`` in L1)."""
    n_rows, n_cells = rows.shape
    # Each row's nonzero cells, in order. The answer <q, p> is summed over them alone: a zero
    # cell's term is +0.0 (p is finite and >= 0), and adding +0.0 leaves a sum that started at
    # +0.0 unchanged (it is never -0.0), so the sum is the full loop's, bit for bit, at half the
    # additions of a counting query. Those additions wait on each other: they set the pace.
    starts = np.zeros(n_rows + 1, np.int64)
    for i in range(n_rows):
        starts[i + 1] = starts[i]
        for j in range(n_cells):
            starts[i + 1] += rows[i, j] != 0.0
    cells = np.empty(starts[n_rows], np.int32)  # a dense state has at most 2^26 cells
    for i in range(n_rows):
        c = starts[i]
        for j in range(n_cells):
            if rows[i, j] != 0.0:
                cells[c] = j
                c += 1
    for done in range(1, passes + 1):
        for j in range(n_cells):
            scratch[j] = p[j]
        for i in range(n_rows):
            current = 0.0
            for c in range(starts[i], starts[i + 1]):
                j = cells[c]
                current += rows[i, j] * p[j]
            step = (targets[i] - current) / (2.0 * s * s)
            unit = np.exp(step)  # the factor of a cell with q(x) = 1, the common case
            mass = 0.0
            for j in range(n_cells):
                value = rows[i, j]
                if value == 1.0:
                    p[j] *= unit
                elif value != 0.0:
                    p[j] *= np.exp(step * value)
                mass += p[j]
            for j in range(n_cells):
                p[j] /= mass
        if tolerance > 0:
            moved = 0.0
            for j in range(n_cells):
                moved += abs(p[j] - scratch[j])
            if moved < tolerance:
                return done
    return passes


_compiled: Callable[..., int] | Literal[False] | None = None  # False once numba was found missing


def _kernel() -> Callable[..., int] | None:
    # numba is imported here, at the first fit: loading it takes about half a second.
    global _compiled
    if _compiled is None:
        try:
            _compiled = njit_cached(_fit_loop, nogil=True)
        except ImportError:  # the numpy loop below is used instead
            _compiled = False
    return None if _compiled is False else _compiled


def _fit_numpy(p: np.ndarray, rows: np.ndarray, targets: np.ndarray, s: float, passes: int,
               tolerance: float, scratch: np.ndarray) -> int:
    for done in range(1, passes + 1):
        np.copyto(scratch, p)
        for row, target in zip(rows, targets):
            current = float(np.einsum("i,i->", row, p))  # no BLAS threads
            p *= np.exp(row * ((target - current) / (2.0 * s * s)))
            p /= p.sum()
        if tolerance > 0 and float(np.abs(p - scratch).sum()) < tolerance:
            return done
    return passes


def fit_queries(p: np.ndarray, rows: np.ndarray, targets: np.ndarray, s: float, passes: int,
                tolerance: float) -> int:
    """In place on the normalised float64 ``p``: up to ``passes`` passes over the measured queries.

    Each step is ``p(x) <- p(x) exp(q(x) (t - <q, p>) / (2 s^2))``, then normalised, where ``t``
    is the measured answer already clipped to ``[low, s]`` and divided by the record count: the
    step of :func:`~fastmwem.models.state.mw_query_step`. Passes stop once one moves ``p`` by
    less than ``tolerance`` in L1 (``0``: run them all). Returns the passes run.

    Args:
        p: the distribution (C-contiguous float64, sums to 1).
        rows: the measured queries' vectors over the cells, one row each, in measurement order.
        targets: the clipped, normalised measurements, one per row.
        s: the workload's query sensitivity (``max |q(x)|``).
        passes: most passes.
        tolerance: stop once a pass moves ``p`` by less than this in L1.
    """
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    targets = np.ascontiguousarray(targets, dtype=np.float64)
    scratch = np.empty_like(p)
    kernel = _kernel()
    if kernel is None:
        return _fit_numpy(p, rows, targets, float(s), int(passes), float(tolerance), scratch)
    return int(kernel(p, rows, targets, float(s), int(passes), float(tolerance), scratch))
