"""WarmStartIndex: an exact top-k oracle for slowly moving queries (the MWU iterates).

The scalar-private LP scores row ``i`` at ``x`` by ``<[A_i, -b_i], [x, 1]>``, and successive
multiplicative-weights iterates ``x`` move little. For a reference query ``v_ref`` and a new query
``v`` with ``delta = v - v_ref``, every score moved by at most a bound ``B(delta)`` computed from
global statistics of the keys (no scan):

* Hoelder with midrange centring: ``|A_i . dx| <= max_i halfrange(A_i) |dx|_1 + max|mid| |sum dx|``,
* Cauchy-Schwarz with mean centring: ``|A_i . dx| <= max_i |A_i - mean_i|_2 |dx|_2 + max|mean|
  |sum dx|``,
* the offset column: ``|o_i dt| <= max|o| |dt|``.

On the simplex ``sum dx = 0``, so the centred bounds are much tighter than plain Hoelder.

Two levels of reference scores. A full scan at ``v0`` keeps the best region ``R`` of the keys
(and the best score ``rest`` outside it); a scan of ``R`` alone at a later ``v1`` keeps ``R``
sorted by its scores there. With ``W0``, ``W1`` the distances (rounding plus drift) from the two
references to the exact float64 scores at ``v``, the k-th best exact score is at least
``lower = c1_(k) - W1``; keys outside ``R`` are excluded when ``rest + W0 < lower``, keys of ``R``
with ``c1_i < lower - W1`` always. The survivors, a prefix of ``R``'s order kept contiguous, are
rescored by one BLAS pass with a proven error bound, then exactly within the window of their k-th
score, and the best k returned. A drift that breaks the first condition triggers a full rescan, a long
prefix a rescan of ``R`` (``|R|/m`` of the cost). The result is always a true top-k set, the lazy
exponential mechanism's requirement, whatever the queries; only the cost depends on how far they
move.

The scans read the keys as ``indices._warm_rows`` stores them: with numba and at least 65,536
rows, 16-bit integers times a power of two, whose rounding is part of each scan's proven error
(a full scan reads a quarter of the bytes of float64 keys and keeps the region in the same pass,
so the rounds that need one cost a small multiple of an ordinary round, not a classic scan);
otherwise the float rows, one BLAS product per scan. The sorted part is always float rows,
copied from ``A`` as prefixes reach them, so that rescoring a prefix has a narrow window.

Extra rows (the public objective row of the objective search) are always rescored exactly.
The keys hold the private ``b``: the index is private and ``save`` refuses.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._validation import check_int
from fastmwem.indices._checks import check_queries, real_matrix
from fastmwem.indices._common import IndexBase
from fastmwem.indices._topk import U64, best_k, gamma, holder_bound, pad_results
from fastmwem.indices._warm_rows import FloatRows, Int16Rows, Rows, largest
from fastmwem.indices.flat import exact_dot

__all__ = ["WarmStartIndex"]

# Rows per block of a blockwise product (the LP's own block): bounds the float64 temporary.
BLOCK = 65536
# Below this many rows every search rescores all keys exactly (the cache cannot pay off).
_SMALL = 4096
# Safety factor on every bound computed in floating point.
_SAFE = 1.0 + 1e-9
# From this many main rows on, scans use the 16-bit rows when numba is installed (below, a
# BLAS product over the float rows is as fast).
_COMPACT_ROWS = 65536
# Default parts of the main keys: one per this many rows, at most _MAX_PARTS.
_PART_ROWS, _MAX_PARTS = 1 << 18, 8
# A part whose drift has used up this fraction of its margin is scanned again along with a
# region rescan (_ALONG) or on its own (_EARLY), before its bound fails (see _refresh_early).
_ALONG, _EARLY = 0.5, 0.8


def _best(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``best_k`` after cutting a long list down to the scores >= its k-th largest."""
    if scores.size > 4 * k:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        keep = scores >= kth
        ids, scores = ids[keep], scores[keep]
    return best_k(ids, scores, k)


class _KeyStats:
    """Global statistics of the main keys that bound how far a score can move."""

    def __init__(self, A: np.ndarray, offsets: np.ndarray) -> None:
        half_range = mid = spread = mean = 0.0
        l1 = l2 = linf = 0.0
        for s in range(0, A.shape[0], BLOCK):
            block = np.asarray(A[s:s + BLOCK], dtype=np.float64)
            hi, lo = block.max(axis=1), block.min(axis=1)
            mu = block.mean(axis=1)
            centred = block - mu[:, None]
            half_range = max(half_range, float(((hi - lo) / 2).max()))
            mid = max(mid, float(np.abs((hi + lo) / 2).max()))
            spread = max(spread, float(np.sqrt((centred * centred).sum(axis=1)).max()))
            mean = max(mean, float(np.abs(mu).max()))
            o = offsets[s:s + BLOCK]
            absb = np.abs(block)
            l1 = max(l1, float((absb.sum(axis=1) + np.abs(o)).max()))
            l2 = max(l2, float(np.sqrt((block * block).sum(axis=1) + o * o).max()))
            linf = max(linf, float(np.maximum(absb.max(axis=1), np.abs(o)).max()))
        self.half_range, self.mid, self.spread, self.mean = half_range, mid, spread, mean
        self.offset = float(np.abs(offsets).max())
        self.norms = (l1, l2, linf)  # of the full keys [A_i, o_i], for rounding bounds
        self._A, self._offsets = A, offsets
        self._rows: dict[bool, Rows] = {}

    def rows(self, compact: bool) -> Rows:
        """The main keys as scanned: 16-bit rows when ``compact`` and they can be built, else
        the float rows (built once, shared by the siblings of ``with_extra_rows``)."""
        if compact not in self._rows:
            dimension = self._A.shape[1] + 1
            store = Int16Rows.build(self._A, self._offsets, self.norms, dimension) \
                if compact else None
            self._rows[compact] = store if store is not None else FloatRows(
                self._A, self._offsets, self.norms, dimension)
        return self._rows[compact]

    def drift(self, dx: np.ndarray, dt: float) -> float:
        """An upper bound of ``max_i |A_i . dx + o_i dt|`` (see the module docstring)."""
        total = abs(float(dx.sum()))
        holder = self.half_range * float(np.abs(dx).sum()) + self.mid * total
        cauchy = self.spread * math.sqrt(float(dx @ dx)) + self.mean * total
        return (min(holder, cauchy) + self.offset * abs(dt)) * _SAFE


class WarmStartIndex(IndexBase):
    """Exact maximum inner-product search over keys ``[A_i, o_i]``, fast for nearby queries.

    Args:
        A: the key matrix without its last column, ``(m, d)`` (float32 or float64, kept as is).
        offsets: the last column ``o`` (length m); in the scalar LP ``o = -b``.
        extra_rows: public keys ``(e, d)`` appended as ids ``m .. m + e - 1`` (always rescored).
        extra_offsets: their last column (length e).
        region: size of the region ``R`` a full scan keeps; default ``max(16 k, m / 16)``.
        brute_force_below: with at most this many rows (or ``4 k``), every search scores all
            keys exactly (the cache cannot pay off).
        compact: scan 16-bit copies of the rows (``indices._warm_rows.Int16Rows``: half the
            bytes of float32, built on the first search; needs numba). Default: with numba
            and at least 65,536 rows. The results are the same either way.

    Queries are ``[x, t]`` of length ``d + 1``; the score of key ``i`` is
    ``exact_dot(A_i, x) + t o_i`` in float64, identical in ``search`` and ``score``.
    ``rescans`` counts full scans, ``region_rescans`` scans of the region.

    >>> A = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> index = WarmStartIndex(A, -np.array([0.2, 0.1, 0.0]))
    >>> index.search([[0.9, 0.1, 1.0]], 2)
    (array([[0.7, 0.5]]), array([[0, 2]]))
    """

    kind = "warm"
    exact = True
    certified_gap = 0.0

    def __init__(self, A: object, offsets: object, *, extra_rows: object = None,
                 extra_offsets: object = None, region: int | None = None,
                 brute_force_below: int = _SMALL, compact: bool | None = None,
                 parts: int | None = None, _stats: _KeyStats | None = None) -> None:
        main = real_matrix(A, "A")
        if main.ndim != 2 or main.shape[0] == 0 or main.shape[1] == 0:
            raise ValueError("A must be a non-empty 2-D array (at least one row and one column)")
        super().__init__(main.shape[1] + 1, private=True)
        self._A = main if main.dtype in (np.float32, np.float64) else main.astype(np.float64)
        self._o = self._column(offsets, "offsets", main.shape[0])
        if (extra_rows is None) != (extra_offsets is None):
            raise ValueError("extra_rows and extra_offsets go together")
        d = main.shape[1]
        self._E = (np.empty((0, d)) if extra_rows is None
                   else check_queries(extra_rows, d, name="extra_rows"))
        self._eo = (np.empty(0) if extra_offsets is None
                    else self._column(extra_offsets, "extra_offsets", self._E.shape[0]))
        self._region_size = None if region is None else check_int(region, "region", minimum=1)
        self._small = check_int(brute_force_below, "brute_force_below", minimum=0)
        if compact is not None and not isinstance(compact, bool):
            raise TypeError(f"compact must be a bool or None, got {type(compact).__name__}")
        self._compact = compact
        self._stats = _stats
        self._parts = None if parts is None else check_int(parts, "parts", minimum=1)
        # Level 0 (scans of the main keys, part by part): per part its reference query, error,
        # region (ids, rows) and the best score outside its region; set by _split.
        self._n_parts = 0
        self._bounds: list[tuple[int, int]] = []
        self._v0: list[np.ndarray | None] = []
        self._err0 = np.empty(0)
        self._rests = np.empty(0)
        self._part_ids: list[np.ndarray] = []
        self._regions: list[Rows | None] = []
        self._ids = np.empty(0, dtype=np.int64)  # the region: the parts' ids end to end
        # Level 1 (scan of the region at v1): positions in the region, best first, and scores.
        self._v1: np.ndarray | None = None
        self._err1 = 0.0
        self._order = np.empty(0, dtype=np.int64)
        self._sorted = np.empty(0)
        # The sorted part's ids and rows, copied in level-1 order: a prefix is a slice.
        self._sids = np.empty(0, dtype=np.int64)
        self._srows = np.empty((0, d), dtype=self._A.dtype)
        self._soffs = np.empty(0)
        self._filled = 0  # rows of _srows copied so far (see _sorted_rows)
        self._rest1 = -math.inf  # best level-1 score of the region's unsorted part
        self.rescans = 0
        self.part_rescans = 0
        self.region_rescans = 0

    @staticmethod
    def _column(values: object, name: str, length: int) -> np.ndarray:
        arr = real_matrix(values, name).astype(np.float64, copy=False)
        if arr.shape != (length,):  # the offsets hold b: no shapes or values in the message
            raise ValueError(f"{name} must be 1-D with one entry per row of its keys")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
        return arr

    # -- the protocol ------------------------------------------------------------------------
    @property
    def n_keys(self) -> int:
        return int(self._A.shape[0] + self._E.shape[0])

    def with_extra_rows(self, extra_rows: object, extra_offsets: object) -> WarmStartIndex:
        """A sibling over the same main keys (shared, not copied) with other extra rows."""
        return WarmStartIndex(self._A, self._o, extra_rows=extra_rows,
                              extra_offsets=extra_offsets, region=self._region_size,
                              brute_force_below=self._small, compact=self._compact,
                              parts=self._parts, _stats=self._key_stats())

    def _key_stats(self) -> _KeyStats:
        if self._stats is None:
            self._stats = _KeyStats(self._A, self._o)
        return self._stats

    def _main_rows(self) -> Rows:
        """The main keys as scanned (see ``compact``)."""
        compact = self._compact
        if compact is None:
            compact = self._A.shape[0] >= _COMPACT_ROWS
        return self._key_stats().rows(compact)

    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        x, t = v[:-1], float(v[-1])
        m = self._A.shape[0]
        out = np.empty(ids.size)
        main = ids < m
        if main.any():
            out[main] = exact_dot(self._A[ids[main]], x) + t * self._o[ids[main]]
        if not main.all():
            extra = ids[~main] - m
            out[~main] = exact_dot(self._E[extra], x) + t * self._eo[extra]
        return out

    def score(self, ids: object, query: object) -> np.ndarray:
        """Exact float64 scores of the keys ``ids`` at ``query``."""
        idx, vec = self._check_score(ids, query)
        return self._exact(idx, vec)

    def search(self, queries: object, k: object) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` by inner product for each query row (float64 scores, best first)."""
        qs, kk = self._check_search(queries, k)
        return pad_results([self._top(v, kk) for v in qs], kk)

    def _payload(self) -> dict[str, np.ndarray]:  # never reached: the index is always private
        raise ValueError("a WarmStartIndex holds private offsets and is never saved")

    # -- search ------------------------------------------------------------------------------
    def _distance(self, v: np.ndarray, ref: np.ndarray, error: float) -> float:
        """How far an exact float64 score at ``v`` can be from a reference score at ``ref``."""
        drift = self._key_stats().drift(v[:-1] - ref[:-1], float(v[-1] - ref[-1]))
        rounding = (gamma(self.dimension + 3, U64) * holder_bound(self._key_stats().norms, v)
                    + 2.0**-1060)
        return (error + drift + rounding) * _SAFE

    def _top(self, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        m = self._A.shape[0]
        if m <= max(self._small, 4 * k) or not self._main_rows().handles(v):
            ids = np.arange(self.n_keys, dtype=np.int64)
            return best_k(ids, self._exact(ids, v), k)
        if not self._n_parts:
            self._split()
        prefix, lower, outside = self._levels(v, k)
        if prefix is not None and prefix > max(4 * k, self._order.size // 2):
            # The region's order is stale: sort it again, with the parts that are due anyway.
            self._refresh(v, k, self._most_used(lower, outside, _ALONG))
            prefix, lower, outside = self._levels(v, k)
        if prefix is None or prefix > self._order.size:
            # Keys outside the region, or in its unsorted part, could enter: scan the parts
            # whose bound fails (none: sort the region again), and those nearly due.
            failing = self._due(lower, outside, 1.0)
            self._refresh(v, k, np.union1d(failing, self._most_used(lower, outside, _ALONG)))
            prefix, lower, outside = self._levels(v, k)
            if (prefix is None or prefix > self._order.size) and failing.size < self._n_parts:
                self._refresh(v, k, np.arange(self._n_parts))
                prefix, lower, outside = self._levels(v, k)
        elif self._most_used(lower, outside, _EARLY).size:
            self._refresh(v, k, self._most_used(lower, outside, _EARLY))
            prefix, lower, outside = self._levels(v, k)
        if prefix is None or prefix > self._order.size:  # ties past the region: score all keys
            ids = np.arange(self.n_keys, dtype=np.int64)
            return best_k(ids, self._exact(ids, v), k)
        ids, scores = self._rescore(v, k, prefix)
        if self._E.shape[0]:
            extra = np.arange(m, self.n_keys, dtype=np.int64)
            ids = np.concatenate([ids, extra])
            scores = np.concatenate([scores, self._exact(extra, v)])
        return _best(ids, scores, k)

    def _rescore(self, v: np.ndarray, k: int, prefix: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores of the keys of the prefix that can reach its top k: one scan of the
        (contiguous) prefix with a proven error ``E``, then exact scores of the keys within
        ``2 E`` of its k-th approximate score (the window argument of ``indices._topk``)."""
        rows = self._sorted_rows(prefix)
        ids, keys, offsets = self._sids[:prefix], rows.rows, rows.offsets
        if prefix > 2 * k:
            approx, error = rows.scan(v)
            error = (error + gamma(self.dimension + 3, U64)
                     * holder_bound(self._key_stats().norms, v) + 2.0**-1060) * _SAFE
            kth = np.partition(approx, prefix - k)[prefix - k]
            keep = np.flatnonzero(approx >= kth - 2.0 * error)
            ids, keys, offsets = ids[keep], keys[keep], offsets[keep]
        # the same bits as _exact (a row-wise sum of the same rows and offsets)
        return ids, exact_dot(keys, v[:-1]) + float(v[-1]) * offsets

    def _sorted_rows(self, count: int) -> FloatRows:
        """The first ``count`` keys of the sorted part as float rows, copied from ``A`` when a
        prefix first reaches them (at least twice the rows copied so far: few copies)."""
        if count > self._filled:
            stop = min(self._order.size, max(count, 2 * self._filled))
            self._srows[self._filled:stop] = self._A[self._sids[self._filled:stop]]
            self._filled = stop
        return FloatRows(self._srows[:count], self._soffs[:count], self._key_stats().norms,
                         self.dimension)

    def _levels(self, v: np.ndarray, k: int) -> tuple[int | None, float, np.ndarray]:
        """How many region keys (in level-1 order) can hold the top k at ``v`` (None when keys
        outside the region could; ``order.size + 1`` when keys of its unsorted part could),
        the lower bound of the k-th best exact score, and each part's bound on the exact
        scores of its keys outside the region."""
        outside = self._outside(v)
        if self._v1 is None or k > self._sorted.size:
            return None, -math.inf, outside
        w1 = self._distance(v, self._v1, self._err1)
        lower = float(self._sorted[k - 1]) - w1  # the k-th best exact score is at least this
        if outside.max(initial=-math.inf) >= lower:
            return None, lower, outside
        if self._rest1 + w1 >= lower:  # the unsorted part of the region could reach the top k
            return self._order.size + 1, lower, outside
        # _sorted is descending: count the entries >= lower - w1.
        prefix = int(np.searchsorted(-self._sorted, -(lower - w1), side="right"))
        return prefix, lower, outside

    def _split(self) -> None:
        """Cut the main keys into parts of whole blocks of the scanned rows."""
        m, granule = self._A.shape[0], self._main_rows().granule
        wanted = self._parts or min(_MAX_PARTS, -(-m // _PART_ROWS))
        blocks = -(-m // granule)
        step = granule * -(-blocks // wanted)
        self._bounds = [(s, min(m, s + step)) for s in range(0, m, step)]
        self._n_parts = n = len(self._bounds)
        self._v0, self._part_ids, self._regions = [None] * n, [self._ids] * n, [None] * n
        self._err0, self._rests = np.zeros(n), np.full(n, -math.inf)

    def _outside(self, v: np.ndarray) -> np.ndarray:
        """Per part: an upper bound of the exact scores at ``v`` of its keys outside the
        region (``inf`` before its first scan)."""
        out = np.full(self._n_parts, math.inf)
        for p, ref in enumerate(self._v0):
            if ref is not None:
                out[p] = self._rests[p] + self._distance(v, ref, float(self._err0[p]))
        return out

    def _due(self, lower: float, outside: np.ndarray, used: float) -> np.ndarray:
        """The parts whose drift has used up at least the fraction ``used`` of their margin
        ``lower - rest`` (1: those whose bound fails)."""
        with np.errstate(invalid="ignore"):  # inf - inf before a part's first scan: due
            drift = outside - self._rests
            margin = lower - self._rests
            return np.flatnonzero((margin <= 0) | ~(drift < used * margin))

    def _most_used(self, lower: float, outside: np.ndarray, used: float) -> np.ndarray:
        """The part (none or one) whose drift has used up the largest fraction of its margin,
        if at least ``used``: scanning parts one at a time before their bounds fail spreads
        the cost of a full scan over several rounds (``1 / parts`` of it each), instead of
        the worst round of a run (needs more than one part, and a valid level 1)."""
        due = self._due(lower, outside, used)
        if self._n_parts == 1 or not due.size or not math.isfinite(lower):
            return due[:0]
        with np.errstate(invalid="ignore", divide="ignore"):
            fraction = (outside[due] - self._rests[due]) / (lower - self._rests[due])
        fraction[~(lower > self._rests[due])] = math.inf  # failing (or never scanned)
        return due[np.argmax(fraction)][None]

    def _refresh(self, v: np.ndarray, k: int, parts: np.ndarray) -> None:
        """Scan the main keys of ``parts`` at ``v`` (each: a new region part, and ``v`` as its
        reference), then the whole region at ``v`` (the new level-1 reference)."""
        rows = self._main_rows()
        m = self._A.shape[0]
        total = self._region_size or max(16 * k, m // 16)
        fresh: dict[int, tuple[np.ndarray, float]] = {}
        for p in (int(q) for q in parts):
            start, stop = self._bounds[p]
            ids, approx, self._rests[p], error, self._regions[p] = rows.part(start, stop).best(
                v, max(1, -(-total * (stop - start) // m)))
            self._part_ids[p] = ids.astype(np.int64, copy=False) + start
            self._v0[p], self._err0[p] = v.copy(), error
            fresh[p] = (approx, error)
        scans = [fresh[p] if p in fresh else region.scan(v)
                 for p, region in enumerate(self._regions) if region is not None]
        self._ids = np.concatenate(self._part_ids)
        self._set_order(np.concatenate([a for a, _ in scans]), v, max(e for _, e in scans), k)
        self.part_rescans += len(fresh)
        self.rescans += len(fresh) == self._n_parts
        self.region_rescans += len(fresh) < self._n_parts

    def _set_order(self, approx: np.ndarray, v: np.ndarray, error: float, k: int) -> None:
        """Sort the best quarter of the region by ``approx`` (at least ``16 k``); its float
        rows are copied from ``A`` as prefixes reach them (``_sorted_rows``)."""
        top, self._rest1 = largest(approx, max(16 * k, approx.size // 4))
        self._order = top[np.argsort(-approx[top])]  # ties in any order: only values count
        self._sorted = approx[self._order]
        self._sids = self._ids[self._order]
        self._soffs = self._o[self._sids]
        # The sorted part keeps float rows even when the region is 16-bit: rescoring a prefix
        # then has the float scan's narrow window (a few keys to score exactly, not thousands).
        self._filled = min(self._order.size, 4 * k)
        self._srows = np.empty((self._order.size, self._A.shape[1]), dtype=self._A.dtype)
        self._srows[:self._filled] = self._A[self._sids[:self._filled]]
        self._v1, self._err1 = v.copy(), error
