"""A workload given as an explicit dense or sparse query matrix."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from fastmwem._validation import check_int
from fastmwem.data.domain import Domain
from fastmwem.workloads._common import (
    check_domain,
    check_inplace_histogram,
    check_log_factors,
    flat_histogram,
)
from fastmwem.workloads.base import MAX_QUERY_VALUE, LinearWorkload, check_histogram

if TYPE_CHECKING:
    import scipy.sparse as sp


def _sparse() -> ModuleType:
    """scipy.sparse, imported on first use: it adds 0.3 s to every command-line start."""
    import scipy.sparse

    return scipy.sparse

__all__ = ["MatrixWorkload"]


def _check_offsets(groups: object, n_queries: int) -> np.ndarray:
    if isinstance(groups, (str, bytes)):
        raise TypeError("groups must be a sequence of integer offsets")
    arr = np.asarray(groups)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        if arr.size == 0 and arr.dtype == np.float64:
            raise ValueError("groups must hold at least the offsets 0 and n_queries")
        raise TypeError(f"groups must hold integer offsets, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError("groups must be a 1-D array of offsets [0, ..., n_queries]")
    if arr[0] != 0 or arr[-1] != n_queries:
        raise ValueError(
            f"groups must start at 0 and end at n_queries = {n_queries}, got {int(arr[0])} .. {int(arr[-1])}"
        )
    if np.any(np.diff(arr) <= 0):
        i = int(np.argmax(np.diff(arr) <= 0))
        raise ValueError(f"groups must be strictly increasing (no empty group): groups[{i}:{i + 2}] = {arr[i:i + 2].tolist()}")
    return arr.astype(np.int64)


# Dense checks go through the matrix in row chunks of about this many entries, so that |matrix|
# and the finiteness mask never exist as whole copies of a large matrix.
_CHUNK_ENTRIES = 1 << 21


def _chunks(values: np.ndarray) -> Iterator[np.ndarray]:
    # row blocks (or the sparse data vector whole)
    if values.ndim != 2:
        yield values
        return
    step = max(1, _CHUNK_ENTRIES // max(values.shape[1], 1))
    for i in range(0, values.shape[0], step):
        yield values[i:i + step]


def _scan_entries(values: np.ndarray) -> tuple[float, bool]:
    """The largest ``|entry|`` and whether all entries are >= 0, after checking the entries.

    Entries must be finite and within ``+-MAX_QUERY_VALUE``, a block of rows at a time.
    """
    largest, nonnegative = 0.0, True
    for block in _chunks(values):
        if not block.size:
            continue
        if not np.all(np.isfinite(block)):
            raise ValueError("matrix entries must be finite")
        largest = max(largest, float(np.abs(block).max()))
        nonnegative = nonnegative and float(block.min()) >= 0
    if largest > MAX_QUERY_VALUE:
        raise ValueError(
            f"matrix entries must lie within +-{MAX_QUERY_VALUE:g}, so that answers cannot "
            f"overflow; the largest is {largest:.4g}: rescale the queries"
        )
    return largest, nonnegative


def _dense_group_sensitivity(mat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``max_x sum_{q in g} |mat[q, x]|`` for every group, a few rows at a time."""
    step = max(1, _CHUNK_ENTRIES // max(mat.shape[1], 1))
    if offsets.size - 1 == mat.shape[0]:  # one row per group
        return np.concatenate([np.abs(mat[i:i + step]).max(axis=1) for i in range(0, mat.shape[0], step)])
    out = np.empty(offsets.size - 1)
    for g in range(offsets.size - 1):
        start, stop = int(offsets[g]), int(offsets[g + 1])
        sums = np.zeros(mat.shape[1])
        for i in range(start, stop, step):
            sums += np.abs(mat[i:min(i + step, stop)]).sum(axis=0)
        out[g] = sums.max()
    return out


class MatrixWorkload(LinearWorkload):
    """Queries given as the rows of an explicit ``n_queries x domain.size`` matrix.

    A scipy.sparse matrix stays sparse (stored as CSR); a dense one is stored as a C-contiguous
    float64 array. Entries must be finite reals within ``+-MAX_QUERY_VALUE`` (1e200); query ``i``
    is ``q_i(x) = matrix[i, x]``.

    Sensitivities, for the add/remove-one-record relation: ``query_sensitivity`` is the largest
    ``|entry|``; the L1 sensitivity of a group is the largest column sum of ``|entries|`` over
    its rows.

    Args:
        domain: the domain; the matrix has ``domain.size`` columns in C order over its shape.
        matrix: a 2-D numpy array (or array-like) or a scipy.sparse matrix/array.
        groups: optional group offsets ``[0, o_1, ..., n_queries]`` (strictly increasing);
            group ``g`` is rows ``groups[g]:groups[g + 1]``. ``None``: each row is a group.

    >>> d = Domain(["a"], [3])
    >>> w = MatrixWorkload(d, [[1, 1, 0], [0, 2, -1]], groups=[0, 2])
    >>> w.answer(np.array([1.0, 2.0, 3.0])).tolist()
    [3.0, 1.0]
    >>> float(w.query_sensitivity), w.group_sensitivity.tolist()
    (2.0, [3.0])
    """

    def __init__(self, domain: Domain, matrix: object, groups: object = None) -> None:
        self.domain = check_domain(domain)
        if _sparse().issparse(matrix):
            dtype = cast(Any, matrix).dtype  # a scipy.sparse matrix (scipy has no type hints)
            if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)
                    or dtype == np.bool_):
                raise TypeError(f"matrix must hold real numbers, got dtype {dtype}")
            mat = _sparse().csr_array(matrix, dtype=np.float64)
            mat.sum_duplicates()
            values = mat.data
            self.sparse = True
        else:
            if isinstance(matrix, (str, bytes)) or matrix is None:
                raise TypeError(f"matrix must be a 2-D array or a scipy.sparse matrix, got {type(matrix).__name__}")
            try:
                raw = np.asarray(matrix)
            except ValueError as exc:
                raise ValueError(f"matrix must be a 2-D array of real numbers: {exc}") from None
            if raw.dtype == object or not (
                np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)
                or raw.dtype == np.bool_
            ):
                raise TypeError(f"matrix must hold real numbers, got dtype {raw.dtype}")
            mat = np.ascontiguousarray(raw, dtype=np.float64)
            values = mat
            self.sparse = False
        if mat.ndim != 2:
            raise ValueError(f"matrix must be 2-D, got {mat.ndim} dimensions")
        if mat.shape[1] != domain.size:
            raise ValueError(
                f"matrix must have domain.size = {domain.size} columns, got shape {mat.shape}"
            )
        if mat.shape[0] < 1:
            raise ValueError("matrix must have at least one row (query)")
        self._query_sensitivity, self.nonnegative_queries = _scan_entries(values)
        self.matrix = mat
        n = int(mat.shape[0])
        self._offsets = np.arange(n + 1, dtype=np.int64) if groups is None else _check_offsets(groups, n)
        if self.sparse:
            absm = abs(mat)
            if groups is None:
                sens = np.asarray(absm.max(axis=1).toarray()).reshape(-1)
            else:
                # Sum |rows| within each group with a sparse 0/1 group-indicator product.
                sizes = np.diff(self._offsets)
                indicator = _sparse().csr_array(
                    (np.ones(n), np.arange(n), np.concatenate([[0], np.cumsum(sizes)])),
                    shape=(sizes.size, n),
                )
                sens = np.asarray(_sparse().csr_array(indicator @ absm).max(axis=1).toarray()).reshape(-1)
        else:
            sens = _dense_group_sensitivity(mat, self._offsets)
        self._group_sens = sens.astype(np.float64)
        self._group_cache: dict[int, tuple[sp.csr_array, sp.csr_array]] = {}

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def group_offsets(self) -> np.ndarray:
        return self._offsets

    @property
    def query_sensitivity(self) -> float:
        return self._query_sensitivity

    @property
    def group_sensitivity(self) -> np.ndarray:
        return self._group_sens.copy()

    def describe(self, query: int) -> str:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        return f"matrix row {q}"

    def describe_group(self, group: int) -> str:
        rows = self.group_queries(group)
        if rows.stop - rows.start == 1:
            return f"matrix row {rows.start}"
        return f"matrix rows {rows.start}..{rows.stop - 1}"

    # -- answers -----------------------------------------------------------------------------
    def answer(self, histogram: np.ndarray) -> np.ndarray:
        hist = check_histogram(histogram, self.domain)
        return np.asarray(self.matrix @ hist, dtype=np.float64).reshape(-1)

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        rows = self.group_queries(group)
        hist = flat_histogram(histogram, self.domain)
        if self.sparse:
            return np.asarray(self._sparse_group(group)[0] @ hist, dtype=np.float64).reshape(-1)
        # Per-update hot path: numpy's own loop instead of BLAS gemv, whose worker threads add
        # millisecond stalls to small products on a busy machine.
        return np.einsum("ij,j->i", self.matrix[rows], hist)

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if self.sparse:
            return np.asarray(self.matrix[ids] @ hist, dtype=np.float64).reshape(-1)
        step = max(1, _CHUNK_ENTRIES // self.matrix.shape[1])
        return np.concatenate([np.einsum("ij,j->i", self.matrix[ids[i:i + step]], hist)
                               for i in range(0, ids.size, step)])

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        w = self._check_weights(weights)
        if not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite")
        return np.asarray(self.matrix.T @ w, dtype=np.float64).reshape(-1)

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        rows = self.group_queries(group)
        flat = check_inplace_histogram(histogram, self.domain)
        lf = check_log_factors(log_factors, rows.stop - rows.start)
        if self.sparse:
            exponent = np.asarray(self._sparse_group(group)[1] @ lf, dtype=np.float64).reshape(-1)
        else:
            exponent = np.einsum("ij,i->j", self.matrix[rows], lf)
        flat *= np.exp(exponent)

    def _sparse_group(self, group: int) -> tuple[sp.csr_array, sp.csr_array]:
        """The group's rows and their transpose as CSR, cached: slicing a CSR matrix costs more
        than the product itself, and MWEM re-applies measured groups many times."""
        cached = self._group_cache.get(group)
        if cached is None:
            rows = self.group_queries(group)
            sub = _sparse().csr_array(self.matrix[rows])
            cached = (sub, _sparse().csr_array(sub.T))
            self._group_cache[group] = cached
        return cached

    def row(self, query: int) -> np.ndarray:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        if self.sparse:
            return self.matrix[[q]].toarray().reshape(-1)
        return self.matrix[q].copy()

    def dense(self) -> np.ndarray:
        if self.sparse:
            return self.matrix.toarray()
        return self.matrix.copy()
