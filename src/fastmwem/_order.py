"""Ordering of scored candidates shared by the top-k indices and the lazy mechanism."""

from __future__ import annotations

import numpy as np

__all__ = ["best_first"]


def best_first(key: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The permutation putting entries in decreasing ``key``, ties by increasing ``ids``.

    One unstable sort when no two keys are equal (float scores rarely are), else two stable
    sorts (by id, then by key): a third of the time of the two sorts on a top set of a thousand.

    >>> best_first(np.array([1.0, 3.0, 3.0, 2.0]), np.array([5, 9, 4, 0])).tolist()
    [2, 1, 3, 0]
    """
    order = np.argsort(-key)
    ordered = key[order]
    if ordered.size < 2 or not np.any(ordered[1:] == ordered[:-1]):
        return order
    by_id = np.argsort(ids, kind="stable")
    return by_id[np.argsort(-key[by_id], kind="stable")]
