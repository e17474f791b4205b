"""Exact top-k oracles over a workload's queries: the helpers every workload oracle shares.

A workload oracle meets the ``TopKOracle`` protocol of ``fastmwem.indices`` structurally (this
module never imports it): its keys are the workload's query vectors, so ``search(v, k)`` returns
the ``k`` queries with the largest answers on the vector ``v`` and ``score(ids, v)`` the answers
of chosen queries. All oracles here are exact (``certified_gap = 0.0``).

Scores come from the workload's own arithmetic (prefix sums, transforms, byte tables), so they
agree with ``row(q) @ v`` up to floating-point rounding; ``score`` repeats the arithmetic of
``search`` wherever it can (a cached answer vector, the same prefix sums), so a tail score the
lazy exponential mechanism asks for is never rounded differently from the top-k it was compared
with.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["check_k", "check_query_vectors", "check_query_ids", "top_k", "ExactOracle",
           "ScanOracle", "ConcatenatedOracle"]

#: Most answers (float64 entries) a ``ScanOracle`` keeps from its last search for ``score``.
MAX_CACHED_SCORES = 2**23


def check_k(k: object) -> int:
    """Return ``k`` as an int after checking it is a positive integer (not a bool)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be a positive integer, got {type(k).__name__}: {k!r}")
    if k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def check_query_vectors(queries: object, dimension: int, name: str = "queries") -> np.ndarray:
    """Return ``queries`` as a finite float64 array of shape ``(n, dimension)``.

    A 1-D vector of length ``dimension`` is taken as one query.
    """
    if np.iscomplexobj(cast("npt.ArrayLike", queries)):  # anything: it is being checked
        raise TypeError(f"{name} must be real, got complex values")
    try:
        arr = np.asarray(queries, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real array of shape (n, {dimension}): {exc}") from None
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != dimension or arr.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n, {dimension}) with n >= 1, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def check_query_ids(ids: object, n_queries: int, name: str = "ids") -> np.ndarray:
    """Return ``ids`` as an int64 array (shape kept) of query indices in ``0..n_queries - 1``."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{name} must be an integer array of query indices")
    arr = np.asarray(ids)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(f"{name} must hold integer query indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n_queries):
        bad = int(arr.reshape(-1)[np.argmax((arr.reshape(-1) < 0) | (arr.reshape(-1) >= n_queries))])
        raise ValueError(f"{name} must lie in 0..{n_queries - 1}, got {bad}")
    return arr


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest of ``scores``, best first, padded with ``-inf`` / ``-1`` to length ``k``."""
    n = scores.size
    kk = min(k, n)
    if kk < n:
        ids = np.argpartition(-scores, kk - 1)[:kk]
    else:
        ids = np.arange(n)
    ids = ids[np.argsort(-scores[ids], kind="stable")]
    out_s = np.full(k, -np.inf)
    out_i = np.full(k, -1, dtype=np.int64)
    out_s[:kk] = scores[ids]
    out_i[:kk] = ids
    return out_s, out_i


class ExactOracle:
    """Shared shape of the workload oracles: validation, the batch loop and the padding.

    Subclasses implement ``_search_one(vector, k)`` (a best-first top-k of at most ``k``
    entries, already padded or not) and ``_score(ids, vector)`` on validated input.
    """

    exact = True
    certified_gap = 0.0

    def __init__(self, n_keys: int, dimension: int) -> None:
        self._n_keys = int(n_keys)
        self._dimension = int(dimension)

    @property
    def n_keys(self) -> int:
        """Number of keys: the workload's queries."""
        return self._n_keys

    @property
    def dimension(self) -> int:
        """Length of a key: the number of cells of the domain."""
        return self._dimension

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` keys for each row of ``queries``: ``(scores, ids)`` of shape ``(n, k)``."""
        kk = check_k(k)
        vectors = check_query_vectors(queries, self.dimension)
        scores = np.full((vectors.shape[0], kk), -np.inf)
        ids = np.full((vectors.shape[0], kk), -1, dtype=np.int64)
        for row, vector in enumerate(vectors):
            s, i = self._search_one(vector, kk)
            scores[row, :s.size] = s
            ids[row, :i.size] = i
        return scores, ids

    def score(self, ids: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Exact scores (answers on ``query``) of the keys ``ids``; float64 of ``ids``' shape."""
        chosen = check_query_ids(ids, self.n_keys)
        vector = check_query_vectors(query, self.dimension, name="query")
        if vector.shape[0] != 1:
            raise ValueError(f"query must be one vector of length {self.dimension}, got shape {vector.shape}")
        return self._score(chosen.reshape(-1), vector[0]).reshape(chosen.shape)

    def _search_one(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _score(self, ids: np.ndarray, vector: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class ScanOracle(ExactOracle):
    """Exact top-k by computing every score at once with a structured ``answer``, then a partition.

    This is the oracle of workloads whose ``answer`` is already far cheaper than ``m`` inner
    products (parities: one Walsh-Hadamard transform; marginals: one projection per marginal;
    random counting queries: the bit-packed byte-table scan; box ranges: prefix sums), and the
    exact baseline for the rest. The answers of the last search are kept (up to
    ``MAX_CACHED_SCORES`` entries) so that ``score`` on the same vector is a look-up.

    Args:
        n_keys, dimension: sizes of the key set.
        answer: ``vector -> scores of all n_keys keys`` (float64).
        answer_queries: ``(vector, ids) -> scores of the keys ids``.
    """

    def __init__(self, n_keys: int, dimension: int, answer: Callable[[np.ndarray], np.ndarray],
                 answer_queries: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
        super().__init__(n_keys, dimension)
        self._answer = answer
        self._answer_queries = answer_queries
        self._cache: list[tuple[np.ndarray, np.ndarray]] = []

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        self._cache = []
        return super().search(queries, k)

    def _search_one(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores = np.asarray(self._answer(vector), dtype=np.float64)
        if (len(self._cache) + 1) * scores.size <= MAX_CACHED_SCORES:
            self._cache.append((vector.copy(), scores))
        return top_k(scores, k)

    def _score(self, ids: np.ndarray, vector: np.ndarray) -> np.ndarray:
        # Compared by content, not identity: a caller may have changed its array in place.
        for cached_vector, scores in self._cache:
            if np.array_equal(cached_vector, vector):
                return scores[ids]
        return np.asarray(self._answer_queries(vector, ids), dtype=np.float64)


class ConcatenatedOracle(ExactOracle):
    """The oracles of consecutive key blocks as one: the top-k of each block, merged.

    The overall top-k lies within the union of the blocks' own top-k sets, so merging them is
    exact; block ``b``'s ids are shifted by the number of keys before it.
    """

    def __init__(self, parts: Sequence[ExactOracle]) -> None:
        dims = {int(p.dimension) for p in parts}
        if len(dims) != 1:
            raise ValueError(f"parts must share one dimension, got {sorted(dims)}")
        sizes = [int(p.n_keys) for p in parts]
        super().__init__(sum(sizes), dims.pop())
        self.parts = tuple(parts)
        self._starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        kk = check_k(k)
        vectors = check_query_vectors(queries, self.dimension)
        # The whole batch goes to each part at once, so a part caching its last search keeps
        # every row of it for ``score``.
        found = [p.search(vectors, kk) for p in self.parts]
        scores = np.concatenate([s for s, _ in found], axis=1)
        ids = np.concatenate([np.where(i >= 0, i + start, -1)
                              for (_, i), start in zip(found, self._starts[:-1])], axis=1)
        out_s = np.full((vectors.shape[0], kk), -np.inf)
        out_i = np.full((vectors.shape[0], kk), -1, dtype=np.int64)
        for row in range(vectors.shape[0]):
            real = ids[row] >= 0
            out_s[row], pos = top_k(scores[row, real], kk)
            out_i[row] = np.where(pos >= 0, ids[row, real][pos], -1)
        return out_s, out_i

    def _score(self, ids: np.ndarray, vector: np.ndarray) -> np.ndarray:
        part = np.searchsorted(self._starts, ids, side="right") - 1
        out = np.empty(ids.size)
        for p in np.unique(part):
            sel = part == p
            out[sel] = self.parts[p].score(ids[sel] - self._starts[p], vector)
        return out
