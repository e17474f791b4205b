"""FAISS and hnswlib adapters (optional extra ``ann``) and the MIPS to nearest-neighbour reduction.

Only ``faiss:Flat`` (inner product) is exact: its float32 scan is refined to a true top-k like
``FlatIndex``. IVF, HNSW and hnswlib graphs are heuristics with no certified bound: on random 0/1
keys their recall@k stays far below 1 (0.19-0.59 in docs/fast-mwem.md, Fig. 3-4; Fast-MWEM is
Haris, Choi and Laksanawisit, arXiv:2602.03732), so they report
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
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from fastmwem._validation import check_int
from fastmwem.indices._ann_files import (
    FaissStructure,
    check_faiss_blob,
    check_hnswlib_blob,
    faiss_description,
    same_factory,
)
from fastmwem.indices._checks import check_dimension, check_keys, real_matrix, row_blocks
from fastmwem.indices._common import IndexBase
from fastmwem.indices._saved import IndexFileError, SavedArchive, check_text
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
    """Neyshabur-Srebro reduction (Fast-MWEM App. E): keys ``x -> [x, sqrt(M^2 - |x|^2)]``.

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

    def _stored(self) -> FlatIndex | BitPackedIndex:
        """The exact key store; an empty one before the first ``add``."""
        if self._store is None:
            return FlatIndex(self.dimension, private=self.private)
        return self._store

    def _add_in_chunks(self, vectors: np.ndarray, add_chunk: Callable[[np.ndarray, int], None],
                       label: str) -> None:
        desc = f"building {label}" if self.progress else None
        for start, chunk in row_blocks(vectors, _ADD_CHUNK, progress=desc):
            add_chunk(chunk, start)

    def _rescored(self, ids: np.ndarray, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        ids = np.unique(ids[ids >= 0]).astype(np.int64)
        return best_k(ids, self._stored()._exact(ids, v), k)

    def score(self, ids: object, query: object) -> np.ndarray:
        """Exact float64 inner products of the keys ``ids`` with ``query``."""
        idx, vec = self._check_score(ids, query)
        return self._stored()._exact(idx, vec)

    def _store_payload(self) -> dict[str, np.ndarray]:
        store = self._stored()
        return {"store_kind": np.array(store.kind),
                **{f"store_{k}": v for k, v in store._payload().items()}}


def _saved_store(dimension: int, archive: SavedArchive, graph: str,
                 private: bool) -> FlatIndex | BitPackedIndex:
    """The exact key store of a saved adapter; the archive must hold nothing else but ``graph``
    (the library's structure) and ``meta`` (its settings)."""
    kind = archive.text("store_kind")
    if kind not in ("flat", "bitpacked"):
        raise IndexFileError(f"its key store has an unknown kind {kind[:40]!r}")
    member = "store_keys" if kind == "flat" else "store_packed"
    archive.expect({"format", "kind", "dimension", graph, "meta", "store_kind", member})
    cls = FlatIndex if kind == "flat" else BitPackedIndex
    return cls.from_archive(dimension, archive, prefix="store_", private=private)


def _settings(archive: SavedArchive, names: tuple[str, ...]) -> dict[str, object]:
    """The JSON settings ``meta`` of a saved adapter, with exactly the keys ``names``."""
    try:
        meta = json.loads(archive.text("meta"))
    except (ValueError, RecursionError):
        raise IndexFileError("its settings are not valid JSON") from None
    if not isinstance(meta, dict) or not set(names) <= set(meta):
        raise IndexFileError(f"its settings must be a JSON object with {', '.join(names)}")
    return meta


def _setting_int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise IndexFileError(f"setting {name!r} must be an integer in {low}..{high}")
    return value


def _store_norms(store: FlatIndex | BitPackedIndex) -> tuple[float, float, float]:
    """The largest L1, L2 and Linf norms of the stored keys, computed (never read from a file:
    the exact faiss search's rounding window rests on them)."""
    if isinstance(store, FlatIndex):
        return store._norms
    norms = (0.0, 0.0, 0.0)
    packed = store.packed
    for _, block in row_blocks(packed):
        norms = update_norms(norms, np.unpackbits(block, axis=1, count=store.dimension))
    return norms


def _same_keys(store: FlatIndex | BitPackedIndex, vectors: np.ndarray | None) -> bool:
    """Whether ``vectors`` are the stored keys in float32, as the exact faiss search needs."""
    if vectors is None:  # a flat structure always has them
        return False
    keys = store._stored() if isinstance(store, FlatIndex) else store.packed
    for start, block in row_blocks(keys):
        if isinstance(store, BitPackedIndex):
            block = np.unpackbits(block, axis=1, count=store.dimension)
        if not np.array_equal(block.astype(np.float32), vectors[start:start + block.shape[0]]):
            return False
    return True


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
        if not isinstance(factory, str) or not factory:
            raise ValueError(f"factory must be a faiss index_factory string, got {factory!r}")
        if metric not in ("ip", "l2"):
            raise ValueError(f"metric must be 'ip' or 'l2', got {metric!r}")
        width = self.dimension + (metric == "l2")
        try:
            built = faiss.index_factory(width, factory, _faiss_metric(faiss, metric))
        except RuntimeError as exc:
            raise ValueError(f"factory {factory!r} is not a valid faiss index string: "
                             f"{str(exc).splitlines()[-1]}") from None
        self._setup(faiss, built, factory, metric, max_norm, params, threads)

    def _setup(self, faiss: ModuleType, index: Any, factory: str, metric: str,
               max_norm: float | None, params: dict[str, float] | None,
               threads: int | None) -> None:
        self._faiss = faiss
        self.threads = None if threads is None else check_int(threads, "threads", minimum=1)
        self.factory, self.metric, self.max_norm = factory, metric, max_norm
        self.params = dict(params or {})
        self._index = index
        self._apply_params(faiss)
        # Exact only as the structure itself is: a flat inner-product scan (never the settings).
        inner = faiss.downcast_index(self._index)
        self.exact = (metric == "ip" and type(inner) in _flat_types(faiss)
                      and inner.metric_type == faiss.METRIC_INNER_PRODUCT)
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
                return best_k(cand, self._stored()._exact(cand, v), k)
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
        blob = faiss.serialize_index(self._index)
        try:  # what load_index cannot check, save does not write
            structure = check_faiss_blob(blob, self._index.d, self.n_keys,
                                         _METRICS[self.metric], _ef_limit(self.n_keys))
        except IndexFileError as exc:
            raise ValueError(f"save() cannot write faiss index {self.factory!r}: load_index "
                             f"would refuse it ({exc.reason})") from None
        meta = {"factory": faiss_description(structure), "metric": self.metric,
                "max_norm": self.max_norm, "params": self.params, "norms": list(self._norms)}
        return {"faiss": blob, "meta": np.array(json.dumps(meta)), **self._store_payload()}

    @classmethod
    def from_archive(cls, dimension: int, archive: SavedArchive, *, private: bool = False,
                     progress: bool = True, threads: int | None = None) -> FaissIndex:
        """The index saved in ``archive``: its faiss structure is parsed and checked first
        (:func:`~fastmwem.indices._ann_files.check_faiss_blob`); exactness comes from the
        structure read, a flat inner-product index whose vectors are the stored keys."""
        faiss = require_ann("faiss")
        index = cls.__new__(cls)
        _AdapterBase.__init__(index, dimension, private=private, progress=progress)
        threads = None if threads is None else check_int(threads, "threads", minimum=1)
        store = _saved_store(dimension, archive, "faiss", private)
        n = store.n_keys
        meta = _settings(archive, ("factory", "metric", "max_norm", "params"))
        factory = check_text(meta["factory"], "factory")
        metric = meta["metric"]
        if metric not in ("ip", "l2"):
            raise IndexFileError("setting 'metric' must be 'ip' or 'l2'")
        norms = _store_norms(store)
        max_norm = _saved_max_norm(meta["max_norm"], metric, norms[1])
        params = _saved_params(meta["params"], n)
        archive.check("faiss", "u", (None,), (1,))
        blob = archive.read("faiss")
        structure = check_faiss_blob(blob, dimension + (metric == "l2"), n, _METRICS[metric],
                                     _ef_limit(n))
        if not same_factory(factory, structure):
            raise IndexFileError(f"setting 'factory' is {factory[:40]!r} but the faiss structure "
                                 f"is {faiss_description(structure)!r}")
        if structure.kind == "flat" and metric == "ip" and not _same_keys(store, structure.vectors):
            raise IndexFileError("the flat faiss index does not hold the stored keys")
        try:
            loaded = faiss.deserialize_index(np.ascontiguousarray(blob))
        except RuntimeError:
            raise IndexFileError("faiss cannot read its structure") from None
        _check_loaded(faiss, loaded, structure, dimension + (metric == "l2"), n)
        try:
            index._setup(faiss, loaded, factory, metric, max_norm, params, threads)
        except ValueError as exc:
            raise IndexFileError(str(exc)) from None
        index._store, index._norms = store, norms
        return index


_METRICS = {"ip": 0, "l2": 1}  # faiss's METRIC_INNER_PRODUCT and METRIC_L2


def _faiss_metric(faiss: ModuleType, metric: str) -> int:
    return faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2


def _flat_types(faiss: ModuleType) -> tuple[type, ...]:
    return (faiss.IndexFlat, faiss.IndexFlatIP, faiss.IndexFlatL2)


def _ef_limit(n_keys: int) -> int:
    """The largest search or build width (efSearch, nprobe...) a saved index may carry: wider
    than the key count is pointless, and a huge one would allocate at every search."""
    return max(n_keys, 1 << 16)


def _saved_max_norm(value: object, metric: str, largest: float) -> float | None:
    if value is None and metric == "ip":  # unused with the inner product
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not (math.isfinite(value) and value >= (largest if metric == "l2" else 0.0)):
        raise IndexFileError("setting 'max_norm' must bound the stored keys' norms")
    return float(value)


def _saved_params(value: object, n_keys: int) -> dict[str, float]:
    limit = _ef_limit(n_keys)
    if not isinstance(value, dict) or len(value) > 16:
        raise IndexFileError("setting 'params' must be a JSON object of faiss parameters")
    for name, number in value.items():
        check_text(name, "params")
        if isinstance(number, bool) or not isinstance(number, (int, float)) \
                or not (math.isfinite(number) and 0 <= number <= limit):
            raise IndexFileError(f"setting 'params' must hold numbers in 0..{limit}")
    return value


def _check_loaded(faiss: ModuleType, loaded: object, structure: FaissStructure, width: int,
                  n_keys: int) -> None:
    """What faiss built from the checked blob is that structure (a second look, by type)."""
    inner = faiss.downcast_index(loaded)
    kinds = {"flat": _flat_types(faiss), "hnsw": (faiss.IndexHNSWFlat,),
             "ivf": (faiss.IndexIVFFlat,)}
    if type(inner) not in kinds[structure.kind] or inner.d != width \
            or inner.ntotal != n_keys or inner.metric_type != structure.metric:
        raise IndexFileError("faiss read another structure than the one checked")


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
        try:  # what load_index cannot check, save does not write
            check_hnswlib_blob(graph, self.dimension, self.n_keys, self.M, self.ef_construction)
        except IndexFileError as exc:
            raise ValueError(f"save() cannot write this hnswlib index: load_index would refuse "
                             f"it ({exc.reason})") from None
        meta = {"M": self.M, "ef_construction": self.ef_construction, "ef": self.ef}
        return {"hnsw": graph, "meta": np.array(json.dumps(meta)), **self._store_payload()}

    @classmethod
    def from_archive(cls, dimension: int, archive: SavedArchive, *, private: bool = False,
                     progress: bool = True) -> HnswlibIndex:
        """The index saved in ``archive``. hnswlib reads its file without any check (a wrong id
        is followed out of bounds at search time), so the file is first parsed and checked
        against the stored keys' count and dimension and the saved settings
        (:func:`~fastmwem.indices._ann_files.check_hnswlib_blob`). That check, rather than a
        SHA-256 of the graph kept in the settings, is what protects: a checksum catches damage
        but not a hostile file, whose author recomputes it."""
        store = _saved_store(dimension, archive, "hnsw", private)
        n = store.n_keys
        meta = _settings(archive, ("M", "ef_construction", "ef"))
        m = _setting_int(meta["M"], "M", 2, 10_000)  # hnswlib caps M at 10,000
        ef_construction = _setting_int(meta["ef_construction"], "ef_construction", 1,
                                       _ef_limit(n))
        ef = None if meta["ef"] is None else _setting_int(meta["ef"], "ef", 1, _ef_limit(n))
        archive.check("hnsw", "u", (None,), (1,))
        blob = archive.read("hnsw")
        check_hnswlib_blob(blob, dimension, n, m, ef_construction)
        index = cls(dimension, M=m, ef_construction=ef_construction, ef=ef, private=private,
                    progress=progress)
        index._store = store
        # a fresh, uninitialised hnswlib index: loading into the built one warns on stderr
        index._index = require_ann("hnswlib").Index(space="ip", dim=dimension)
        fd, tmp = tempfile.mkstemp(suffix=".hnsw")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob.tobytes())
            index._index.load_index(tmp, max_elements=n)
        except RuntimeError:
            raise IndexFileError("hnswlib cannot read its graph") from None
        finally:
            os.unlink(tmp)
        return index
