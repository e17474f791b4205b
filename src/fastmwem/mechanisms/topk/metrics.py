"""Error of a top-k answer against the true top-k counts (Gillenwater et al. 2022, Def. 2.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastmwem.mechanisms.topk._common import check_counts

__all__ = ["TopKErrors", "topk_errors"]


@dataclass(frozen=True)
class TopKErrors:
    """Errors of a sequence ``S`` of k items, position by position against ``c_(1..k)``.

    Attributes:
        linf: ``max_i |c_(i) - c_{s_i}|``.
        l1: ``sum_i |c_(i) - c_{s_i}|``.
        k_relative: ``max_i (c_(k) - c_{s_i})`` (can be negative; never above ``linf``).
        linf_index: the 0-based position ``i`` where ``|c_(i) - c_{s_i}|`` is largest (first one
            on ties), as in the paper's Figure 2.
    """

    linf: int
    l1: int
    k_relative: int
    linf_index: int


def topk_errors(counts: object, selected: object) -> TopKErrors:
    """Errors of the sequence ``selected`` (indices into ``counts``), in output order.

    The comparison is position by position, so the right set in the wrong order is penalised.
    Integer counts are compared exactly.

    >>> topk_errors([10, 50, 30, 20], [1, 3])
    TopKErrors(linf=10, l1=10, k_relative=10, linf_index=1)
    """
    values = check_counts(counts)
    sel = np.asarray(selected)
    if sel.ndim != 1 or sel.size == 0 or not np.issubdtype(sel.dtype, np.integer):
        raise ValueError("selected must be a non-empty 1-D array of integer indices")
    if sel.size > values.size:
        raise ValueError(f"selected has {sel.size} items but counts only {values.size}")
    if sel.min() < 0 or sel.max() >= values.size:
        raise ValueError(f"selected must index into counts (0 .. {values.size - 1})")
    k = sel.size
    true = -np.partition(-values, k - 1)[:k]
    true.sort()
    true = true[::-1]
    gap = true - values[sel]
    err = np.abs(gap)
    return TopKErrors(linf=int(err.max()), l1=int(err.sum()),
                      k_relative=int(np.max(true[-1] - values[sel])),
                      linf_index=int(np.argmax(err)))
