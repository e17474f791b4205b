"""Counting ordered top-k sequences per integer error level.

Notation (0-based): counts sorted non-increasing are ``c[0] >= ... >= c[d-1]``; a sequence is
``k`` distinct sorted positions ``s[0..k-1]``; its error is ``e(S) = max_i (c[i] - c[s[i]])``, an
integer ``>= 0`` (the item of ``S`` with the largest position sits at some ``i`` with
``c[s[i]] <= c[k-1] <= c[i]``). With ``t_i(e) = #{j : c[j] >= c[i] - e}`` (a prefix of the sorted
order, non-decreasing in ``i``), the sequences with error ``<= e`` number
``N(e) = prod_i (t_i(e) - i)``: fill the positions in increasing ``i`` and each prefix holds all
the earlier choices. A sequence with error exactly ``e`` is split by its first position ``p`` with
``c[p] - c[s[p]] = e``:

    #(e, p) = prod_{i<p} (t_i(e-1) - i) * (t_p(e) - t_p(e-1)) * prod_{i>p} (t_i(e) - i).

This is the (levels x k) table of Wu and Zhang (NeurIPS 2024). A level's total,
``N(e) - N(e-1)``, is formed as ``N(e) (1 - exp(-D(e)))`` from the log-ratio ``D(e)``, a sum of
``log1p`` over the positions whose prefix grew at ``e``; the row of one level is a sum of logs.
No difference of large numbers is ever formed, and every comparison of counts is an exact int64
comparison.

Only the counts ``>= c[k-1] - L`` matter for the levels up to ``L``: ``t_i(e)`` never looks
lower. :class:`SortedCounts` keeps just those, as their distinct values with the number of
copies of each, never the sorted order of all the counts; the ``k`` sorted positions drawn are
turned into the caller's item indices by one pass over the counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

__all__ = ["SortedCounts", "count_span", "kth_largest", "level_log_masses", "iter_level_log_masses",
           "level_row", "sequence_in_cell", "uniform_sequence", "log_num_sequences",
           "default_level_cap"]

# Counts read per step when a pass over all of them needs temporaries (about 30 bytes each).
_CHUNK_ITEMS = 1 << 16

# (position, count value) pairs handled per step of the level pass: about 10 arrays of 8 bytes
# each, so the level table's working memory stays near 20 MB whatever epsilon, the count range
# or the number of distinct counts.
_CHUNK_EVENTS = 1 << 18

# Size of the strided sample that guesses a lower bound of the k-th largest count.
_SAMPLE = 1 << 15


def count_span(counts: np.ndarray) -> int:
    """The largest error any sequence can have: ``max(counts) - min(counts)``."""
    return int(counts.max()) - int(counts.min())


def kth_largest(counts: np.ndarray, k: int) -> int:
    """The ``k``-th largest count, without copying all the counts when it can be avoided.

    A strided sample guesses a value ``x`` with at least ``k`` counts above it; only those are
    then copied and partitioned. The guess only sets the speed: if fewer than ``k`` counts reach
    it, all of them are partitioned.
    """
    d = counts.size
    if d > 4 * _SAMPLE:
        sample = counts[:: d // _SAMPLE]
        m = sample.size
        rank = min(m, 2 * math.ceil(k * m / d) + 64)  # counted from the top of the sample
        x = int(np.partition(sample, m - rank)[m - rank])
        cand = counts[counts >= x]
        if cand.size >= k:
            cand.partition(cand.size - k)
            return int(cand[cand.size - k])
    return int(np.partition(counts, d - k)[d - k])


class SortedCounts:
    """The counts within ``depth`` of the k-th largest, as sorted distinct values, and the top k.

    ``counts`` (int64, validated) is kept by reference and never written to. The ``n`` counts
    ``>= floor = max(min(counts), c[k-1] - depth)`` are held as their distinct values ``vals``
    (increasing) and ``starts`` (``starts[g]`` of them lie below ``vals[g]``,
    ``starts[-1] = n``). There are at most ``depth + k`` distinct values, so beyond the O(n)
    working copy made once, the memory does not depend on how the counts are spread. Time O(d),
    plus a sort of the window when its values are sparse over a range wider than ``2 n``.
    """

    __slots__ = ("counts", "d", "k", "span", "depth", "floor", "n", "vals", "starts", "top")

    def __init__(self, counts: np.ndarray, k: int, depth: int | None = None,
                 span: int | None = None) -> None:
        self.counts = counts
        self.d = int(counts.size)
        self.k = int(k)
        lo = int(counts.min())
        self.span = int(counts.max()) - lo if span is None else int(span)
        self.depth = self.span if depth is None else min(int(depth), self.span)
        kth = kth_largest(counts, self.k)
        self.floor = max(lo, kth - self.depth)
        window = counts[counts >= self.floor]
        self.n = int(window.size)
        window -= self.floor  # our own copy: offsets from the floor, band values 0 .. band
        band = kth - self.floor
        above = window[window > band]  # fewer than k counts lie above the k-th largest
        if band + 1 <= max(2 * self.n, 1 << 16):
            np.minimum(window, band + 1, out=window)
            hist = np.bincount(window, minlength=band + 2)[: band + 1]
            del window
            band_vals = np.flatnonzero(hist)
            band_mult = hist[band_vals]
            del hist
        else:  # a band sparse in a wide range: sorting beats a histogram of the range
            window.sort()
            window = window[: self.n - above.size]
            first = np.empty(window.size, dtype=bool)
            first[:1] = True
            np.not_equal(window[1:], window[:-1], out=first[1:])
            at = np.flatnonzero(first)
            del first
            band_vals = window[at]
            band_mult = np.diff(np.append(at, window.size))
            del window, at
        above_vals, above_mult = np.unique(above, return_counts=True)
        self.vals = np.concatenate((band_vals, above_vals)).astype(np.int64) + self.floor
        self.starts = np.zeros(self.vals.size + 1, dtype=np.int64)
        np.cumsum(np.concatenate((band_mult, above_mult)), out=self.starts[1:])
        self.top = self.desc_values(np.arange(self.k))

    def _group_of(self, positions: np.ndarray) -> np.ndarray:
        """Index in ``vals`` of the count at each sorted (non-increasing) position ``< n``."""
        return np.searchsorted(self.starts, self.n - 1 - positions, side="right") - 1

    def desc_values(self, positions: np.ndarray) -> np.ndarray:
        """``c[p]`` for sorted positions ``p < n``."""
        return self.vals[self._group_of(np.asarray(positions, dtype=np.int64))]

    def _check_reach(self, values: np.ndarray) -> None:
        if values.size and int(values.min()) < self.floor and self.n < self.d:
            raise ValueError("a count below the tabulated window was asked for (internal error)")

    def at_least(self, values: np.ndarray) -> np.ndarray:
        """``#{j : c[j] >= v}`` for each ``v >= floor`` (exact integer comparison)."""
        values = np.asarray(values, dtype=np.int64)
        self._check_reach(values)
        return self.n - self.starts[np.searchsorted(self.vals, values, side="left")]

    def above(self, values: np.ndarray) -> np.ndarray:
        """``#{j : c[j] > v}`` for each ``v >= floor`` (exact, no ``v + 1`` overflow)."""
        values = np.asarray(values, dtype=np.int64)
        self._check_reach(values)
        return self.n - self.starts[np.searchsorted(self.vals, values, side="right")]

    def error_of_items(self, items: np.ndarray) -> int:
        """Error ``max_i (c[i] - counts[items[i]])`` of a sequence of item indices."""
        return int(np.max(self.top - self.counts[items]))

    def items(self, positions: np.ndarray) -> np.ndarray:
        """Item indices of distinct sorted positions ``< n``.

        Within a run of equal counts, the ``j``-th position goes to the ``j``-th item of that
        count in index order. Any fixed bijection that keeps counts would do: every set of
        sequences drawn uniformly here is closed under permutations of equal counts.
        """
        positions = np.asarray(positions, dtype=np.int64)
        group = self._group_of(positions)
        # the run of vals[g] holds sorted positions n - starts[g+1] .. n - starts[g] - 1
        ranks = positions - (self.n - self.starts[group + 1])
        wanted, which = np.unique(self.vals[group], return_inverse=True)
        m = wanted.size
        find = _Finder(wanted)
        seen = np.zeros(m, dtype=np.int64)
        out = np.full(positions.size, -1, dtype=np.int64)
        pending = np.ones(positions.size, dtype=bool)
        for start in range(0, self.d, _CHUNK_ITEMS):
            idx, g = find(self.counts[start:start + _CHUNK_ITEMS])
            if not idx.size:
                continue
            per = np.bincount(g, minlength=m)
            now = np.flatnonzero(pending & (ranks < seen[which] + per[which]))
            if now.size:
                order = np.argsort(g, kind="stable") if m > 1 else slice(None)
                where = idx[order]  # hits grouped by count, in index order within each
                offset = np.cumsum(per) - per
                gq = which[now]
                out[now] = start + where[offset[gq] + ranks[now] - seen[gq]]
                pending[now] = False
                if not pending.any():
                    break
            seen += per
        if pending.any():
            raise RuntimeError("sorted positions outside the counts (internal error)")
        return out


class _Finder:
    """The items of a chunk whose count is one of ``wanted`` (sorted), with its label in it."""

    def __init__(self, wanted: np.ndarray) -> None:
        self.wanted = wanted
        self.first, self.last, m = int(wanted[0]), int(wanted[-1]), wanted.size
        # small labels make the stable argsort of the caller a radix sort
        self.label = np.uint8 if m <= 1 << 8 else np.uint16 if m <= 1 << 16 else np.int64
        self.table = None
        if m > 1 and self.last - self.first < 1 << 16:  # labels by lookup, not by search
            self.table = np.full(self.last - self.first + 1, m, dtype=np.int64)
            self.table[wanted - self.first] = np.arange(m)

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = self.wanted.size
        if m == 1:
            idx = np.flatnonzero(x == self.first)
            return idx, np.zeros(idx.size, dtype=self.label)
        idx = np.flatnonzero((x >= self.first) & (x <= self.last))
        if self.table is not None:
            g = self.table[x[idx] - self.first]
            hit = g < m
        else:
            g = np.searchsorted(self.wanted, x[idx])
            hit = self.wanted[g] == x[idx]
        return idx[hit], g[hit].astype(self.label)


def log_num_sequences(d: int, k: int) -> float:
    """``ln(d! / (d - k)!)``, the log of the number of ordered sequences of k distinct items."""
    return math.lgamma(d + 1) - math.lgamma(d - k + 1)


def default_level_cap(d: int, k: int, span: int, lam: float, beta: float) -> int:
    """Last error level counted explicitly: Wu and Zhang's threshold, capped by the range.

    Beyond ``L`` every sequence has weight at most ``exp(-lam (L + 1))``, so the whole tail
    weighs at most ``d!/(d-k)! exp(-lam (L + 1)) <= beta``, while level 0 alone weighs at least 1.
    The cap only affects speed: the samplers stay exact for every ``L``.
    """
    need = (log_num_sequences(d, k) + math.log(1.0 / beta)) / lam
    if not math.isfinite(need) or need >= span:
        return span
    return min(span, max(0, math.ceil(need)))


def iter_level_log_masses(sc: SortedCounts) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(levels, ln #{S : e(S) = e})`` over the levels ``e <= sc.depth`` holding a sequence.

    Levels come in increasing order, in chunks; levels left out hold no sequence. The prefix
    of position ``i`` grows at level ``e >= 1`` exactly when some count equals ``v = c[i] - e``,
    from
    ``t_i(e-1) = #{c > v}`` by the ``m`` copies of ``v``, which adds
    ``log1p(m / (#{c > v} - i))`` to ``D(e)``. The work is one step per (position, count value
    within ``depth`` below it) pair, at most ``k`` per level, vectorized over bounded chunks
    (about 10 ns a pair). ``ln N`` is carried across chunks with Neumaier's compensated sum.
    """
    k, top, vals, n = sc.k, sc.top, sc.vals, sc.n
    ar = np.arange(k)
    log_n = float(np.sum(np.log((sc.at_least(top) - ar).astype(np.float64))))
    # N(-1) = 0: every sequence of error <= 0 has error exactly 0
    yield np.zeros(1, dtype=np.int64), np.array([log_n])
    copies = np.diff(sc.starts).astype(np.float64)
    higher = n - sc.starts[1:]  # #{c > vals[g]}
    carry = 0.0  # Neumaier compensation of log_n
    step = max(1, _CHUNK_EVENTS // k)  # levels per chunk: at most k pairs per level
    e0 = 1
    while e0 <= sc.depth:
        e1 = min(sc.depth, e0 + step - 1)
        lo = np.searchsorted(vals, top - e1, side="left")
        hi = np.searchsorted(vals, top - e0, side="right")
        cnt = hi - lo
        total = int(cnt.sum())
        if total == 0:  # no pair in this stretch: jump to the next level that has one
            below = lo - 1
            ok = below >= 0
            if not ok.any():
                return
            e0 = int(np.min(top[ok] - vals[below[ok]]))
            continue
        pos = np.repeat(ar, cnt)
        g = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt - lo, cnt)
        level = top[pos] - vals[g] - e0
        term = np.log1p(copies[g] / (higher[g] - pos))
        del pos, g
        dsum = np.bincount(level, weights=term, minlength=e1 - e0 + 1)
        del level, term
        # every term is > 0 (at least log1p(1/n), far above the smallest double), so a level
        # has a sequence exactly when its sum is > 0
        has = np.flatnonzero(dsum)
        dsum = dsum[has]
        partial = np.cumsum(dsum)
        logs = (log_n + partial) + carry + np.log(-np.expm1(-dsum))
        # ln N at the end of the chunk, with Neumaier's compensation
        add = float(partial[-1])
        new = log_n + add
        carry += (log_n - new) + add if abs(log_n) >= abs(add) else (add - new) + log_n
        log_n = new
        yield has + e0, logs
        e0 = e1 + 1


def level_log_masses(sc: SortedCounts) -> tuple[np.ndarray, np.ndarray]:
    """All of :func:`iter_level_log_masses` at once (for small tables and tests)."""
    parts = list(iter_level_log_masses(sc))
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def level_row(sc: SortedCounts, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t(e-1), t(e), ln #(e, .))`` for one level ``e <= sc.depth`` (``-inf``: no sequence)."""
    if not 0 <= e <= sc.depth:
        raise ValueError("error level outside the tabulated depth (internal error)")
    k = sc.k
    ar = np.arange(k)
    t_prev = sc.above(sc.top - e)
    t_cur = sc.at_least(sc.top - e)
    with np.errstate(divide="ignore"):  # log(0) = -inf marks an empty choice
        f_prev = np.log(np.maximum(t_prev - ar, 0).astype(np.float64))
        f_cur = np.log((t_cur - ar).astype(np.float64))
        row = np.log((t_cur - t_prev).astype(np.float64))
    if k > 1:
        row[1:] += np.cumsum(f_prev[:-1])
        row[:-1] += np.cumsum(f_cur[:0:-1])[::-1]
    return t_prev, t_cur, row


def _partial_fisher_yates(picks: np.ndarray) -> np.ndarray:
    """Apply swaps ``(i, picks[i])`` for ``i = 0..k-1`` to the identity; return its first k.

    A dict holds the few displaced entries, so the cost is O(k) whatever d is.
    """
    moved: dict[int, int] = {}
    out = np.empty(picks.size, dtype=np.int64)
    for i, j in enumerate(picks.tolist()):
        vi = moved.get(i, i)
        vj = moved.get(j, j)
        moved[j] = vi
        moved[i] = vj
        out[i] = vj
    return out


def sequence_in_cell(t_prev: np.ndarray, t_cur: np.ndarray, p: int,
                     rng: np.random.Generator) -> np.ndarray:
    """A uniform sequence (sorted positions) among those counted in cell ``(e, p)``.

    Positions are filled in increasing ``i``: ``i < p`` from prefix ``t_i(e-1)``, ``p`` from the
    items with count exactly ``c[p] - e`` (positions ``t_p(e-1) .. t_p(e)-1``, none of them used
    yet), ``i > p`` from prefix ``t_i(e)``. Each prefix contains every earlier choice, so the
    number of options at each step does not depend on the earlier draws, and a partial
    Fisher-Yates over the nested prefixes draws them uniformly.
    """
    k = t_cur.size
    idx = np.arange(k)
    low = idx.copy()
    high = np.where(idx < p, t_prev, t_cur)
    low[p] = t_prev[p]
    high[p] = t_cur[p]
    return _partial_fisher_yates(rng.integers(low, high))


def uniform_sequence(d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform ordered sequence of k distinct indices out of d (items or positions alike)."""
    return _partial_fisher_yates(rng.integers(np.arange(k), d))
