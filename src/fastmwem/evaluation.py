"""Non-private evaluation of synthetic data against the real data.

These numbers are computed from the private data and are *not* differentially private. Use them
in experiments and benchmarks; a report that contains them must be marked as not private.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from fastmwem.data.domain import check_dense
from fastmwem.workloads.base import LinearWorkload, check_histogram

__all__ = ["workload_error", "answer_error", "relative_entropy", "relative_entropy_of_records",
           "RecordCounts"]


def relative_entropy(true_histogram: np.ndarray, synthetic_histogram: np.ndarray) -> float:
    """``RE(B || A) = sum_x B(x) log(B(x) / A(x)) / n`` on normalised histograms (MWEM paper, arXiv:1012.4763, s.3.2).

    Infinite when the synthetic data gives zero mass to a cell the real data uses.

    >>> relative_entropy(np.array([1.0, 1.0]), np.array([2.0, 2.0]))
    0.0
    """
    b = np.asarray(true_histogram, dtype=np.float64)
    a = np.asarray(synthetic_histogram, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"histograms must have the same shape, got {b.shape} and {a.shape}")
    p, q = b / b.sum(), a / a.sum()
    used = p > 0
    if np.any(q[used] == 0):
        return float("inf")
    return float(np.sum(p[used] * (np.log(p[used]) - np.log(q[used]))))


def relative_entropy_of_records(records: np.ndarray,
                                log_probability: Callable[[np.ndarray], ArrayLike]) -> float:
    """``RE(B || A)`` for ``B`` the empirical law of ``records`` and ``A`` given as log-densities.

    Only the distinct records are visited, so ``A`` may live on a domain far too large for a
    histogram: ``log_probability(codes)`` gives ``log A(x)`` for an ``(m, d)`` array of records.

    >>> relative_entropy_of_records(np.array([[0], [1]]), lambda x: np.log(np.full(len(x), 0.5)))
    0.0
    """
    rows, counts = np.unique(np.asarray(records), axis=0, return_counts=True)
    p = counts / counts.sum()
    log_q = np.asarray(log_probability(rows), dtype=np.float64)
    if np.any(np.isneginf(log_q)):
        return float("inf")
    return float(np.sum(p * (np.log(p) - log_q)))


def workload_error(true_histogram: np.ndarray, synthetic_histogram: np.ndarray,
                   workload: LinearWorkload) -> dict[str, float]:
    """Errors of the synthetic answers on normalised histograms (fractions of records).

    Returns ``mean_group_l1`` (the L1 distance within each group, e.g. between two normalised
    marginals, averaged over groups), ``max_group_l1``, ``max_abs_error`` (largest error of one
    query) and ``mean_abs_error``.
    """
    b = check_histogram(true_histogram, workload.domain, "true_histogram")
    a = check_histogram(synthetic_histogram, workload.domain, "synthetic_histogram")
    return answer_error(workload.answer(b / b.sum()), workload.answer(a / a.sum()), workload)


def answer_error(true_answers: np.ndarray, synthetic_answers: np.ndarray,
                 workload: LinearWorkload) -> dict[str, float]:
    """:func:`workload_error` from the answers on normalised data (fractions of records).

    For synthetic data without a dense histogram (a factored model), whose answers come from
    inference, and real data read as marginals.
    """
    true = np.asarray(true_answers, dtype=np.float64)
    synthetic = np.asarray(synthetic_answers, dtype=np.float64)
    if true.shape != (workload.n_queries,) or synthetic.shape != true.shape:
        raise ValueError(f"answers must have shape ({workload.n_queries},), got {true.shape} "
                         f"and {synthetic.shape}")
    errors = np.abs(synthetic - true)
    per_group = np.add.reduceat(errors, workload.group_offsets[:-1])
    return {
        "mean_group_l1": float(per_group.mean()),
        "max_group_l1": float(per_group.max()),
        "max_abs_error": float(errors.max()),
        "mean_abs_error": float(errors.mean()),
    }


class RecordCounts:
    """A workload's answers on records seen block by block (records written as a stream).

    Keeps the counts of each distinct marginal the workload's groups read (or, for a workload
    without marginal structure, on a dense domain, the histogram), so that records streamed to
    a file need not be held to be scored.

    >>> from fastmwem.data import Domain
    >>> from fastmwem.workloads import Marginals
    >>> w = Marginals.all_kway(Domain(["a", "b"], [2, 3]), 1)
    >>> counts = RecordCounts(w)
    >>> counts.add(np.array([[0, 2], [1, 2]]))
    >>> counts.answers().tolist()
    [0.5, 0.5, 0.0, 0.0, 1.0]
    """

    def __init__(self, workload: LinearWorkload) -> None:
        self.workload = workload
        self.rows = 0
        shape = workload.domain.shape
        own = getattr(workload, "group_attributes", None)
        axes = None if own is None else [own(g) for g in range(int(workload.n_groups))]
        if axes is None or any(a is None for a in axes):
            check_dense(workload.domain.size, "counting records without marginal structure "
                        "needs a histogram: the domain")
            self._axes_of = None
            self._tables = {(): np.zeros(workload.domain.size)}
            self._shapes = {(): (workload.domain.size,)}
            self._axes = {(): tuple(range(len(shape)))}
        else:
            self._axes_of = [tuple(a) for a in axes]
            distinct = sorted(set(self._axes_of))
            self._shapes = {a: tuple(shape[i] for i in a) for a in distinct}
            self._tables = {a: np.zeros(int(np.prod(self._shapes[a]))) for a in distinct}
            self._axes = {a: a for a in distinct}

    def add(self, codes: np.ndarray) -> None:
        """Count a block of records (rows of integer codes in the domain's column order)."""
        codes = np.asarray(codes)
        shape = self.workload.domain.shape
        for key, table in self._tables.items():
            axes = self._axes[key]
            cells = np.ravel_multi_index(tuple(codes[:, a] for a in axes),
                                         [shape[a] for a in axes])
            table += np.bincount(cells, minlength=table.size)
        self.rows += len(codes)

    def answers(self) -> np.ndarray:
        """The workload's answers on the records counted, as fractions of them."""
        rows = max(self.rows, 1)
        if self._axes_of is None:
            return self.workload.answer(self._tables[()]) / rows
        out = np.empty(int(self.workload.n_queries))
        offsets = np.asarray(self.workload.group_offsets)
        for g, axes in enumerate(self._axes_of):
            table = self._tables[axes].reshape(self._shapes[axes])
            out[offsets[g]:offsets[g + 1]] = self.workload.answer_on_marginal(g, table)
        return out / rows
