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

__all__ = ["SortedCounts", "level_log_masses", "level_row", "sequence_in_cell",
           "uniform_sequence", "log_num_sequences", "default_level_cap"]

# Cells of the (levels x k) table handled per chunk; bounds the working memory (~6 arrays of
# 8 bytes per cell, so about 12 MB) whatever epsilon and the count range are.
_CHUNK_CELLS = 1 << 18


class SortedCounts:
    """Counts sorted non-increasing with the permutation back to the caller's indices."""

    __slots__ = ("order", "desc", "asc", "top", "d", "k", "span")

    def __init__(self, counts: np.ndarray, k: int) -> None:
        # Stable order: ties keep their input order. Any fixed order gives the same law.
        self.order = np.argsort(-counts, kind="stable")
        self.desc = counts[self.order]
        self.asc = np.sort(counts)
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


def _tables(sc: SortedCounts, e0: int, e1: int) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sizes ``T`` for levels ``e0-1 .. e1-1`` and the log-count rows for ``e0 .. e1-1``.

    ``T[j, i] = t_i(e0 - 1 + j)``; ``rows[e - e0, p] = ln #(e, p)`` (``-inf`` for no sequence).
    """
    k = sc.k
    lev = np.arange(e0 - 1, e1, dtype=np.int64)
    T = sc.at_least(sc.top[None, :] - lev[:, None])
    with np.errstate(divide="ignore"):  # log(0) = -inf marks an empty choice
        F = np.log(np.maximum(T - np.arange(k), 0).astype(np.float64))
        G = np.log((T[1:] - T[:-1]).astype(np.float64))
    rows = G
    if k > 1:
        rows[:, 1:] += np.cumsum(F[:-1, :-1], axis=1)
        rows[:, :-1] += np.cumsum(F[1:, :0:-1], axis=1)[:, ::-1]
    return T, rows


def _logsumexp_rows(rows: np.ndarray) -> np.ndarray:
    mx = rows.max(axis=1)
    finite = np.isfinite(mx)
    shift = np.where(finite, mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(rows - shift[:, None]).sum(axis=1)) + shift
    out[~finite] = -np.inf
    return out


def level_log_masses(sc: SortedCounts, last: int) -> np.ndarray:
    """``ln #{S : e(S) = e}`` for ``e = 0 .. last`` (``-inf`` where there is none)."""
    out = np.empty(last + 1)
    step = max(1, _CHUNK_CELLS // sc.k)
    for e0 in range(0, last + 1, step):
        e1 = min(last + 1, e0 + step)
        out[e0:e1] = _logsumexp_rows(_tables(sc, e0, e1)[1])
    return out


def level_row(sc: SortedCounts, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t(e-1), t(e), ln #(e, .))`` for one level."""
    T, rows = _tables(sc, e, e + 1)
    return T[0], T[1], rows[0]


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
