"""WarmStartIndex: an exact top-k oracle for slowly moving queries (the MWU iterates).

The scalar-private LP scores row ``i`` at ``x`` by ``<[A_i, -b_i], [x, 1]>``, and successive
multiplicative-weights iterates ``x`` move little. The index keeps the scores of a reference
query ``v_ref``, sorted over the best region of keys. For a new query ``v`` with
``delta = v - v_ref``, every score moved by at most a proven bound ``B(delta)`` computed from
global statistics of the keys (no scan):

* Hoelder with midrange centring: ``|A_i . dx| <= max_i halfrange(A_i) |dx|_1 + max|mid| |sum dx|``,
* Cauchy-Schwarz with mean centring: ``|A_i . dx| <= max_i |A_i - mean_i|_2 |dx|_2 + max|mean|
  |sum dx|``,
* the offset column: ``|o_i dt| <= max|o| |dt|``.

On the simplex ``sum dx = 0``, so the centred bounds are much tighter than plain Hoelder. With the
reference scores ``c_i`` (rounding error ``E``), every exact score ``a_i`` at ``v`` lies within
``W = E + B(delta) + E64`` of ``c_i``; the k-th best exact score is ``>= c_(k) - W``, so only keys
with ``c_i >= c_(k) - 2W`` can be in the top k. Those are a prefix of the sorted region: they are
rescored exactly and the best k returned. When the prefix would leave the region, the index
rescans every key at ``v`` and makes it the new reference. The result is always a true top-k set
(the lazy exponential mechanism's requirement), whatever the queries; only the cost depends on
how far they move.

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
from fastmwem.indices.flat import exact_dot
from fastmwem.lp._checks import BLOCK

__all__ = ["WarmStartIndex"]

# Below this many rows every search rescores all keys exactly (the cache cannot pay off).
_SMALL = 4096
# Safety factor on every bound computed in floating point.
_SAFE = 1.0 + 1e-9


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
        region: keys kept sorted after a rescan; default ``max(16 k, m / 16)``.

    Queries are ``[x, t]`` of length ``d + 1``; the score of key ``i`` is
    ``exact_dot(A_i, x) + t o_i`` in float64, identical in ``search`` and ``score``.

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
                 _stats: _KeyStats | None = None) -> None:
        main = real_matrix(A, "A")
        if main.ndim != 2 or main.shape[0] == 0 or main.shape[1] == 0:
            raise ValueError(f"A must be a non-empty 2-D array, got shape {main.shape}")
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
        self._region = None if region is None else check_int(region, "region", minimum=1)
        self._stats = _stats
        self._ref: tuple[np.ndarray, float] | None = None  # (x_ref, t_ref)
        self._ref_error = 0.0
        self._sorted = np.empty(0)  # reference scores of the region, descending
        self._ids = np.empty(0, dtype=np.int64)
        self._block = np.empty((0, d), dtype=self._A.dtype)  # the region's rows, same order
        self._rest = -math.inf  # largest reference score outside the region
        self.rescans = 0

    @staticmethod
    def _column(values: object, name: str, length: int) -> np.ndarray:
        arr = real_matrix(values, name).astype(np.float64, copy=False)
        if arr.shape != (length,):
            raise ValueError(f"{name} must have shape ({length},), got {arr.shape}")
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
                              extra_offsets=extra_offsets, region=self._region,
                              _stats=self._key_stats())

    def _key_stats(self) -> _KeyStats:
        if self._stats is None:
            self._stats = _KeyStats(self._A, self._o)
        return self._stats

    def _main_scores(self, rows: np.ndarray, ids: np.ndarray, x: np.ndarray,
                     t: float) -> np.ndarray:
        return exact_dot(rows, x) + t * self._o[ids]

    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        x, t = v[:-1], float(v[-1])
        m = self._A.shape[0]
        out = np.empty(ids.size)
        main = ids < m
        if main.any():
            out[main] = self._main_scores(self._A[ids[main]], ids[main], x, t)
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
    def _rounding(self, v: np.ndarray) -> float:
        """Bound on a float64 score's distance from the real inner product at ``v``."""
        return gamma(self.dimension + 3, U64) * holder_bound(self._key_stats().norms, v)

    def _top(self, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        m = self._A.shape[0]
        prefix = None if m <= max(_SMALL, 4 * k) else self._prefix(v, k)
        if prefix is None and m > max(_SMALL, 4 * k):
            self._rescan(v, k)
            prefix = self._prefix(v, k)
        if prefix is None:  # a small index, or ties reaching past the region: score every key
            ids = np.arange(self.n_keys, dtype=np.int64)
            return best_k(ids, self._exact(ids, v), k)
        x, t = v[:-1], float(v[-1])
        ids = self._ids[:prefix]
        scores = self._main_scores(self._block[:prefix], ids, x, t)
        if self._E.shape[0]:
            extra = np.arange(m, self.n_keys, dtype=np.int64)
            ids = np.concatenate([ids, extra])
            scores = np.concatenate([scores, self._exact(extra, v)])
        return best_k(ids, scores, k)

    def _prefix(self, v: np.ndarray, k: int) -> int | None:
        """How many region keys can hold the top k at ``v``; None when the region cannot."""
        if self._ref is None or k > self._sorted.size:
            return None
        x_ref, t_ref = self._ref
        drift = self._key_stats().drift(v[:-1] - x_ref, float(v[-1]) - t_ref)
        window = (self._ref_error + drift + self._rounding(v)) * _SAFE
        threshold = self._sorted[k - 1] - 2.0 * window
        if self._rest >= threshold:
            return None
        # _sorted is descending: count the entries >= threshold.
        return int(np.searchsorted(-self._sorted, -threshold, side="right"))

    def _rescan(self, v: np.ndarray, k: int) -> None:
        """Score every main key at ``v`` (float64, blockwise) and make ``v`` the reference."""
        m = self._A.shape[0]
        x, t = v[:-1], float(v[-1])
        approx = np.empty(m)
        for s in range(0, m, BLOCK):
            block = np.asarray(self._A[s:s + BLOCK], dtype=np.float64)
            approx[s:s + block.shape[0]] = block @ x
        approx += t * self._o
        size = min(m, self._region or max(16 * k, m // 16))
        if size < m:
            part = np.argpartition(approx, m - size - 1)
            top = part[m - size:]
            self._rest = float(approx[part[m - size - 1]])
        else:
            top = np.arange(m)
            self._rest = -math.inf
        top = top[np.argsort(-approx[top], kind="stable")]
        self._ids = top.astype(np.int64, copy=False)
        self._sorted = approx[top]
        self._block = self._A[top]
        self._ref = (x.copy(), t)
        # A BLAS product and the row-wise exact score each stay within gamma_{d+3} of the real
        # inner product, whatever their summation order.
        self._ref_error = 2.0 * self._rounding(v)
        self.rescans += 1
