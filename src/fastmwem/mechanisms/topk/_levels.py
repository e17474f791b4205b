"""Counting ordered top-k sequences per integer error level.

Notation (0-based): counts sorted non-increasing are ``c[0] >= ... >= c[d-1]``; a sequence is
``k`` distinct sorted positions ``s[0..k-1]``; its error is ``e(S) = max_i (c[i] - c[s[i]])``, an
integer ``>= 0`` (the item of ``S`` with the largest position sits at some ``i`` with
``c[s[i]] <= c[k-1] <= c[i]``). With ``t_i(e) = #{j : c[j] >= c[i] - e}`` (a prefix of the sorted
order, non-decreasing in ``i``), the sequences with error ``<= e`` number
``prod_i (t_i(e) - i)``: fill the positions in increasing ``i`` and each prefix holds all the
earlier choices. A sequence with error exactly ``e`` is split by its first position ``p`` with
``c[p] - c[s[p]] = e``:

    #(e, p) = prod_{i<p} (t_i(e-1) - i) * (t_p(e) - t_p(e-1)) * prod_{i>p} (t_i(e) - i).

This is the (levels x k) table of Wu and Zhang (NeurIPS 2024). All products are kept as sums of
logs (no big integers, no cancellation: every term is a product of positive numbers), and every
comparison of counts is an exact int64 comparison.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SortedCounts", "error_levels", "level_log_masses", "level_row", "sequence_in_cell",
           "uniform_sequence", "log_num_sequences", "default_level_cap"]

# Cells of the (levels x k) table handled per chunk; bounds the working memory (~6 arrays of
# 8 bytes per cell, so about 12 MB) whatever epsilon and the count range are.
_CHUNK_CELLS = 1 << 18


class SortedCounts:
    """Counts sorted non-increasing with the permutation back to the caller's indices."""

    __slots__ = ("order", "desc", "asc", "top", "d", "k", "span")

    def __init__(self, counts: np.ndarray, k: int) -> None:
        # The order among equal counts is irrelevant to every law sampled here (a prefix of the
        # sorted order is a set of whole tie groups, or a uniform draw within one), so the
        # faster unstable sort is fine.
        self.order = np.argsort(-counts)
        self.desc = counts[self.order]
        self.asc = np.ascontiguousarray(self.desc[::-1])
        self.top = np.ascontiguousarray(self.desc[:k])
        self.d = int(counts.size)
        self.k = int(k)
        #: The largest error any sequence can have.
        self.span = int(self.desc[0] - self.desc[-1])

    def at_least(self, values: np.ndarray) -> np.ndarray:
        """``#{j : c[j] >= v}`` for each ``v`` in ``values`` (exact integer comparison)."""
        return self.d - np.searchsorted(self.asc, values, side="left")

    def error(self, positions: np.ndarray) -> int:
        """Error ``max_i (c[i] - c[s[i]])`` of a sequence of sorted positions."""
        return int(np.max(self.top - self.desc[positions]))

    def items(self, positions: np.ndarray) -> np.ndarray:
        """Caller's item indices of sorted positions."""
        return self.order[positions]


def log_num_sequences(d: int, k: int) -> float:
    """``ln(d! / (d - k)!)``, the log of the number of ordered sequences of k distinct items."""
    return math.lgamma(d + 1) - math.lgamma(d - k + 1)


def default_level_cap(sc: SortedCounts, lam: float, beta: float) -> int:
    """Last error level counted explicitly: Wu and Zhang's threshold, capped by the range.

    Beyond ``L`` every sequence has weight at most ``exp(-lam (L + 1))``, so the whole tail
    weighs at most ``d!/(d-k)! exp(-lam (L + 1)) <= beta``, while level 0 alone weighs at least 1.
    The cap only affects speed: the samplers stay exact for every ``L``.
    """
    need = (log_num_sequences(sc.d, sc.k) + math.log(1.0 / beta)) / lam
    if not math.isfinite(need) or need >= sc.span:
        return sc.span
    return min(sc.span, max(0, math.ceil(need)))


def error_levels(sc: SortedCounts, last: int) -> np.ndarray:
    """The error levels in ``0 .. last`` that can hold a sequence, sorted (a superset).

    A sequence with error exactly ``e`` has a position ``p < k`` whose item has count
    ``c[p] - e``, so only differences between a top-k count and a count value matter. When
    there are fewer such differences than levels (a wide count range at small epsilon), the
    table is built on them alone; otherwise on the dense range, which is cheaper to build.
    """
    if last < 64:
        return np.arange(last + 1, dtype=np.int64)
    values = sc.asc[np.concatenate(([True], sc.asc[1:] != sc.asc[:-1]))]
    tops = np.unique(sc.top)
    lo = np.searchsorted(values, tops - last, side="left")
    hi = np.searchsorted(values, tops, side="right")
    total = int((hi - lo).sum())
    if 2 * total >= last + 1:
        return np.arange(last + 1, dtype=np.int64)
    owner = np.repeat(np.arange(tops.size), hi - lo)
    offset = np.arange(total) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo)
    return np.unique(tops[owner] - values[lo[owner] + offset])


def _tables(sc: SortedCounts, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prefix sizes at ``e - 1`` and ``e``, and the log-count rows, for each ``e`` in ``levels``.

    ``t_prev[j, i] = t_i(levels[j] - 1)``, ``t_cur[j, i] = t_i(levels[j])`` and
    ``rows[j, p] = ln #(levels[j], p)`` (``-inf`` for no sequence).
    """
    k = sc.k
    ar = np.arange(k)
    with np.errstate(divide="ignore"):  # log(0) = -inf marks an empty choice
        if levels.size and levels[-1] - levels[0] == levels.size - 1:
            # Consecutive levels share their prefix sizes: e - 1 of one is e of the previous.
            lev = np.arange(levels[0] - 1, levels[-1] + 1, dtype=np.int64)
            T = sc.at_least(sc.top[None, :] - lev[:, None])
            F = np.log(np.maximum(T - ar, 0).astype(np.float64))
            t_prev, t_cur, f_prev, f_cur = T[:-1], T[1:], F[:-1], F[1:]
        else:
            t_prev = sc.at_least(sc.top[None, :] - (levels - 1)[:, None])
            t_cur = sc.at_least(sc.top[None, :] - levels[:, None])
            f_prev = np.log(np.maximum(t_prev - ar, 0).astype(np.float64))
            f_cur = np.log(np.maximum(t_cur - ar, 0).astype(np.float64))
        rows = np.log((t_cur - t_prev).astype(np.float64))
    if k > 1:
        rows[:, 1:] += np.cumsum(f_prev[:, :-1], axis=1)
        rows[:, :-1] += np.cumsum(f_cur[:, :0:-1], axis=1)[:, ::-1]
    return t_prev, t_cur, rows


def _logsumexp_rows(rows: np.ndarray) -> np.ndarray:
    mx = rows.max(axis=1)
    finite = np.isfinite(mx)
    shift = np.where(finite, mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(rows - shift[:, None]).sum(axis=1)) + shift
    out[~finite] = -np.inf
    return out


def level_log_masses(sc: SortedCounts, levels: np.ndarray) -> np.ndarray:
    """``ln #{S : e(S) = e}`` for each ``e`` in ``levels`` (``-inf`` where there is none)."""
    out = np.empty(levels.size)
    step = max(1, _CHUNK_CELLS // sc.k)
    for j0 in range(0, levels.size, step):
        j1 = min(levels.size, j0 + step)
        out[j0:j1] = _logsumexp_rows(_tables(sc, levels[j0:j1])[2])
    return out


def level_row(sc: SortedCounts, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t(e-1), t(e), ln #(e, .))`` for one level."""
    t_prev, t_cur, rows = _tables(sc, np.array([e], dtype=np.int64))
    return t_prev[0], t_cur[0], rows[0]


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
    """A uniform ordered sequence of k distinct positions out of d."""
    return _partial_fisher_yates(rng.integers(np.arange(k), d))
