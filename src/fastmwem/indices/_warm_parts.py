"""One part of a warm-start index's main keys: its region and its sorted reference scores.

``WarmStartIndex`` cuts its main keys into parts of whole blocks and keeps two levels of
reference scores per part (see ``indices.warm``):

* level 0, a scan of the part's keys at ``v0``: the best region ``R`` of the part (ids and the
  rows as scanned) and the best approximate score ``rest`` outside it, with error ``err0``;
* level 1, a scan of ``R`` at ``v1``: the best quarter of ``R`` sorted by its scores there
  (``sorted``, error ``err1``) and the best score ``rest1`` of the rest of ``R``.

A scan of the part's keys sets both levels at once (the region's scores come out of the same
pass), so a part costs ``1 / parts`` of a full scan when it is due, and a rescan of its region
``|R| / m``: the other parts keep their references. The sorted keys' float rows are copied from
``A`` in level-1 order when a prefix first reaches them (a prefix is then a slice).
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem.indices._warm_rows import FloatRows, Rows, largest

__all__ = ["Part"]


class Part:
    """Rows ``start .. stop - 1`` of the main keys ``[A_i, o_i]`` and their reference scores.

    Level 1 sorts the best quarter of the region, at least ``sorted_min`` keys.
    """

    def __init__(self, start: int, stop: int, A: np.ndarray, offsets: np.ndarray,
                 norms: tuple[float, float, float], dimension: int) -> None:
        self.start, self.stop = start, stop
        self._A, self._o, self._norms, self._dimension = A, offsets, norms, dimension
        self.v0: np.ndarray | None = None
        self.err0, self.rest = 0.0, -math.inf
        self.ids = np.empty(0, dtype=np.int64)
        self.region: Rows | None = None
        self.v1: np.ndarray | None = None
        self.err1, self.rest1 = 0.0, -math.inf
        self.sorted = np.empty(0)
        self.sids = np.empty(0, dtype=np.int64)
        self._soffs = np.empty(0)
        self._srows = np.empty((0, A.shape[1]), dtype=A.dtype)
        self._filled = 0

    def __len__(self) -> int:
        return self.stop - self.start

    def scan_keys(self, rows: Rows, v: np.ndarray, size: int, sorted_min: int,
                  fill: int) -> None:
        """Both levels at ``v``: a scan of the part's keys ``rows`` keeps about ``size`` of
        them as the region, whose scores sort level 1."""
        positions, approx, self.rest, error, self.region = rows.best(v, size)
        self.ids = positions.astype(np.int64, copy=False) + self.start
        self.v0, self.err0 = v.copy(), error
        self._set_order(approx, v, error, sorted_min, fill)

    def scan_region(self, v: np.ndarray, sorted_min: int, fill: int) -> None:
        """Level 1 at ``v`` (level 0 unchanged)."""
        if self.region is None:  # never: the caller scans the keys first
            raise RuntimeError("a part's region is scanned before its keys")
        approx, error = self.region.scan(v)
        self._set_order(approx, v, error, sorted_min, fill)

    def _set_order(self, approx: np.ndarray, v: np.ndarray, error: float, sorted_min: int,
                   fill: int) -> None:
        top, self.rest1 = largest(approx, max(sorted_min, approx.size // 4))
        order = top[np.argsort(-approx[top])]  # ties in any order: only values count
        self.sorted = approx[order]
        self.sids = self.ids[order]
        self._soffs = self._o[self.sids]
        # Float rows even when the region is 16-bit: rescoring a prefix then has the float
        # scan's narrow window (a few keys to score exactly, not thousands).
        self._srows = np.empty((order.size, self._A.shape[1]), dtype=self._A.dtype)
        self._filled = 0
        self._fill(min(order.size, fill))
        self.v1, self.err1 = v.copy(), error

    def _fill(self, stop: int) -> None:
        self._srows[self._filled:stop] = self._A[self.sids[self._filled:stop]]
        self._filled = max(self._filled, stop)

    def prefix(self, below: float) -> int:
        """How many sorted keys have a level-1 score ``>= below``."""
        return int(np.searchsorted(-self.sorted, -below, side="right"))

    def rows(self, count: int) -> FloatRows:
        """The first ``count`` sorted keys as float rows (copying at least twice the rows
        copied so far when a prefix first goes beyond them: few copies)."""
        if count > self._filled:
            self._fill(min(self.sorted.size, max(count, 2 * self._filled)))
        return FloatRows(self._srows[:count], self._soffs[:count], self._norms,
                         self._dimension)
