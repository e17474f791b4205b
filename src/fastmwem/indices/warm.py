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

The main keys are cut into parts (whole blocks of the scanned rows; 8 at ``m = 10^6``), each
with two reference scans (``indices._warm_parts``): a scan of its keys at ``v0`` keeps its best
region ``R`` and the best score ``rest`` outside it; a scan of ``R`` at ``v1`` keeps its top
``S`` (the best quarter of ``R`` there, a compact copy of its rows) and the best score ``rest1``
of ``R`` outside ``S``. With ``W0``, ``W1`` a part's distances (scan error, drift, rounding) from
its references to the exact float64 scores at ``v``, a search at ``v``:

1. scans the parts' ``S`` end to end with proven error ``E`` (against the exact scores): with
   ``T`` the k-th best scanned score, k keys score at least ``T - E`` exactly, so the k-th best
   exact score is at least ``lower = T - E``;
2. checks each part: its keys outside ``R`` score at most ``rest + W0``, those of ``R`` outside
   ``S`` at most ``rest1 + W1``; when both are below ``lower`` none of them is in any top-k
   set. A part that fails is scanned again (its keys, or only its region: ``|R| / m`` of a
   full scan), and the search starts over; if a part still fails, every part is scanned, and
   failing even then (ties past the regions) all keys are scored exactly;
3. rescores exactly the keys of ``S`` scanned at ``>= T - 2 E`` (the others of ``S`` score
   below the k-th best exactly: the window argument of ``indices._topk``) and returns the best
   k of them.

Nothing here needs ``S`` to be the best of ``R``: any subset gives valid bounds, ``rest1``
being the best score of the rest of ``R`` at ``v1``. So a region rescan keeps ``S`` (no copy)
while the best score outside it leaves half the margin below ``lower`` that a new ``S`` would.

The result is always a true top-k set, the lazy exponential mechanism's requirement, whatever
the queries; only the cost depends on how far they move. To keep the worst round cheap, a
part whose drift has used up most of its margin ``lower - rest`` is scanned before it fails, one
part a round: a full scan then comes a part at a time (``1 / parts`` of its cost per round, the
region of the others kept), not all at once. New ``S`` (cheap) come together, in few rounds.

The scans read the keys as ``indices._warm_rows`` stores them: with numba and at least 65,536
rows, 16-bit integers times a power of two, whose rounding is part of each scan's proven error
(a scan of a part's keys reads a quarter of the bytes of float64 keys and keeps its region in
the same pass); otherwise the float rows, one BLAS product per scan. The exact rescoring reads
float rows copied from ``A`` as searches first need them.

Extra rows (the public objective row of the objective search) are always rescored exactly.
The keys hold the private ``b``: the index is private and ``save`` refuses.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from fastmwem._validation import check_int
from fastmwem.indices._checks import check_queries, real_matrix
from fastmwem.indices._common import IndexBase
from fastmwem.indices._topk import U64, best_k, gamma, holder_bound, pad_results
from fastmwem.indices._warm_parts import FloatCache, Part, Top
from fastmwem.indices._warm_rows import FloatRows, Int16Rows, Rows
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
_PART_ROWS, _MAX_PARTS = 1 << 17, 8
# A part whose level-0 drift used up this fraction of its margin has its keys scanned before
# its bound fails (_EARLY); new S come when a level-1 drift used up _EARLY_TOP of its margin,
# with those of the parts where it used up _ALONG (see _ahead).
_EARLY, _EARLY_TOP, _ALONG = 0.85, 0.8, 0.5
# A part's S holds at least this many keys per k of the whole (in proportion to the part).
_TOP = 12
_NONE = np.empty(0, dtype=np.int64)


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

    def drift(self, dx: np.ndarray, dt: np.ndarray) -> np.ndarray:
        """Per row of ``dx`` (``(n, d)``): an upper bound of ``max_i |A_i . dx + o_i dt|``
        (see the module docstring)."""
        total = np.abs(dx.sum(axis=1))
        holder = self.half_range * np.abs(dx).sum(axis=1) + self.mid * total
        cauchy = self.spread * np.sqrt(np.einsum("ij,ij->i", dx, dx)) + self.mean * total
        bound: np.ndarray = (np.minimum(holder, cauchy) + self.offset * np.abs(dt)) * _SAFE
        return bound


class _State(NamedTuple):
    """The bounds of a search at ``v``: ``lower`` (the k-th best exact score is at least it;
    ``-inf`` when a part has no reference yet), the scanned scores ``approx`` of the parts' ``S``
    end to end and their proven ``error``; per part the distances ``w0``, ``w1`` from its level-0 and level-1
    reference scores to the exact ones, whether it was scanned, ``rest`` and ``rest1``."""

    lower: float
    error: float
    approx: np.ndarray
    w0: np.ndarray
    w1: np.ndarray
    scanned: np.ndarray
    rest: np.ndarray
    rest1: np.ndarray


class _Refs(NamedTuple):
    """The parts' references side by side: whether each was scanned, the level-0 then the
    level-1 queries and errors (``2 parts`` rows), ``rest`` and ``rest1``."""

    scanned: np.ndarray
    queries: np.ndarray
    errors: np.ndarray
    rest: np.ndarray
    rest1: np.ndarray

    @staticmethod
    def of(parts: list[Part], dimension: int) -> _Refs:
        unset = np.zeros(dimension)  # a part not scanned yet (its distances are set to inf)
        queries = [unset if p.v0 is None else p.v0 for p in parts] + [
            unset if p.v1 is None else p.v1 for p in parts]
        return _Refs(np.array([p.v0 is not None for p in parts], dtype=bool),
                     np.array(queries).reshape(len(queries), dimension),
                     np.array([p.err0 for p in parts] + [p.err1 for p in parts]),
                     np.array([p.rest for p in parts]), np.array([p.rest1 for p in parts]))


class WarmStartIndex(IndexBase):
    """Exact maximum inner-product search over keys ``[A_i, o_i]``, fast for nearby queries.

    Args:
        A: the key matrix without its last column, ``(m, d)`` (float32 or float64, kept as is).
        offsets: the last column ``o`` (length m); in the scalar LP ``o = -b``.
        extra_rows: public keys ``(e, d)`` appended as ids ``m .. m + e - 1`` (always rescored).
        extra_offsets: their last column (length e).
        region: size of the region the parts keep together (each in proportion to its rows);
            default ``max(16 k, m / 16)``.
        brute_force_below: with at most this many rows (or ``4 k``), every search scores all
            keys exactly (the cache cannot pay off).
        compact: scan 16-bit copies of the rows (``indices._warm_rows.Int16Rows``: half the
            bytes of float32, built on the first search; needs numba). Default: with numba
            and at least 65,536 rows. The results are the same either way.
        parts: how many parts the main keys are cut into (whole blocks of 1,024 rows when
            compact); default one per 131,072 rows, at most 8. The results are the same
            whatever the parts.

    Queries are ``[x, t]`` of length ``d + 1``; the score of key ``i`` is
    ``exact_dot(A_i, x) + t o_i`` in float64, identical in ``search`` and ``score``.
    ``rescans`` counts the searches that scanned every part's keys (full scans),
    ``part_rescans`` the scans of a part's keys, ``region_rescans`` those of a part's region.

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
        self._part_list: list[Part] = []  # the main keys' parts, made by the first search
        self._refs = _Refs.of([], self.dimension)
        self._joined: Top | None = None  # the parts' S end to end (None: to be joined)
        self._floats: FloatCache | None = None  # float rows of the keys rescored so far
        self._last_kth = (math.inf, 0.0)  # the k-th scanned score of the last search, its step
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
    def _rounding(self, v: np.ndarray) -> float:
        """How far an exact float64 score at ``v`` can be from the real inner product."""
        return (gamma(self.dimension + 3, U64) * holder_bound(self._key_stats().norms, v)
                + 2.0**-1060)

    def _distances(self, v: np.ndarray, refs: np.ndarray, errors: np.ndarray,
                   rounding: float) -> np.ndarray:
        """Per row of ``refs``: how far an exact float64 score at ``v`` can be from a reference
        score at that query with error ``errors`` (``rounding``: ``_rounding(v)``)."""
        drift = self._key_stats().drift(v[None, :-1] - refs[:, :-1], v[-1] - refs[:, -1])
        distance: np.ndarray = (errors + drift + rounding) * _SAFE
        return distance

    def _top(self, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        m = self._A.shape[0]
        if m <= max(self._small, 4 * k) or not self._main_rows().handles(v):
            ids = np.arange(self.n_keys, dtype=np.int64)
            return best_k(ids, self._exact(ids, v), k)
        if not self._part_list:
            self._split()
        state = self._state(v, k)
        keys, regions = self._needed(state)
        if not keys.size and not regions.size:  # nothing needed: a scan ahead, maybe
            keys, regions = self._ahead(state)
        if keys.size or regions.size:
            self._scan(v, k, keys, regions, state)
            state = self._state(v, k)
            keys, regions = self._needed(state)
            if keys.size or regions.size:  # a query far from the references: every part
                self._scan(v, k, np.arange(len(self._part_list)), regions[:0], state)
                state = self._state(v, k)
                keys, regions = self._needed(state)
        if keys.size or regions.size:  # ties past the regions: score all keys
            ids = np.arange(self.n_keys, dtype=np.int64)
            return best_k(ids, self._exact(ids, v), k)
        # The window argument of indices._topk over the union of the S: a key of a top-k set
        # has an exact score >= lower = T - E, so a scanned score >= T - 2 E.
        if self._joined is None:  # never: a valid state joined the tops
            raise RuntimeError("a search rescored no top")
        chosen = np.flatnonzero(state.approx >= state.lower - state.error)
        ids = self._joined.ids[chosen]
        scores = self._float_cache().exact(self._joined, chosen, v)
        if self._E.shape[0]:
            extra = np.arange(m, self.n_keys, dtype=np.int64)
            ids = np.concatenate([ids, extra])
            scores = np.concatenate([scores, self._exact(extra, v)])
        return _best(ids, scores, k)

    def _split(self) -> None:
        """Cut the main keys into parts of whole blocks of the scanned rows."""
        m, granule = self._A.shape[0], self._main_rows().granule
        wanted = self._parts or min(_MAX_PARTS, -(-m // _PART_ROWS))
        blocks = -(-m // granule)
        step = granule * -(-blocks // wanted)
        self._part_list = [Part(s, min(m, s + step)) for s in range(0, m, step)]
        self._refs = _Refs.of(self._part_list, self.dimension)

    def _state(self, v: np.ndarray, k: int) -> _State:
        """The bounds of a search at ``v`` (see ``_State``): scans the parts' ``S``."""
        parts, refs = self._part_list, self._refs
        scanned = refs.scanned
        rounding = self._rounding(v)
        lower, error, approx = -math.inf, 0.0, np.empty(0)
        if scanned.all():
            if self._joined is None:
                self._joined = Top(parts, self._o, self._float_cache())
            approx, error = self._joined.rows.scan(v)
            # as far from the exact float64 scores as from the real ones, and those from these
            error = (error + rounding) * _SAFE
            if approx.size >= k:  # k keys score >= T - E exactly: so does the k-th best
                lower = self._kth(approx, k) - error
        w = self._distances(v, refs.queries, refs.errors, rounding)  # levels 0, 1 by part
        w[np.concatenate([~scanned, ~scanned])] = math.inf
        n = len(parts)
        return _State(lower, error, approx, w[:n], w[n:], scanned, refs.rest, refs.rest1)

    def _float_cache(self) -> FloatCache:
        if self._floats is None:  # room for the float rows of a few S
            self._floats = FloatCache(self._A, 4 * max(16384, self._A.shape[0] // 64))
        return self._floats

    def _kth(self, values: np.ndarray, k: int) -> float:
        """The k-th largest of ``values``: selected among those above a guess from the last
        searches when at least ``k`` are (the same value: a guess only saves time)."""
        last, step = self._last_kth
        above = values[values >= last - 2.0 * step]
        if above.size < k:
            above = values
        kth = float(np.partition(above, above.size - k)[above.size - k])
        self._last_kth = (kth, abs(kth - last) if math.isfinite(last) else 0.0)
        return kth

    @staticmethod
    def _needed(state: _State) -> tuple[np.ndarray, np.ndarray]:
        """The parts whose keys outside the region could reach the top k (scan their keys),
        and the other parts whose region's keys outside ``S`` could (choose ``S`` again)."""
        with np.errstate(invalid="ignore"):  # -inf + inf: a part not scanned yet
            keys = ~state.scanned | ((state.rest + state.w0) >= state.lower)
            regions = ~keys & ((state.rest1 + state.w1) >= state.lower)
        if not keys.any() and not regions.any():
            return _NONE, _NONE
        return np.flatnonzero(keys), np.flatnonzero(regions)

    @staticmethod
    def _used(lower: float, rest: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Per part: the fraction of its margin ``lower - rest`` that the drift ``w`` used."""
        with np.errstate(invalid="ignore", divide="ignore"):
            used = w / (lower - rest)
        used[~(lower > rest)] = math.inf
        return used

    def _ahead(self, state: _State) -> tuple[np.ndarray, np.ndarray]:
        """The scans done ahead of need when no bound fails: with several parts, the keys of
        the part whose level-0 drift used up the most of its margin, from ``_EARLY`` on (one
        part a round: a full scan thus comes a part at a time, ``1 / parts`` of its cost per
        round, not all at once in the worst round of a run); else new ``S`` when a level-1
        drift used up ``_EARLY_TOP`` of its margin."""
        # no bound fails: lower > rest + w0 and lower > rest1 + w1 (all finite) for every part
        margin0, margin1 = state.lower - state.rest, state.lower - state.rest1
        if len(self._part_list) > 1 and (state.w0 >= _EARLY * margin0).any():
            return np.array([np.argmax(state.w0 / margin0)]), _NONE
        if (state.w1 >= _EARLY_TOP * margin1).any():
            return _NONE, self._along(state, _NONE)
        return _NONE, _NONE

    def _along(self, state: _State, regions: np.ndarray) -> np.ndarray:
        """``regions`` with the parts whose level-1 drift used up ``_ALONG`` of its margin:
        new ``S`` come together (cheap), in few rounds."""
        used = self._used(state.lower, state.rest1, state.w1)
        return np.union1d(regions, np.flatnonzero(used >= _ALONG))

    def _scan(self, v: np.ndarray, k: int, keys: np.ndarray, regions: np.ndarray,
              state: _State) -> None:
        """Scan the keys of the parts ``keys`` and the regions of the parts ``regions`` at
        ``v``. With several parts, the new ``S`` of the part whose level-0 drift used up the
        most of its margin (at least ``_ALONG``) comes from a scan of its keys (one a round)."""
        parts, m = self._part_list, self._A.shape[0]
        if regions.size:
            regions = self._along(state, regions)
        regions = np.setdiff1d(regions, keys)
        rows = self._main_rows()
        total = self._region_size or max(16 * k, m // 16)
        for q in keys:
            p = parts[int(q)]
            p.scan_keys(rows.part(p.start, p.stop), v, max(1, -(-total * len(p) // m)),
                        -(-_TOP * k * len(p) // m))
        changed = keys.size > 0
        for q in regions:
            p = parts[int(q)]
            changed |= p.scan_region(v, -(-_TOP * k * len(p) // m), state.lower)
        self._refs = _Refs.of(parts, self.dimension)
        if changed:
            self._joined = None  # joined again by the next state
        self.part_rescans += keys.size
        self.rescans += keys.size == len(parts)
        self.region_rescans += regions.size
