"""All range queries of one ordered attribute, with an exact top-k oracle far below a scan."""

from __future__ import annotations

import heapq

import numpy as np

from fastmwem._validation import check_int
from fastmwem.data.domain import Domain
from fastmwem.workloads._common import (
    broadcastable,
    check_domain,
    merged_layout,
    project,
)
from fastmwem.workloads.base import LinearWorkload, check_histogram
from fastmwem.workloads.oracles import ExactOracle
from fastmwem.workloads.ranges import UnitBoxQueries

__all__ = ["AllIntervals", "IntervalOracle", "largest_differences"]

#: Most intervals a workload may hold: ``answer`` returns one float64 per interval (1 GiB).
MAX_INTERVALS = 2**27


class AllIntervals(UnitBoxQueries, LinearWorkload):
    """Every interval ``[lo, hi]`` (``0 <= lo <= hi < n``) of one ordered attribute of size ``n``.

    The ``n (n + 1) / 2`` queries count the records whose code on ``attribute`` lies in the
    interval (other attributes summed over): the 1-D range queries of the MWEM paper (arXiv:1012.4763) s.3.1, all of
    them. Queries are ordered by ``lo``, then ``hi``; nothing is stored per query. Answers are
    differences of the prefix sums ``P`` of the marginal, ``P[hi + 1] - P[lo]``.

    ``top_k_oracle()`` returns an :class:`IntervalOracle`: the exact top-k intervals of any
    vector in ``O(|X| + n log n + k log k)`` instead of ``O(n^2)`` (docs/workloads.md,
    *Chosen answers and exact top-k oracles*).

    Each query is its own group. A record changes each answer by at most 1 (add/remove one
    record), so ``query_sensitivity`` and every group sensitivity are 1.

    Args:
        domain: the domain.
        attribute: the ordered attribute (its codes are the order).

    Raises:
        ValueError: if the attribute is unknown or has so many values that the intervals exceed
            ``MAX_INTERVALS``.

    >>> d = Domain(["age", "sex"], [3, 2])
    >>> w = AllIntervals(d, "age")
    >>> w.n_queries, w.describe(4)
    (6, 'age in [1, 2]')
    >>> w.answer(np.arange(6.0)).tolist()
    [1.0, 6.0, 15.0, 5.0, 14.0, 9.0]
    """

    def __init__(self, domain: Domain, attribute: str) -> None:
        self.domain = check_domain(domain)
        if not isinstance(attribute, str):
            raise TypeError(f"attribute must be an attribute name, got {type(attribute).__name__}")
        axis = domain.axis(attribute)
        n = int(domain.shape[axis])
        m = n * (n + 1) // 2
        if m > MAX_INTERVALS:
            raise ValueError(
                f"attribute {attribute!r} has {n} values, so {m} intervals, above MAX_INTERVALS "
                f"= {MAX_INTERVALS}; coarsen the attribute or use RangeQueries.random"
            )
        self.attribute = attribute
        self.n_values = n
        self._layout = merged_layout(domain.shape, (axis,))
        lo = np.arange(n + 1, dtype=np.int64)
        # Query id of interval [lo, lo]: the n - j intervals starting at each j < lo come first.
        self._starts = lo * n - lo * (lo - 1) // 2
        self._starts.setflags(write=False)
        self._offsets: np.ndarray | None = None

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self._starts[-1])

    @property
    def group_offsets(self) -> np.ndarray:
        # Cached: at n = 4096 the offsets are 67 MB.
        if self._offsets is None:
            self._offsets = np.arange(self.n_queries + 1, dtype=np.int64)
            self._offsets.setflags(write=False)
        return self._offsets

    def bounds(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` of the intervals ``ids`` (checked int64 array of query ids)."""
        lo = np.searchsorted(self._starts, ids, side="right") - 1
        return lo, lo + (ids - self._starts[lo])

    def query_id(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Query ids of the intervals ``[lo, hi]`` (``lo <= hi``, not checked)."""
        return self._starts[lo] + (hi - lo)

    def describe(self, query: int) -> str:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        lo, hi = self.bounds(np.array([q]))
        return f"{self.attribute} in [{int(lo[0])}, {int(hi[0])}]"

    def describe_group(self, group: int) -> str:
        return "range(" + self.describe(group) + ")"

    # -- answers -----------------------------------------------------------------------------
    def prefix_sums(self, vector: np.ndarray) -> np.ndarray:
        """``P`` with ``P[0] = 0`` and ``P[j]`` the sum of the marginal of ``vector`` below ``j``."""
        marginal = project(vector, self._layout)
        out = np.zeros(self.n_values + 1)
        np.cumsum(marginal, out=out[1:])
        return out

    def answer(self, histogram: np.ndarray) -> np.ndarray:
        prefix = self.prefix_sums(check_histogram(histogram, self.domain))
        out = np.empty(self.n_queries)
        for lo in range(self.n_values):
            np.subtract(prefix[lo + 1:], prefix[lo], out=out[self._starts[lo]:self._starts[lo + 1]])
        return out

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        prefix = self.prefix_sums(hist)
        lo, hi = self.bounds(ids)
        return prefix[hi + 1] - prefix[lo]

    def group_attributes(self, group: int) -> tuple[int, ...]:
        check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        return (self.domain.axis(self.attribute),)

    def group_on_marginal(self, group: int, axes: tuple[int, ...]) -> tuple[AllIntervals, int]:
        return AllIntervals(self._marginal_domain(group, axes), self.attribute), group

    def answer_on_marginal(self, group: int, marginal: np.ndarray) -> np.ndarray:
        values = np.asarray(marginal, dtype=np.float64).reshape(-1)
        if values.size != self.n_values:
            raise ValueError(f"marginal must have {self.n_values} cells, got {values.size}")
        lo, hi = self.bounds(np.array([check_int(group, "group", minimum=0,
                                                 maximum=self.n_groups - 1)]))
        return np.array([values[int(lo[0]):int(hi[0]) + 1].sum()])

    def _box(self, query: int) -> tuple[slice, ...]:
        merged, kept = self._layout
        lo, hi = self.bounds(np.array([query]))
        box = [slice(None)] * len(merged)
        box[kept[0]] = slice(int(lo[0]), int(hi[0]) + 1)
        return tuple(box)

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        w = self._check_weights(weights)
        if not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite")
        # Difference array: interval [lo, hi] adds its weight at lo and removes it at hi + 1.
        diff = np.zeros(self.n_values + 1)
        for lo in range(self.n_values):
            row = w[self._starts[lo]:self._starts[lo + 1]]
            diff[lo] += row.sum()
            diff[lo + 1:] -= row
        out = np.zeros(self._layout[0])
        out += broadcastable(np.cumsum(diff[:-1]), self._layout)
        return out.reshape(-1)

    def top_k_oracle(self) -> IntervalOracle:
        """The exact top-k oracle over all intervals: :class:`IntervalOracle`."""
        return IntervalOracle(self)


class IntervalOracle(ExactOracle):
    """Exact top-k intervals of a vector: the ``k`` largest ``P[j] - P[i]`` with ``i < j``.

    ``search`` costs ``O(|X|)`` for the projection plus ``O(n log n + k log k)`` (see
    :func:`largest_differences`); ``score`` two prefix-sum look-ups per id, over the same prefix
    sums, so tail scores round exactly as the top-k scores do. For absolute scores the lazy
    mechanism searches ``v`` and ``-v``: the prefix sums of ``-v`` are ``-P``.
    """

    def __init__(self, workload: AllIntervals) -> None:
        super().__init__(workload.n_queries, workload.domain.size)
        self.workload = workload

    def _search_one(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, left, right = largest_differences(self.workload.prefix_sums(vector), k)
        return scores, self.workload.query_id(left, right - 1)

    def _score(self, ids: np.ndarray, vector: np.ndarray) -> np.ndarray:
        return self.workload._answer_queries(vector, ids)


def largest_differences(values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` largest ``values[j] - values[i]`` over pairs ``i < j``, best first.

    Pairs are split by their lowest common node in a complete binary tree over the positions:
    node ``(start, mid, end)`` owns the pairs with ``i`` in ``[start, mid)`` and ``j`` in
    ``[mid, end)``, whose best is ``max(right) - min(left)``, found for every node level by
    level in ``O(N)``. The top-k pairs lie in the ``k`` nodes with the largest bests (any other
    node is beaten by ``k`` distinct pairs), and inside a node, with the left half sorted up
    and the right half sorted down, the pairs form a sorted ``X + Y`` grid walked with a heap.
    Time ``O(N + k log k)`` plus sorting the halves of the at most ``k`` nodes that are opened
    (together at most ``N log N`` positions, usually far fewer).

    Returns:
        ``(scores, i, j)``: ``min(k, N (N - 1) / 2)`` entries, scores non-increasing.
    """
    n = values.size
    size = 1 << max(1, (n - 1).bit_length())
    low = np.full(size, np.inf)  # a position as the left end (minimised); padding never wins
    high = np.full(size, -np.inf)  # as the right end (maximised)
    low[:n] = values
    high[:n] = values
    bests, halves, starts = [], [], []
    half = 1
    while half < size:
        bests.append(high[1::2] - low[0::2])
        starts.append(np.arange(0, size, 2 * half))
        halves.append(np.full(size // (2 * half), half))
        low = np.minimum(low[0::2], low[1::2])
        high = np.maximum(high[0::2], high[1::2])
        half *= 2
    best = np.concatenate(bests)
    node_start = np.concatenate(starts)
    node_half = np.concatenate(halves)
    top = np.flatnonzero(best > -np.inf)
    if top.size > k:
        top = top[np.argpartition(-best[top], k - 1)[:k]]
    top = top[np.argsort(-best[top], kind="stable")]
    # A node's first pair enters only when it is the next best, so the heap holds just the
    # nodes that are reached (usually a handful: the top pairs share a few nodes).
    node_neg = (-best[top]).tolist()
    node_ids = top.tolist()
    n_nodes = len(node_ids)
    nxt = 0
    heap: list[tuple[float, int, int, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    opened: dict[int, tuple[list[float], list[int], list[float], list[int], int, int]] = {}

    def open_node(g: int) -> tuple[list[float], list[int], list[float], list[int], int, int]:
        start = int(node_start[g])
        mid = start + int(node_half[g])
        end = min(mid + int(node_half[g]), n)
        left = start + np.argsort(values[start:mid], kind="stable")
        right = mid + np.argsort(-values[mid:end], kind="stable")
        return (values[right].tolist(), right.tolist(), values[left].tolist(), left.tolist(),
                right.size, left.size)

    out_s: list[float] = []
    out_i: list[int] = []
    out_j: list[int] = []
    while len(out_s) < k:
        if nxt < n_nodes and (not heap or node_neg[nxt] <= heap[0][0]):
            neg, g, a, b = node_neg[nxt], node_ids[nxt], 0, 0
            nxt += 1
        elif heap:
            neg, g, a, b = pop(heap)
        else:
            break
        node = opened.get(g)
        if node is None:
            node = opened[g] = open_node(g)
        r_val, r_pos, l_val, l_pos, n_right, n_left = node
        out_s.append(-neg)
        out_i.append(l_pos[b])
        out_j.append(r_pos[a])
        # Each grid cell (a, b) is pushed once: from (a, b - 1), or from (a - 1, 0) when b = 0.
        if b + 1 < n_left:
            push(heap, (l_val[b + 1] - r_val[a], g, a, b + 1))
        if b == 0 and a + 1 < n_right:
            push(heap, (l_val[0] - r_val[a + 1], g, a + 1, 0))
    return (np.array(out_s, dtype=np.float64), np.array(out_i, dtype=np.int64),
            np.array(out_j, dtype=np.int64))
