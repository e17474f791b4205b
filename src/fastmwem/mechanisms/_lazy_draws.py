"""The lazy exponential mechanism's sampling steps, apart from its calibration and checks.

The tail's truncated Gumbels and distinct ids, the merge of an oracle's candidates into the top
set, and the Gumbel-max over scored candidates. Where numba is installed, the steps that are
plain arithmetic or bookkeeping run compiled (``mechanisms._lazy_numba``): each is the numpy
code below operation for operation (the same float operations in the same order, the same
ids), so the draws and the selected ids do not depend on it. A round pays a dozen array
operations fewer, each of which costs the most right after the oracle's scan has pushed
everything else out of the caches. Every random number still comes from the caller's
generator, in the same calls, and the transcendental functions stay numpy's.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import cast

import numpy as np

from fastmwem._order import best_first
from fastmwem.mechanisms.exponential import _log_weights

__all__: list[str] = []

_kernels: ModuleType | None | bool = False  # False: not looked for yet


def _tail_kernels() -> ModuleType | None:
    """The compiled helpers (``mechanisms._lazy_numba``), or None without numba.

    Imported on first use: loading numba takes about half a second."""
    global _kernels
    if _kernels is False:
        try:
            from fastmwem.mechanisms import _lazy_numba
        except ImportError:
            _kernels = None
        else:
            _kernels = _lazy_numba
    return cast("ModuleType | None", _kernels)


def _truncated_gumbel(generator: np.random.Generator, size: int, p_tail: float,
                      margin: float) -> np.ndarray:
    """``size`` Gumbel(0, 1) draws conditioned on exceeding ``margin`` (``p_tail = P[G > margin]``).

    Inverse CDF on ``U ~ Unif(F(B), 1)`` written as ``U = 1 - p_tail V`` with ``V in (0, 1]``,
    so no draw is infinite; the clamp only matters when ``p_tail`` rounds to 1.
    """
    v = 1.0 - generator.random(size)
    with np.errstate(divide="ignore"):
        g = -np.log(-np.log1p(-p_tail * v))
    return np.maximum(g, margin)


def _distinct_ids(generator: np.random.Generator, n: int, forbidden: np.ndarray,
                  t: int) -> np.ndarray:
    """``t`` distinct ids drawn uniformly from ``[0, n)`` minus the sorted array ``forbidden``.

    Rejection sampling in draw order (expected ``O(t)`` draws while the forbidden and chosen ids
    are at most half of ``[0, n)``): the accepted sequence is a uniform ordered sample without
    replacement. Otherwise the allowed ids are listed and ``t`` of them chosen.
    """
    if 2 * (forbidden.size + t) > n:
        allowed = np.setdiff1d(np.arange(n, dtype=np.int64), forbidden, assume_unique=True)
        return generator.choice(allowed, size=t, replace=False)
    kernels = _tail_kernels()
    if kernels is not None:
        return _accepted(generator, n, kernels, kernels.new_table(forbidden, t), t)
    chosen = np.empty(0, dtype=np.int64)  # the accepted ids, in draw order
    while chosen.size < t:
        need = t - chosen.size
        draw = generator.integers(0, n, size=need + need // 2 + 16, dtype=np.int64)
        if forbidden.size:
            pos = np.minimum(np.searchsorted(forbidden, draw), forbidden.size - 1)
            draw = draw[forbidden[pos] != draw]
        # The ids a one-by-one pass over the draws would accept, in array operations (a
        # Python loop took milliseconds for the thousand tail ids of a flat law): each id's
        # first draw, in draw order, unless accepted before.
        fresh = draw[np.sort(np.unique(draw, return_index=True)[1])]
        if chosen.size:
            fresh = fresh[~np.isin(fresh, chosen)]
        chosen = np.concatenate([chosen, fresh[:need]])
    return chosen


def _accepted(generator: np.random.Generator, n: int, kernels: ModuleType,
              table: tuple[np.ndarray, np.uint64], t: int) -> np.ndarray:
    """The draws of :func:`_distinct_ids`, accepted one by one against a hash set of the
    forbidden ids (the array version sorts every batch: a tenth of a millisecond for the
    thousand tail ids of a flat law)."""
    accepted = np.empty(t, dtype=np.int64)
    count = 0
    while count < t:
        need = t - count
        draw = generator.integers(0, n, size=need + need // 2 + 16, dtype=np.int64)
        count = kernels.accept(draw, *table, accepted, count)
    return accepted


def _tail_ids(generator: np.random.Generator, n: int, top_ids: np.ndarray,
              excluded: np.ndarray, t: int) -> np.ndarray:
    """:func:`_distinct_ids` with the top set and the excluded ids (disjoint, each distinct)
    forbidden; the hash set takes them unsorted."""
    kernels = _tail_kernels()
    if kernels is not None and 2 * (top_ids.size + excluded.size + t) <= n:
        return _accepted(generator, n, kernels, kernels.new_table2(top_ids, excluded, t), t)
    # their sorted union (np.union1d is several times slower)
    return _distinct_ids(generator, n, np.sort(np.concatenate([top_ids, excluded])), t)


def _noisy_best(scores: np.ndarray, scale: float, top: float, gumbels: np.ndarray
                ) -> tuple[int, float, float]:
    """Gumbel-max over scored candidates: the position of the largest
    ``_log_weights(scores, scale, top) + gumbels`` (the first, on ties), that largest value,
    and the smallest log-weight."""
    kernels = _tail_kernels() if math.isfinite(scale) else None
    if kernels is not None:
        return kernels.noisy_best(scores, scale, top, gumbels)
    y = _log_weights(scores, scale, top)
    noisy = y + gumbels
    winner = int(np.argmax(noisy))
    return winner, float(noisy[winner]), float(y.min())


def _merged_top(ids: np.ndarray, scores: np.ndarray, k: int, excluded: np.ndarray,
                oracle: object) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of candidate (ids, scores) as an oracle returned them (padding ``-1``, an
    id possibly listed twice), excluded ids dropped: best first, ties by id."""
    ids = np.asarray(ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    kernels = _tail_kernels()
    if kernels is not None:
        top_ids, top_scores, ordered = kernels.ordered_top(ids, scores, k, excluded)
        if ordered:  # an exact oracle's own top list: the first k not excluded
            return top_ids, top_scores
    keep = ids >= 0
    if excluded.size:
        keep &= ~_members(ids, excluded)
    ids, scores = ids[keep], scores[keep]
    if kernels is None and ids.size and _best_first_distinct(ids, scores):
        return ids[:k], scores[:k]
    # Sorted by id (two stable sorts cost a tenth of np.lexsort and np.unique here).
    by_id = np.argsort(ids, kind="stable")
    ids, scores = ids[by_id], scores[by_id]
    first = np.ones(ids.size, dtype=bool)
    first[1:] = ids[1:] != ids[:-1]  # an id listed by both signs: its first listing
    ids, scores = ids[first], scores[first]
    if ids.size == 0:
        raise RuntimeError(f"oracle {type(oracle).__name__} returned no keys")
    if ids.size > k:  # the k best and their ties, then a sort of those only
        near = scores >= np.partition(scores, ids.size - k)[ids.size - k]
        ids, scores = ids[near], scores[near]
    order = np.argsort(-scores, kind="stable")[:k]  # ties by id
    return ids[order], scores[order]


def _members(ids: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """``np.isin(ids, excluded)`` by binary search in the sorted ``excluded`` (np.isin builds a
    table over the range of ``excluded``: a million entries for ids spread over the keys)."""
    if excluded.size > 1 and not bool(np.all(excluded[1:] > excluded[:-1])):
        excluded = np.unique(excluded)
    pos = np.minimum(np.searchsorted(excluded, ids), excluded.size - 1)
    return excluded[pos] == ids


def _best_first_distinct(ids: np.ndarray, scores: np.ndarray) -> bool:
    """Whether the ids are distinct and ordered best first by score, ties by increasing id
    (then the top-k of :func:`_merged_top` is their first k entries)."""
    if ids.size < 2:
        return True
    ahead, behind = scores[:-1], scores[1:]
    if not bool(np.all((behind < ahead) | ((behind == ahead) & (ids[1:] > ids[:-1])))):
        return False
    # equal scores came in increasing ids; an id listed twice with two scores is still caught
    ordered = np.sort(ids)
    return not bool(np.any(ordered[1:] == ordered[:-1]))


def _both_sides(ids: np.ndarray, scores: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys as the signed candidates ``j`` (score ``s``) and ``m + j`` (score ``-s``)."""
    return np.concatenate([ids, ids + m]), np.concatenate([scores, -scores])


def _better_sides(ids: np.ndarray, scores: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The top-``k`` of the ``2m`` signed candidates given the ``k`` distinct keys of largest
    ``|score|`` (``k = ids.size``), best first with ties by id: each key's better side, id
    ``j`` for a score ``>= 0`` and ``m + j`` otherwise, scoring ``|score|``. It beats every
    other side, since ``|s| >= 0 >= -|s|`` and a zero score's other side, ``m + j``, loses the
    tie by id."""
    positive = scores >= 0  # -0.0 too, whose sides tie
    ids = np.where(positive, ids, ids + m)
    scores = np.where(positive, scores, -scores)
    order = best_first(scores, ids)
    return ids[order], scores[order]
