"""A certified branch-and-bound top-k oracle for explicit 0/1 key sets with structure."""

from __future__ import annotations

import numpy as np

from fastmwem._validation import check_int
from fastmwem.workloads.counting import _byte_tables
from fastmwem.workloads.oracles import ExactOracle

__all__ = ["BranchAndBoundOracle"]

#: Keys unpacked at once while clustering (a 16 MiB uint8 buffer).
_UNPACKED_BITS = 1 << 24


def _check_binary_keys(keys: object) -> np.ndarray:
    if isinstance(keys, (str, bytes)):
        raise TypeError("keys must be a 2-D array of 0/1 entries")
    try:
        arr = np.asarray(keys)
    except ValueError as exc:
        raise ValueError(f"keys must be a 2-D array of 0/1 entries: {exc}") from None
    if arr.dtype != np.bool_ and not (np.issubdtype(arr.dtype, np.integer)
                                      or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"keys must hold 0/1 numbers, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"keys must be a non-empty 2-D array (n_keys, dimension), got shape {arr.shape}")
    if arr.dtype != np.bool_ and not np.all((arr == 0) | (arr == 1)):
        raise ValueError("keys must hold only 0 and 1 (a 0/1 query matrix)")
    return arr.astype(bool)


def _bisect(packed: np.ndarray, dimension: int, leaf_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic clusters: split on the most balanced bit until at most ``leaf_size`` keys.

    Returns the key order (cluster by cluster) and the cluster starts (ending with ``n_keys``).
    Keys that agree on every bit are never split, whatever their number.
    """
    m = packed.shape[0]
    order = np.arange(m, dtype=np.int64)
    stack = [(0, m)]
    starts: list[int] = []
    while stack:
        s, e = stack.pop()
        size = e - s
        if size <= leaf_size:
            starts.append(s)
            continue
        counts = np.zeros(dimension, dtype=np.int64)
        step = max(1, _UNPACKED_BITS // dimension)
        for i in range(s, e, step):
            rows = packed[order[i:min(i + step, e)]]
            counts += np.unpackbits(rows, axis=1, count=dimension).sum(axis=0, dtype=np.int64)
        split = int(np.argmin(np.abs(2 * counts - size)))
        if counts[split] in (0, size):  # every bit constant: identical keys
            starts.append(s)
            continue
        block = order[s:e]
        ones = (packed[block, split // 8] >> (7 - split % 8)) & 1 == 1
        order[s:e] = np.concatenate([block[ones], block[~ones]])
        mid = s + int(ones.sum())
        stack.extend([(mid, e), (s, mid)])
    return order, np.array(sorted(starts) + [m], dtype=np.int64)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenated index ranges ``[starts[i], starts[i] + lengths[i])``."""
    first = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - first, lengths)


class BranchAndBoundOracle(ExactOracle):
    """Exact maximum inner-product search over explicit 0/1 keys, pruned by certified bounds.

    The keys are split into clusters of at most ``leaf_size`` keys by recursive bisection on
    the most balanced bit (deterministic). For a cluster ``C`` with ``U`` the union and ``I``
    the intersection of its keys' bit sets, every key ``q`` in ``C`` has
    ``<q, v> <= sum_{x in U} max(v_x, 0) + sum_{x in I} min(v_x, 0)``. A search computes every
    cluster's bound (byte tables over the packed bits, as in
    :class:`~fastmwem.workloads.RandomCountingQueries`), visits clusters in decreasing bound
    order, scores their keys exactly, and stops once the next bound is below the current k-th
    score by more than the floating-point error of the sums. The result is an exact top-k
    (``certified_gap = 0``).

    It pays off when keys come in tight clusters (intervals, boxes, conjunctions, near-copies
    of a few patterns): then the union and intersection are close and few clusters are opened.
    On independent random bits the bounds are loose and it degrades to a scan plus overhead.

    Args:
        keys: a 2-D array of 0/1 entries (bool or numbers), one key per row.
        leaf_size: most keys per cluster (>= 1).

    >>> keys = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1]])
    >>> oracle = BranchAndBoundOracle(keys, leaf_size=2)
    >>> scores, ids = oracle.search(np.array([[1.0, 2.0, -1.0, 0.5]]), 2)
    >>> scores.tolist(), ids.tolist()
    ([[3.0, 2.0]], [[0, 1]])
    """

    def __init__(self, keys: object, *, leaf_size: int = 32) -> None:
        bits = _check_binary_keys(keys)
        self._build(np.packbits(bits, axis=1), bits.shape[1], leaf_size)

    @classmethod
    def from_packed(cls, packed: np.ndarray, dimension: int, *, leaf_size: int = 32
                    ) -> BranchAndBoundOracle:
        """The oracle over keys already bit-packed with ``np.packbits(keys, axis=1)``.

        ``dimension`` is the number of cells (bits) per key; pad bits of the last byte are
        ignored. E.g. ``from_packed(workload.packed, workload.domain.size)`` for random
        counting queries.
        """
        d = check_int(dimension, "dimension", minimum=1)
        arr = np.asarray(packed)
        if arr.dtype != np.uint8:
            raise TypeError(f"packed must have dtype uint8, got {arr.dtype}")
        n_bytes = -(-d // 8)
        if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] != n_bytes:
            raise ValueError(
                f"packed must have shape (n_keys >= 1, {n_bytes}) for dimension {d}, got {arr.shape}"
            )
        tail = d - 8 * (n_bytes - 1)
        arr = arr.copy()
        arr[:, -1] &= np.uint8((0xFF << (8 - tail)) & 0xFF)
        oracle = cls.__new__(cls)
        oracle._build(arr, d, leaf_size)
        return oracle

    def _build(self, packed: np.ndarray, dimension: int, leaf_size: int) -> None:
        leaf = check_int(leaf_size, "leaf_size", minimum=1)
        super().__init__(packed.shape[0], dimension)
        order, starts = _bisect(packed, dimension, leaf)
        self.leaf_size = leaf
        self._packed = np.ascontiguousarray(packed[order])
        self._key_ids = order
        self._position = np.empty_like(order)
        self._position[order] = np.arange(order.size)
        self._starts = starts
        self._union = np.bitwise_or.reduceat(self._packed, starts[:-1], axis=0)
        self._inter = np.bitwise_and.reduceat(self._packed, starts[:-1], axis=0)
        self._offsets = np.arange(packed.shape[1], dtype=np.intp) * 256
        self.clusters_opened: int | None = None  # of the last search, for benchmarks

    @property
    def n_clusters(self) -> int:
        return int(self._starts.size - 1)

    def _padded(self, vector: np.ndarray) -> np.ndarray:
        padded = np.zeros(8 * self._offsets.size)
        padded[:self.dimension] = vector
        return padded

    def _sums(self, table: np.ndarray, rows: np.ndarray) -> np.ndarray:
        # One code path for search and score, so a key's score rounds the same in both.
        return np.take(table, np.add(rows, self._offsets, dtype=np.intp)).sum(axis=1)

    def _search_one(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        padded = self._padded(vector)
        table = _byte_tables(padded)
        bounds = (self._sums(_byte_tables(np.maximum(padded, 0.0)), self._union)
                  + self._sums(_byte_tables(np.minimum(padded, 0.0)), self._inter))
        # Both a score and a bound are sums of at most ``dimension`` entries of v: each is off
        # by less than this, so pruning with it never drops a key the exact sums would keep.
        slack = 4.0 * (self.dimension + 8) * np.finfo(np.float64).eps * float(np.abs(vector).sum())
        visit = np.argsort(-bounds, kind="stable")
        sizes = self._starts[1:] - self._starts[:-1]
        best_s = np.empty(0)
        best_p = np.empty(0, dtype=np.int64)
        # Clusters are opened in bound order, a batch at a time, the batches doubling: at most
        # twice the keys a one-by-one visit would score, in a logarithmic number of steps.
        reach = np.cumsum(sizes[visit])  # keys in the first i + 1 clusters visited
        batch_keys = max(k, self.leaf_size)
        c = 0
        while c < visit.size:
            if best_s.size == k and bounds[visit[c]] + slack < best_s.min():
                break
            done = int(reach[c - 1]) if c else 0
            stop = min(int(np.searchsorted(reach, done + batch_keys)) + 1, visit.size)
            positions = _ranges(self._starts[visit[c:stop]], sizes[visit[c:stop]])
            scores = np.concatenate([best_s, self._sums(table, self._packed[positions])])
            kept = np.concatenate([best_p, positions])
            if scores.size > k:
                top = np.argpartition(-scores, k - 1)[:k]
                scores, kept = scores[top], kept[top]
            best_s, best_p = scores, kept
            batch_keys += positions.size
            c = stop
        self.clusters_opened = c
        order = np.argsort(-best_s, kind="stable")
        return best_s[order], self._key_ids[best_p[order]]

    def _score(self, ids: np.ndarray, vector: np.ndarray) -> np.ndarray:
        table = _byte_tables(self._padded(vector))
        return self._sums(table, self._packed[self._position[ids]])
