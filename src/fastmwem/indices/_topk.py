"""Exact top-k from an approximate scan: candidate windows, rounding bounds, padding.

Every exact index here works in two steps. A fast scan computes approximate scores ``b_i`` with a
proven bound ``|b_i - a_i| <= E`` against the exact float64 scores ``a_i`` that ``score`` returns.
Every key whose exact score reaches the k-th largest exact score then has ``b_i >= T - 2E``, where
``T`` is the k-th largest approximate score (the k keys above ``T`` have exact scores
``>= T - E``, so the k-th exact score is ``>= T - E``). Rescoring that window exactly and keeping
the k best gives a true top-k set, whatever the rounding of the scan: the lazy exponential
mechanism needs exactly that (Fast-MWEM, arXiv:2602.03732, App. D; a missed key would change
its law).
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._order import best_first

__all__ = [
    "gamma", "holder_bound", "update_norms", "window_candidates", "best_k", "pad_results",
]

#: Unit roundoffs of float32 and float64 (round to nearest).
U32 = 2.0**-24
U64 = 2.0**-53

# Strided samples of this many scores locate the k-th largest of a long score array.
_SAMPLE = 1 << 16


def gamma(n: int, unit: float) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)``, bounding ``n`` chained roundings (any order).

    A dot product of length ``n`` computed in any summation order, with or without fused
    multiply-adds, has ``|fl(x.y) - x.y| <= gamma_n |x|.|y|``; ``inf`` when ``n u >= 1``.
    """
    nu = n * unit
    return math.inf if nu >= 1.0 else nu / (1.0 - nu) * (1.0 + 1e-12)


def holder_bound(norms: tuple[float, float, float], v: np.ndarray) -> float:
    """An upper bound of ``max_i sum_j |k_ij| |v_j|`` from the keys' largest (L1, L2, Linf)
    norms, by Hoelder's inequality (the smallest of the three pairings), rounded upwards."""
    l1, l2, linf = norms
    av = np.abs(v)
    bound = min(l1 * float(av.max(initial=0.0)), l2 * math.sqrt(float(av @ av)),
                linf * float(av.sum()))
    return bound * (1.0 + 1e-9)


def update_norms(norms: tuple[float, float, float], keys: np.ndarray,
                 rows: int = 8192) -> tuple[float, float, float]:
    """``norms`` (largest L1, L2 and Linf norm of a key) updated with the rows of ``keys``."""
    l1, l2, linf = norms
    for start in range(0, keys.shape[0], rows):
        block = np.abs(np.asarray(keys[start:start + rows], dtype=np.float64))
        l1 = max(l1, float(block.sum(axis=1).max()))
        l2 = max(l2, float(np.sqrt((block * block).sum(axis=1)).max()))
        linf = max(linf, float(block.max()))
    return l1, l2, linf


def window_candidates(values: np.ndarray, k: int, window: float) -> np.ndarray:
    """Ids ``i`` with ``values[i] >= T - window``, ``T`` the k-th largest value (or a superset).

    For long arrays ``T`` is not found by a full partition: a strided sample gives a guess ``g``
    that is accepted only once at least ``k`` values are ``>= g`` (then ``g <= T``, and
    ``values >= g - window`` is a superset of the window), else the guess is lowered. A superset
    is harmless, since the caller rescores the candidates exactly.
    """
    n = values.size
    if k >= n:
        return np.arange(n, dtype=np.int64)
    if n <= 4 * _SAMPLE:
        kth = np.partition(values, n - k)[n - k]
        return np.flatnonzero(values >= kth - window).astype(np.int64, copy=False)
    stride = n // _SAMPLE
    sample = np.sort(values[::stride])
    rank = math.ceil(1.25 * k * sample.size / n) + 16
    while True:
        guess = sample[max(sample.size - rank, 0)]
        if rank >= sample.size:
            guess = values.min()
        cand = np.flatnonzero(values >= guess - window)
        if rank >= sample.size or np.count_nonzero(values[cand] >= guess) >= k:
            return cand.astype(np.int64, copy=False)
        rank *= 4


def best_k(ids: np.ndarray, scores: np.ndarray, k: int, key: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` entries of largest ``key`` (default: ``scores``), best first, ties by id."""
    key = scores if key is None else key
    chosen = np.arange(ids.size)
    if ids.size > k:
        # A partition, then a sort of k entries only: the window may hold many more than k.
        kth = np.partition(key, ids.size - k)[ids.size - k]
        above = np.flatnonzero(key > kth)
        tied = np.flatnonzero(key == kth)
        tied = tied[np.argsort(ids[tied], kind="stable")[:k - above.size]]
        chosen = np.concatenate([above, tied])
    order = chosen[best_first(key[chosen], ids[chosen])]
    return scores[order], ids[order]


def pad_results(rows: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Stack per-query ``(scores, ids)`` into ``(n, k)`` arrays padded with ``-inf`` / ``-1``."""
    out_s = np.full((len(rows), k), -np.inf)
    out_i = np.full((len(rows), k), -1, dtype=np.int64)
    for r, (scores, ids) in enumerate(rows):
        out_s[r, :scores.size] = scores
        out_i[r, :ids.size] = ids
    return out_s, out_i
