"""One part of a warm-start index's main keys: its region and the top of its region.

``WarmStartIndex`` cuts its main keys into parts of whole blocks and keeps, per part, two
reference scans (see ``indices.warm``):

* level 0, a scan of the part's keys at ``v0`` (error ``err0``): the best region ``R`` of the
  part (ids and rows as scanned) and the best approximate score ``rest`` outside it;
* level 1, a scan of ``R`` at ``v1`` (error ``err1``): the top ``S`` of ``R`` (its best
  quarter there, ids and a compact copy of its rows) and the best score ``rest1`` of ``R``
  outside ``S``.

A search scans every part's ``S`` at its query; the references only bound the keys outside
``S``. A scan of the part's keys sets both levels at once (the region's scores come out of the
same pass), so a part that is due costs ``1 / parts`` of a full scan, and a new top of its
region ``|R| / m``; the other parts keep their references.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem.indices._warm_rows import Rows, join, largest
from fastmwem.indices.flat import exact_dot

__all__ = ["Part", "Top", "FloatCache"]


class Part:
    """Rows ``start .. stop - 1`` of the main keys and their reference scans.

    ``S`` holds the best quarter of the region at ``v1``, at least ``top_min`` keys (at
    most half the region).
    """

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop
        self.v0: np.ndarray | None = None
        self.err0, self.rest = 0.0, -math.inf
        self.ids = np.empty(0, dtype=np.int64)
        self.region: Rows | None = None
        self.v1: np.ndarray | None = None
        self.err1, self.rest1 = 0.0, -math.inf
        self.top_ids = np.empty(0, dtype=np.int64)
        self.top: Rows | None = None
        self._outside = np.zeros(0, dtype=bool)  # the region's keys outside S

    def __len__(self) -> int:
        return self.stop - self.start

    def scan_keys(self, rows: Rows, v: np.ndarray, size: int, top_min: int) -> None:
        """Both levels at ``v``: a scan of the part's keys ``rows`` keeps about ``size`` of
        them as the region, whose scores there choose ``S``."""
        positions, approx, self.rest, error, self.region = rows.best(v, size)
        self.ids = positions.astype(np.int64, copy=False) + self.start
        self.v0, self.err0 = v.copy(), error
        self._choose(approx, v, error, top_min)

    def scan_region(self, v: np.ndarray, top_min: int, lower: float) -> bool:
        """Level 1 at ``v`` (level 0 unchanged): ``S`` is kept while the region's best score
        outside it leaves at least half the margin below ``lower`` that a new ``S`` would,
        else chosen again. Either way ``rest1`` bounds the region's keys outside ``S`` at
        ``v``. Returns whether ``S`` changed."""
        if self.region is None:  # never: the caller scans the keys first
            raise RuntimeError("a part's region is scanned before its keys")
        approx, error = self.region.scan(v)
        size = self._size(approx.size, top_min)
        outside = approx[self._outside]
        if math.isfinite(lower) and size == self.top_ids.size and size < approx.size:
            kept = float(outside.max(initial=-math.inf))
            best = float(np.partition(approx, approx.size - size - 1)[approx.size - size - 1])
            if lower - kept >= 0.5 * (lower - best):
                self.rest1, self.v1, self.err1 = kept, v.copy(), error
                return False
        self._choose(approx, v, error, top_min)
        return True

    @staticmethod
    def _size(region: int, top_min: int) -> int:
        # At most half the region: the rest of it keeps level 1 in use on few keys.
        return min(max(top_min, region // 4), max(region // 2, 1))

    def _choose(self, approx: np.ndarray, v: np.ndarray, error: float, top_min: int) -> None:
        if self.region is None:  # never: set by scan_keys
            raise RuntimeError("a part's top is chosen before its region")
        positions, self.rest1 = largest(approx, self._size(approx.size, top_min))
        positions = np.sort(positions)  # the copy reads the region's rows in order
        self.top = self.region.take(positions)
        self.top_ids = self.ids[positions]
        self._outside = np.ones(approx.size, dtype=bool)
        self._outside[positions] = False
        self.v1, self.err1 = v.copy(), error


class Top:
    """The parts' ``S`` end to end: one scan a search. ``slots`` locate their float rows in a
    ``FloatCache`` (``-1``: not copied yet)."""

    def __init__(self, parts: list[Part], offsets: np.ndarray, cache: FloatCache) -> None:
        tops = [p.top for p in parts if p.top is not None]
        if len(tops) != len(parts):  # never: the caller joins scanned parts only
            raise RuntimeError("a part without a top is joined")
        self.rows = join(tops)
        self.ids = np.concatenate([p.top_ids for p in parts])
        self.offsets = offsets[self.ids]
        self.slots = cache.slots(self.ids)


class FloatCache:
    """Float rows of main keys, copied from ``A`` when a search first rescores them and kept
    across searches (nearby queries rescore mostly the same keys, even after new ``S``)."""

    def __init__(self, A: np.ndarray, capacity: int) -> None:
        self._A = A
        self._slot = np.full(A.shape[0], -1, dtype=np.int32 if A.shape[0] < 2**31 else np.int64)
        # float64 (exactly the rows' values): exact_dot then converts nothing
        self._rows = np.empty((capacity, A.shape[1]), dtype=np.float64)
        self._ids = np.empty(capacity, dtype=np.int64)
        self._used = 0

    def slots(self, ids: np.ndarray) -> np.ndarray:
        """Where the rows of ``ids`` are (``-1``: not copied)."""
        slots: np.ndarray = self._slot[ids].astype(np.int64)
        return slots

    def exact(self, top: Top, chosen: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The exact float64 scores at ``v`` of the keys of ``top`` at positions ``chosen``:
        the same bits as ``WarmStartIndex.score`` (``exact_dot`` of the same rows, plus the
        offset term)."""
        slots = top.slots[chosen]
        missing = slots < 0
        if missing.any():
            if self._used + int(missing.sum()) > self._rows.shape[0]:  # full: start over
                self._slot[self._ids[:self._used]] = -1
                self._used = 0
                top.slots[:] = -1
                missing[:] = True
            new = top.ids[chosen[missing]]
            place = np.arange(self._used, self._used + new.size)
            self._rows[place] = self._A[new]
            self._ids[place] = new
            self._slot[new] = place
            self._used += new.size
            top.slots[chosen[missing]] = place
            slots[missing] = place
        scores: np.ndarray = (exact_dot(self._rows[slots], v[:-1])
                              + float(v[-1]) * top.offsets[chosen])
        return scores
