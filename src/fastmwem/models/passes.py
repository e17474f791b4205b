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

__all__ = ["fit_queries", "SparseRows"]


def _fit_loop(p: np.ndarray, cells: np.ndarray, starts: np.ndarray,  # pragma: no cover
              values: np.ndarray, ones: np.ndarray, binary: np.ndarray, targets: np.ndarray,
              s: float, passes: int, tolerance: float, scratch: np.ndarray) -> int:
    """``passes`` passes (stopping once a pass moves ``p`` by less than ``tolerance`` in L1) over
    the rows of a :class:`SparseRows`.

    The arithmetic of the loop over dense rows that it replaced, bit for bit:

    * the answer <q, p> is summed over the nonzero cells alone, in order: a zero cell's term
      is +0.0 (p is finite and >= 0), and adding +0.0 leaves a sum that started at +0.0
      unchanged (it is never -0.0); a 0/1 row's terms ``1.0 * p`` are ``p``;
    * a cell of a value other than 0 and 1 is multiplied by its own factor first; then one
      pass multiplies the cells of value 1 by the common factor and the others by 1.0 (which
      changes no finite float) and sums the mass in cell order, as the dense loop did.

    The sums' chains of dependent additions set the pace; what is read from memory each round
    is a 0/1 row's nonzero cells and a bit per cell, an eighth of the dense row's bytes.
    """
    n_cells = p.size
    for done in range(1, passes + 1):
        for j in range(n_cells):
            scratch[j] = p[j]
        for i in range(starts.size - 1):
            current = 0.0
            if binary[i]:
                for c in range(starts[i], starts[i + 1]):
                    current += p[cells[c]]
            else:
                for c in range(starts[i], starts[i + 1]):
                    current += values[c] * p[cells[c]]
            step = (targets[i] - current) / (2.0 * s * s)
            unit = np.exp(step)  # the factor of a cell with q(x) = 1, the common case
            if not binary[i]:
                for c in range(starts[i], starts[i + 1]):
                    if values[c] != 1.0:
                        p[cells[c]] *= np.exp(step * values[c])
            mass = 0.0
            for j in range(n_cells):
                p[j] *= unit if (ones[i, j >> 6] >> np.uint64(j & 63)) & np.uint64(1) else 1.0
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


class SparseRows:
    """Query rows as the reuse passes read them, added one at a time as queries are measured.

    Row ``i``'s nonzero ``cells`` (int32: a dense state has at most 2^26 cells) and their
    ``values`` lie at ``starts[i]:starts[i + 1]``; ``ones[i]`` has bit ``j % 64`` of word
    ``j // 64`` set where the row's value is exactly 1; ``binary[i]`` says whether every value
    of the row is 0 or 1 (a counting query).
    """

    def __init__(self) -> None:
        self._cells = np.empty(0, dtype=np.int32)
        self._values = np.empty(0)
        self._starts = [0]
        self._ones = np.empty((0, 0), dtype=np.uint64)
        self._binary: list[bool] = []

    @classmethod
    def of(cls, rows: np.ndarray) -> SparseRows:
        """The rows of a 2-D array."""
        out = cls()
        for row in np.asarray(rows, dtype=np.float64).reshape(len(rows), -1):
            out.add(row)
        return out

    def __len__(self) -> int:
        return len(self._binary)

    def add(self, row: np.ndarray) -> None:
        """Append one row (its values as float64)."""
        row = np.asarray(row, dtype=np.float64).reshape(-1)
        nonzero = np.flatnonzero(row)
        size, end = self._starts[-1], self._starts[-1] + nonzero.size
        if end > self._cells.size:
            grow = max(2 * self._cells.size, end, 1024)
            self._cells = np.concatenate([self._cells[:size], np.empty(grow - size, np.int32)])
            self._values = np.concatenate([self._values[:size], np.empty(grow - size)])
        self._cells[size:end] = nonzero
        self._values[size:end] = row[nonzero]
        self._starts.append(end)
        n = len(self._binary)
        words = -(-row.size // 64)
        if n == self._ones.shape[0]:
            grown = np.zeros((max(16, 2 * n), words), dtype=np.uint64)
            if n:
                grown[:n] = self._ones
            self._ones = grown
        bits = np.packbits(row == 1.0, bitorder="little")
        padded = np.zeros(8 * words, dtype=np.uint8)
        padded[:bits.size] = bits
        self._ones[n] = padded.view("<u8")  # bit j of the row: bit j % 64 of word j // 64
        self._binary.append(bool(np.all(self._values[size:end] == 1.0)))

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(cells, starts, values, ones, binary)`` of the rows so far."""
        n = len(self._binary)
        return (self._cells[:self._starts[-1]], np.asarray(self._starts, dtype=np.int64),
                self._values[:self._starts[-1]], self._ones[:n],
                np.asarray(self._binary, dtype=np.bool_))

    def dense(self, n_cells: int) -> np.ndarray:
        """The rows as a 2-D array over ``n_cells`` cells."""
        cells, starts, values = self.arrays()[:3]
        out = np.zeros((len(self), n_cells))
        out[np.repeat(np.arange(len(self)), np.diff(starts)), cells] = values
        return out


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


def fit_queries(p: np.ndarray, rows: np.ndarray | SparseRows, targets: np.ndarray, s: float,
                passes: int, tolerance: float) -> int:
    """In place on the normalised float64 ``p``: up to ``passes`` passes over the measured queries.

    Each step is ``p(x) <- p(x) exp(q(x) (t - <q, p>) / (2 s^2))``, then normalised, where ``t``
    is the measured answer already clipped to ``[low, s]`` and divided by the record count: the
    step of :func:`~fastmwem.models.state.mw_query_step`. Passes stop once one moves ``p`` by
    less than ``tolerance`` in L1 (``0``: run them all). Returns the passes run.

    Args:
        p: the distribution (C-contiguous float64, sums to 1).
        rows: the measured queries' vectors over the cells, one row each, in measurement order
            (a 2-D array, or :class:`SparseRows` kept as the queries are measured).
        targets: the clipped, normalised measurements, one per row.
        s: the workload's query sensitivity (``max |q(x)|``).
        passes: most passes.
        tolerance: stop once a pass moves ``p`` by less than this in L1.
    """
    targets = np.ascontiguousarray(targets, dtype=np.float64)
    scratch = np.empty_like(p)
    kernel = _kernel()
    if kernel is None:
        dense = rows.dense(p.size) if isinstance(rows, SparseRows) else rows
        return _fit_numpy(p, np.ascontiguousarray(dense, dtype=np.float64), targets, float(s),
                          int(passes), float(tolerance), scratch)
    sparse = rows if isinstance(rows, SparseRows) else SparseRows.of(rows)
    return int(kernel(p, *sparse.arrays(), targets, float(s), int(passes), float(tolerance),
                      scratch))
