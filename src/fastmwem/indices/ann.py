"""FAISS and hnswlib adapters (optional extra ``ann``) and the MIPS to nearest-neighbour reduction.

Only ``faiss:Flat`` (inner product) is exact: its float32 scan is refined to a true top-k like
``FlatIndex``. IVF, HNSW and hnswlib graphs are heuristics with no certified bound: on random 0/1
keys they reach a recall@k of 0.2-0.75 (lazy-exponential-mechanism spec, s.g), so they report
``exact = False`` and ``certified_gap = None``, and the lazy exponential mechanism runs over them
only when the caller opts out of the exact guarantee. Every adapter keeps an exact copy of the
keys (bit-packed when they are 0/1) for ``score`` and rescores what the graph returns.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import tempfile
from types import ModuleType

import numpy as np

from fastmwem._validation import check_int
from fastmwem.indices._checks import check_dimension, check_keys, real_matrix, row_blocks
from fastmwem.indices._common import IndexBase
from fastmwem.indices._topk import (
    U32,
    U64,
    best_k,
    gamma,
    holder_bound,
    pad_results,
    update_norms,
)
from fastmwem.indices.bitpacked import BitPackedIndex
from fastmwem.indices.flat import FlatIndex

__all__ = ["FaissIndex", "HnswlibIndex", "mips_to_l2", "mips_query_to_l2", "require_ann"]

# Keys added per call to the underlying library, so a long build can show progress.
_ADD_CHUNK = 20_000
# Keys an IVF index is trained on, at most (an evenly strided sample of the first batch).
_TRAIN_SAMPLE = 100_000


def require_ann(module: str) -> ModuleType:
    """Import ``faiss`` or ``hnswlib``, naming the extra to install when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"the {module} index needs the optional extra 'ann': "
                          f'pip install "fastmwem[ann]"') from None


def mips_to_l2(keys: object, max_norm: float | None = None) -> tuple[np.ndarray, float]:
    """Neyshabur-Srebro reduction (fast-mwem.txt App. E): keys ``x -> [x, sqrt(M^2 - |x|^2)]``.

    With queries mapped by :func:`mips_query_to_l2` (``v -> [v, 0]``),
    ``|x' - v'|^2 = M^2 + |v|^2 - 2 <x, v>``, so the nearest keys in L2 are the largest inner
    products. ``M`` (``max_norm``) must bound every key's L2 norm; by default it is the largest.

    Returns:
        The augmented keys (float64, one more column) and ``M``.
    """
    arr = check_keys(keys, None).astype(np.float64, copy=False)
    norms2 = (arr * arr).sum(axis=1)
    top = math.sqrt(float(norms2.max()))
    bound = top if max_norm is None else float(max_norm)
    if not (math.isfinite(bound) and bound >= top):
        raise ValueError(f"max_norm must be finite and >= the largest key norm {top}, "
                         f"got {max_norm}")
    extra = np.sqrt(np.maximum(bound * bound - norms2, 0.0))
    return np.hstack([arr, extra[:, None]]), bound


def mips_query_to_l2(queries: object) -> np.ndarray:
    """Queries for :func:`mips_to_l2` keys: a zero appended to each row."""
    arr = real_matrix(queries, "queries").astype(np.float64, copy=False)
    arr = np.atleast_2d(arr)
    return np.hstack([arr, np.zeros((arr.shape[0], 1))])


def _is_binary(arr: np.ndarray) -> bool:
    return arr.dtype == np.bool_ or all(bool(np.all((block == 0) | (block == 1)))
                                        for _, block in row_blocks(arr))


class _AdapterBase(IndexBase):
    """An ANN library index plus an exact key store (bit-packed for 0/1 keys) for ``score``."""

    exact = False
    certified_gap: float | None = None

    def __init__(self, dimension: int, *, private: bool, progress: bool) -> None:
        super().__init__(check_dimension(dimension), private=private)
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be a bool, got {type(progress).__name__}")
        self.progress = progress
        self._store: FlatIndex | BitPackedIndex | None = None

    @property
    def n_keys(self) -> int:
        return 0 if self._store is None else self._store.n_keys

    def _keep(self, arr: np.ndarray) -> None:
        if self._store is None:
            self._store = (BitPackedIndex(self.dimension, private=self.private)
                           if _is_binary(arr) else FlatIndex(self.dimension, private=self.private))
        if isinstance(self._store, BitPackedIndex) and not _is_binary(arr):
            dense = FlatIndex(self.dimension, private=self.private)
            dense.add(np.unpackbits(self._store.packed, axis=1, count=self.dimension))
            self._store = dense
        self._store.add(arr)

    def _add_in_chunks(self, vectors: np.ndarray, add_chunk, label: str) -> None:
        label = f"building {label}" if self.progress else None
        for start, chunk in row_blocks(vectors, _ADD_CHUNK, progress=label):
            add_chunk(chunk, start)

    def _rescored(self, ids: np.ndarray, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        ids = np.unique(ids[ids >= 0]).astype(np.int64)
        return best_k(ids, self._store._exact(ids, v), k)

    def score(self, ids: object, query: object) -> np.ndarray:
        """Exact float64 inner products of the keys ``ids`` with ``query``."""
        idx, vec = self._check_score(ids, query)
        return self._store._exact(idx, vec)

    def _store_payload(self) -> dict[str, np.ndarray]:
        return {"store_kind": np.array(self._store.kind),
                **{f"store_{k}": v for k, v in self._store._payload().items()}}

    def _restore(self, payload: dict[str, np.ndarray]) -> None:
        inner = {k[len("store_"):]: v for k, v in payload.items()
                 if k.startswith("store_") and k != "store_kind"}
        cls = BitPackedIndex if str(payload["store_kind"]) == "bitpacked" else FlatIndex
        self._store = cls.from_payload(self.dimension, inner, private=self.private)


class FaissIndex(_AdapterBase):
    """A FAISS index built from a factory string (``"Flat"``, ``"IVF1024,Flat"``, ``"HNSW32"``...).

    ``"Flat"`` with the inner-product metric is exact: it retrieves deeper than ``k`` until every
    key outside the retrieved set is provably more than twice the float32 rounding bound below
    the k-th score, then rescores exactly. Every other factory string is approximate
    (``exact = False``, no certificate). IVF indices are trained on the first batch of keys.

    Args:
        factory: a ``faiss.index_factory`` string.
        dimension: key length.
        metric: ``"ip"`` (inner product, native) or ``"l2"`` (keys and queries pass through
            :func:`mips_to_l2`, for L2-only structures).
        max_norm: for ``metric="l2"``, a bound on every key's L2 norm (default: the largest key
            norm of the first ``add``; later keys must not exceed it).
        params: FAISS parameters such as ``{"nprobe": 64}``, ``{"efSearch": 256}`` or
            ``{"efConstruction": 100}`` (applied before keys are added).
        private: the keys are private (``save`` then refuses).
        progress: show a progress bar on stderr for builds longer than two seconds.
        threads: OpenMP threads of a search (default: faiss's, every core). A single query
            gains little from several threads and, on a busy machine, loses a lot.
    """

    kind = "faiss"

    def __init__(self, factory: str, dimension: int, *, metric: str = "ip",
                 max_norm: float | None = None, params: dict[str, float] | None = None,
                 private: bool = False, progress: bool = True, threads: int | None = None) -> None:
        super().__init__(dimension, private=private, progress=progress)
        faiss = require_ann("faiss")
        self._faiss = faiss
        self.threads = None if threads is None else check_int(threads, "threads", minimum=1)
        if not isinstance(factory, str) or not factory:
            raise ValueError(f"factory must be a faiss index_factory string, got {factory!r}")
        if metric not in ("ip", "l2"):
            raise ValueError(f"metric must be 'ip' or 'l2', got {metric!r}")
        self.factory, self.metric, self.max_norm = factory, metric, max_norm
        self.params = dict(params or {})
        width = self.dimension + (metric == "l2")
        faiss_metric = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
        try:
            self._index = faiss.index_factory(width, factory, faiss_metric)
        except RuntimeError as exc:
            raise ValueError(f"factory {factory!r} is not a valid faiss index string: "
                             f"{str(exc).splitlines()[-1]}") from None
        self._apply_params(faiss)
        inner = faiss.downcast_index(self._index)
        self.exact = metric == "ip" and type(inner) in (faiss.IndexFlat, faiss.IndexFlatIP)
        self.certified_gap = 0.0 if self.exact else None
        self._norms = (0.0, 0.0, 0.0)

    def _apply_params(self, faiss: ModuleType) -> None:
        inner = faiss.downcast_index(self._index)
        space = faiss.ParameterSpace()
        for name, value in self.params.items():
            if name == "efConstruction" and hasattr(inner, "hnsw"):
                inner.hnsw.efConstruction = int(value)
                continue
            try:
                space.set_index_parameter(self._index, name, value)
            except RuntimeError:
                raise ValueError(f"params: faiss index {self.factory!r} has no parameter "
                                 f"{name!r}") from None

    def add(self, keys: object) -> None:
        """Append keys; the first call trains the index if it needs training."""
        arr = check_keys(keys, self.dimension)
        if self.metric == "l2" and self.max_norm is None:
            self.max_norm = update_norms((0.0, 0.0, 0.0), arr)[1]
        if not self._index.is_trained:
            # A strided sample is plenty for k-means (faiss itself samples 256 keys per list).
            sample = arr[::max(1, arr.shape[0] // _TRAIN_SAMPLE)]
            try:
                self._index.train(self._vectors(sample))
            except RuntimeError as exc:
                raise ValueError(f"cannot train faiss index {self.factory!r} on "
                                 f"{sample.shape[0]} keys (IVF needs at least as many keys as "
                                 f"lists): {str(exc).splitlines()[-1]}") from None
        self._add_in_chunks(arr, lambda chunk, _: self._index.add(self._vectors(chunk)),
                            f"faiss {self.factory}")
        self._norms = update_norms(self._norms, arr)
        self._keep(arr)

    def _vectors(self, keys: np.ndarray) -> np.ndarray:
        """Keys as faiss stores them: float32, through the L2 reduction for ``metric="l2"``."""
        if self.metric == "l2":
            keys = mips_to_l2(keys, self.max_norm)[0]
        return np.ascontiguousarray(keys, dtype=np.float32)

    def _query(self, v: np.ndarray) -> np.ndarray:
        row = mips_query_to_l2(v[None, :])[0] if self.metric == "l2" else v
        return np.ascontiguousarray(row[None, :], dtype=np.float32)

    def _exact_top(self, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.n_keys
        top = float(np.abs(v).max())
        scaled = np.ldexp(v, -(math.frexp(top)[1] if top > 0 else 0))
        spread = holder_bound(self._norms, scaled)
        # Rounding the keys and the query to float32 and the float32 scan (gamma_{d+3}), entries
        # below the float32 normal range, and the float64 rescoring.
        error = (gamma(self.dimension + 3, U32) + gamma(self.dimension + 1, U64)) * spread \
            + (self._norms[0] + self.dimension) * 2.0**-125
        window = 2.0 * error * (1.0 + 1e-9)
        depth = min(n, k + max(16, k // 4))
        query = self._query(scaled)
        while True:
            approx, ids = self._index.search(query, depth)
            approx, ids = approx[0].astype(np.float64), ids[0]
            threshold = approx[min(k, ids.size) - 1] - window
            if depth >= n or approx[-1] < threshold:
                cand = ids[(approx >= threshold) & (ids >= 0)]
                return best_k(cand, self._store._exact(cand, v), k)
            depth = min(n, 4 * depth)

    def search(self, queries: object, k: object) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` by inner product (exact for Flat; for other indices the exact scores of what
        the index returns, best first)."""
        qs, kk = self._check_search(queries, k)
        if self.n_keys == 0:
            return pad_results([(np.empty(0), np.empty(0, np.int64))] * qs.shape[0], kk)
        before = self._faiss.omp_get_max_threads()
        if self.threads is not None:
            self._faiss.omp_set_num_threads(self.threads)
        try:
            rows = []
            for v in qs:
                if self.exact:
                    rows.append(self._exact_top(v, kk))
                else:
                    _, ids = self._index.search(self._query(v), min(kk, self.n_keys))
                    rows.append(self._rescored(ids[0], v, kk))
        finally:
            self._faiss.omp_set_num_threads(before)
        return pad_results(rows, kk)

    def _payload(self) -> dict[str, np.ndarray]:
        faiss = require_ann("faiss")
        meta = {"factory": self.factory, "metric": self.metric, "max_norm": self.max_norm,
                "params": self.params, "norms": list(self._norms)}
        return {"faiss": faiss.serialize_index(self._index), "meta": np.array(json.dumps(meta)),
                **self._store_payload()}

    @classmethod
    def from_payload(cls, dimension: int, payload: dict[str, np.ndarray], *,
                     private: bool = False, progress: bool = True,
                     threads: int | None = None) -> FaissIndex:
        faiss = require_ann("faiss")
        meta = json.loads(str(payload["meta"]))
        index = cls(meta["factory"], dimension, metric=meta["metric"], max_norm=meta["max_norm"],
                    params=meta["params"], private=private, progress=progress, threads=threads)
        index._index = faiss.deserialize_index(np.asarray(payload["faiss"], dtype=np.uint8))
        index._norms = tuple(meta["norms"])
        index._restore(payload)
        return index


class HnswlibIndex(_AdapterBase):
    """An hnswlib HNSW graph in inner-product space: approximate, no certificate.

    Args:
        dimension: key length.
        M: graph degree.
        ef_construction: build-time beam width.
        ef: search beam width (at least ``k`` at every search; default ``k``).
        random_seed: hnswlib's seed for the levels of the graph (a public build choice, not a
            privacy resource).
        private: the keys are private (``save`` then refuses).
        progress: show a progress bar on stderr for builds longer than two seconds.
    """

    kind = "hnswlib"

    def __init__(self, dimension: int, *, M: int = 16, ef_construction: int = 100,
                 ef: int | None = None, random_seed: int = 100, private: bool = False,
                 progress: bool = True) -> None:
        super().__init__(dimension, private=private, progress=progress)
        hnswlib = require_ann("hnswlib")
        self.M, self.ef_construction, self.ef = M, ef_construction, ef
        self._index = hnswlib.Index(space="ip", dim=self.dimension)
        self._index.init_index(max_elements=1, ef_construction=ef_construction, M=M,
                               random_seed=random_seed)

    def add(self, keys: object) -> None:
        """Append keys (ids continue from ``n_keys``)."""
        arr = check_keys(keys, self.dimension)
        start = self.n_keys
        self._index.resize_index(start + arr.shape[0])

        def add_chunk(chunk: np.ndarray, offset: int) -> None:
            ids = np.arange(start + offset, start + offset + chunk.shape[0])
            self._index.add_items(np.ascontiguousarray(chunk, dtype=np.float32), ids)

        self._add_in_chunks(arr, add_chunk, "hnswlib")
        self._keep(arr)

    def search(self, queries: object, k: object) -> tuple[np.ndarray, np.ndarray]:
        """The exact scores of the keys the graph returns, best first (no top-k guarantee)."""
        qs, kk = self._check_search(queries, k)
        if self.n_keys == 0:
            return pad_results([(np.empty(0), np.empty(0, np.int64))] * qs.shape[0], kk)
        want = min(kk, self.n_keys)
        self._index.set_ef(max(self.ef or 0, want))
        rows = []
        for v in qs:
            try:
                labels, _ = self._index.knn_query(v[None, :].astype(np.float32), k=want)
            except RuntimeError:  # the graph could not reach ``want`` keys: return what it can
                self._index.set_ef(max(4 * want, self.n_keys))
                labels, _ = self._index.knn_query(v[None, :].astype(np.float32), k=want)
            rows.append(self._rescored(labels[0].astype(np.int64), v, kk))
        return pad_results(rows, kk)

    def _payload(self) -> dict[str, np.ndarray]:
        fd, tmp = tempfile.mkstemp(suffix=".hnsw")
        os.close(fd)
        try:
            self._index.save_index(tmp)
            with open(tmp, "rb") as handle:
                graph = np.frombuffer(handle.read(), dtype=np.uint8)
        finally:
            os.unlink(tmp)
        meta = {"M": self.M, "ef_construction": self.ef_construction, "ef": self.ef}
        return {"hnsw": graph, "meta": np.array(json.dumps(meta)), **self._store_payload()}

    @classmethod
    def from_payload(cls, dimension: int, payload: dict[str, np.ndarray], *,
                     private: bool = False, progress: bool = True) -> HnswlibIndex:
        meta = json.loads(str(payload["meta"]))
        index = cls(dimension, M=meta["M"], ef_construction=meta["ef_construction"],
                    ef=meta["ef"], private=private, progress=progress)
        index._restore(payload)
        fd, tmp = tempfile.mkstemp(suffix=".hnsw")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(np.asarray(payload["hnsw"], dtype=np.uint8).tobytes())
            index._index.load_index(tmp, max_elements=index.n_keys)
        finally:
            os.unlink(tmp)
        return index
