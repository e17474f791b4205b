"""What every index shares: the query loop, the exact-window search, saving to one .npz file."""

from __future__ import annotations

import abc
import os
import tempfile

import numpy as np

from fastmwem._files import replacement_mode
from fastmwem.indices._checks import check_ids, check_k, check_queries, check_save_path
from fastmwem.indices._topk import best_k, pad_results, window_candidates

__all__ = ["IndexBase", "ExactScanIndex", "FORMAT"]

#: Tag of the saved-index file format (an .npz archive).
FORMAT = "fastmwem-index-1"


class IndexBase(abc.ABC):
    """Key count, dimension, privacy flag, argument checks and saving for every index.

    Args:
        dimension: length of the keys and queries.
        private: the keys are private data. A private index is never written to disk
            (``save`` refuses), since a saved index would release the keys.
    """

    #: Registry name, as accepted by ``make_index``.
    kind: str = ""

    def __init__(self, dimension: int | None, *, private: bool = False) -> None:
        if not isinstance(private, bool):
            raise TypeError(f"private must be a bool, got {type(private).__name__}")
        self._dimension = dimension  # None: set by the first add (FlatIndex)
        self.private = private

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise ValueError("the index has no dimension yet: add keys first")
        return self._dimension

    @property
    @abc.abstractmethod
    def n_keys(self) -> int: ...

    def __len__(self) -> int:
        return self.n_keys

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_keys={self.n_keys}, dimension={self.dimension})"

    def _check_search(self, queries: object, k: object) -> tuple[np.ndarray, int]:
        kk = check_k(k)
        return check_queries(queries, self.dimension), kk

    def _check_score(self, ids: object, query: object) -> tuple[np.ndarray, np.ndarray]:
        vec = check_queries(query, self.dimension, name="query")
        if vec.shape[0] != 1:
            raise ValueError(f"query must be one vector of length {self.dimension}")
        return check_ids(ids, self.n_keys), vec[0]

    # -- saving ------------------------------------------------------------------------------
    @abc.abstractmethod
    def _payload(self) -> dict[str, np.ndarray]:
        """The arrays that rebuild this index (see ``from_archive``)."""

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the index to one ``.npz`` file (public keys only), atomically.

        Raises:
            ValueError: the index holds private keys, the path's folder is missing, or the file
                exists and ``overwrite`` is false.
        """
        target = check_save_path(path, overwrite)
        if self.private:
            raise ValueError("this index holds private keys (private=True): saving it would "
                             "release them, so save() refuses")
        if self.n_keys == 0:
            raise ValueError("the index is empty: add keys before saving")
        arrays = {"format": np.array(FORMAT), "kind": np.array(self.kind),
                  "dimension": np.array(self.dimension), **self._payload()}
        folder = os.path.dirname(os.path.abspath(target))
        fd, tmp = tempfile.mkstemp(prefix=".index-", suffix=".npz.tmp", dir=folder)
        try:
            os.fchmod(fd, replacement_mode(target))
            with os.fdopen(fd, "wb") as handle:
                # numpy's hints fear a member named allow_pickle; none is
                np.savez(handle, **arrays)  # type: ignore[arg-type]
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


class ExactScanIndex(IndexBase):
    """An exact index: a bounded-error scan of every key, then exact rescoring of a window.

    Subclasses give ``_scan(v, absolute) -> (approximate scores, window)`` where every exact
    score ``a_i`` (as ``_exact`` computes it) satisfies ``|approx_i - a_i| <= window / 2``, in any
    units shared by both returned values (with ``absolute``, the approximations of ``|a_i|``),
    and ``_exact(ids, v)``, the float64 scores ``score`` returns. Searching by ``|score|``
    (``search_abs``) costs one scan, like ``search``.
    """

    exact = True
    certified_gap = 0.0

    @abc.abstractmethod
    def _scan(self, v: np.ndarray, absolute: bool) -> tuple[np.ndarray, float]: ...

    @abc.abstractmethod
    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray: ...

    def _top(self, v: np.ndarray, k: int, absolute: bool) -> tuple[np.ndarray, np.ndarray]:
        if self.n_keys == 0:
            return np.empty(0), np.empty(0, dtype=np.int64)
        approx, window = self._scan(v, absolute)
        cand = window_candidates(approx, k, window)
        exact = self._exact(cand, v)
        return best_k(cand, exact, k, key=np.abs(exact) if absolute else None)

    def search(self, queries: object, k: object) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` by inner product for each query row (float64 scores, best first)."""
        qs, kk = self._check_search(queries, k)
        return pad_results([self._top(v, kk, False) for v in qs], kk)

    def search_abs(self, queries: object, k: object) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` by ``|inner product|``; the returned scores keep their sign."""
        qs, kk = self._check_search(queries, k)
        return pad_results([self._top(v, kk, True) for v in qs], kk)

    def score(self, ids: object, query: object) -> np.ndarray:
        """Exact float64 inner products of the keys ``ids`` with ``query``."""
        idx, vec = self._check_score(ids, query)
        return self._exact(idx, vec)
