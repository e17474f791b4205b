"""Checks of the FAISS and hnswlib structures inside a saved index, before either library reads them.

Both libraries read their files with little or no checking (hnswlib none at all: a wrong
neighbour id or list length in its file is read out of bounds at the first search, which may
crash the process; FAISS before 1.12 or so checks read lengths, but not graph ids, and sizes
vectors from the file before reading them). So a saved index's structure is parsed here first,
field by field, against what the index's own arrays fix (key count and dimension), and every
length, id and level in it is checked. Only structures this module can check are accepted: FAISS
``IndexFlat`` (inner product or L2), ``IndexHNSWFlat`` (flat storage) and ``IndexIVFFlat`` (flat
quantizer, array inverted lists, no direct map), which is what the factory strings ``Flat``,
``HNSW<M>`` and ``IVF<n>,Flat`` build; and hnswlib's HNSW graph in inner-product space.

Why not a checksum. A SHA-256 of the blob kept in the index's own settings would only catch
accidental damage: whoever edits the file can recompute it. The checks here make a file that
passes them a structure the library can search without reading out of bounds, whoever wrote it.

Layouts read: FAISS's ``write_index`` (``impl/index_write.cpp``: a four-character code, then
the index header ``d:int32 ntotal:int64 dummy:int64 dummy:int64 is_trained:uint8
metric_type:int32 [metric_arg:float32]``, vectors as a uint64 count then the items), and
hnswlib's ``HierarchicalNSW::saveIndex`` (``hnswlib/hnswalg.h``, described at
:func:`check_hnswlib_blob`). Both are native byte order (little-endian on the platforms the
wheels are built for).
"""

from __future__ import annotations

import math
import re
import struct

import numpy as np

from fastmwem.indices._saved import IndexFileError

__all__ = ["FaissStructure", "check_faiss_blob", "check_hnswlib_blob", "faiss_description",
           "same_factory"]

_METRIC_IP, _METRIC_L2 = 0, 1
_FLAT_CODES = {b"IxFI": _METRIC_IP, b"IxF2": _METRIC_L2, b"IxFl": None}


class _Reader:
    """Bounded reads from a blob: every length is checked against the bytes left."""

    def __init__(self, blob: np.ndarray, what: str) -> None:
        self.buf = np.ascontiguousarray(blob, dtype=np.uint8).data.cast("B")
        self.pos = 0
        self.what = what

    def fail(self, reason: str) -> IndexFileError:
        return IndexFileError(f"the {self.what} structure {reason}")

    def take(self, nbytes: int) -> memoryview:
        if nbytes < 0 or nbytes > len(self.buf) - self.pos:
            raise self.fail("is truncated or declares more data than it holds")
        out = self.buf[self.pos:self.pos + nbytes]
        self.pos += nbytes
        return out

    def scalar(self, fmt: str) -> int:
        """One integer of struct format ``fmt``."""
        return struct.unpack("=" + fmt, self.take(struct.calcsize("=" + fmt)))[0]

    def array(self, dtype: str, count: int) -> np.ndarray:
        item = np.dtype(dtype).itemsize
        if count < 0 or count > (len(self.buf) - self.pos) // item:
            raise self.fail("is truncated or declares more data than it holds")
        return np.frombuffer(self.take(count * item), dtype=dtype)

    def vector(self, dtype: str) -> np.ndarray:
        return self.array(dtype, self.scalar("Q"))

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise self.fail("has bytes after its end")


class FaissStructure:
    """What :func:`check_faiss_blob` found: the structure kind and its figures."""

    def __init__(self, kind: str, metric: int, vectors: np.ndarray | None = None,
                 nlist: int = 0, M: int = 0) -> None:
        self.kind, self.metric, self.vectors, self.nlist, self.M = kind, metric, vectors, nlist, M


def _header(r: _Reader, code: bytes) -> tuple[int, int, int]:
    d, ntotal = r.scalar("i"), r.scalar("q")
    r.scalar("q"), r.scalar("q")
    trained, metric = r.scalar("B"), r.scalar("i")
    if metric > 1:
        r.take(struct.calcsize("=f"))  # the metric's argument, a float32
    if d < 1 or ntotal < 0 or trained != 1:
        raise r.fail(f"has an invalid {code.decode(errors='replace')} header")
    return d, ntotal, metric


def _flat(r: _Reader, d_want: int, n_want: int) -> tuple[int, np.ndarray]:
    code = bytes(r.take(4))
    if code not in _FLAT_CODES:
        raise r.fail(f"holds a {code!r} index where a flat index belongs")
    d, ntotal, metric = _header(r, code)
    if (d, ntotal) != (d_want, n_want):
        raise r.fail(f"has a flat index of {ntotal} vectors of {d}, not {n_want} of {d_want}")
    if _FLAT_CODES[code] is not None and _FLAT_CODES[code] != metric:
        raise r.fail("has a flat index whose code and metric disagree")
    vectors = r.vector("f4")
    if vectors.size != d * ntotal:
        raise r.fail("has a flat index with the wrong number of entries")
    if not np.all(np.isfinite(vectors)):
        raise r.fail("has non-finite vector entries")
    return metric, vectors.reshape(ntotal, d)


def _check_hnsw_graph(r: _Reader, n: int, cum: np.ndarray, levels: np.ndarray,
                      offsets: np.ndarray, neighbors: np.ndarray, entry: int,
                      max_level: int) -> None:
    """FAISS HNSW: node ``i`` has ``levels[i]`` layers; its neighbours in layer ``l`` are
    ``neighbors[offsets[i] + cum[l] : offsets[i] + cum[l + 1]]`` (-1 ends a list early)."""
    if cum.size < 2 or cum[0] != 0 or np.any(np.diff(cum) < 0):
        raise r.fail("has invalid neighbour counts per level")
    if levels.size != n or offsets.size != n + 1:
        raise r.fail("has a graph of another size than its vectors")
    if n == 0 or levels.min() < 1 or levels.max() > cum.size - 1:
        raise r.fail("has node levels out of range")
    ends = np.concatenate([np.zeros(1, np.uint64), np.cumsum(cum[levels].astype(np.uint64))])
    if offsets[0] != 0 or not np.array_equal(offsets, ends) or offsets[-1] != neighbors.size:
        raise r.fail("has inconsistent neighbour offsets")
    if neighbors.size and (neighbors.min() < -1 or neighbors.max() >= n):
        raise r.fail("has neighbour ids out of range")
    top = int(levels.max()) - 1
    if max_level != top or not 0 <= entry < n or levels[entry] != top + 1:
        raise r.fail("has an invalid entry point")
    # A search walks layer l only through nodes that have it: a neighbour in layer l must too.
    for layer in range(1, top + 1):
        nodes = np.flatnonzero(levels > layer)
        slots = offsets[nodes, None].astype(np.int64) + np.arange(cum[layer], cum[layer + 1])
        ids = neighbors[slots]
        ids = ids[ids >= 0]
        if ids.size and levels[ids].min() <= layer:
            raise r.fail(f"links layer {layer} to nodes below it")


def _hnsw(r: _Reader, d: int, n: int, metric: int, ef_limit: int) -> FaissStructure:
    r.vector("f8")  # assign_probas: used only to draw the levels of added vectors
    cum = r.vector("i4")
    levels = r.vector("i4")
    offsets = r.vector("u8")
    neighbors = r.vector("i4")
    entry, max_level = r.scalar("i"), r.scalar("i")
    ef_construction, ef_search = r.scalar("i"), r.scalar("i")
    r.scalar("i")  # upper_beam, no longer used
    _check_hnsw_graph(r, n, cum, levels, offsets, neighbors, entry, max_level)
    if not (1 <= ef_construction <= ef_limit and 1 <= ef_search <= ef_limit):
        raise r.fail(f"has a search or build width outside 1..{ef_limit}")
    storage_metric, _ = _flat(r, d, n)
    if storage_metric != metric:
        raise r.fail("has a storage of another metric than the graph")
    m = int(cum[2] - cum[1]) if cum.size > 2 else int(cum[1]) // 2
    return FaissStructure("hnsw", metric, M=m)


def _ivf(r: _Reader, d: int, n: int, metric: int) -> FaissStructure:
    nlist, nprobe = r.scalar("Q"), r.scalar("Q")
    if not (1 <= nlist <= max(n, 1) and 1 <= nprobe <= nlist):
        raise r.fail("has an invalid number of lists or probes")
    _flat(r, d, nlist)  # the quantizer: one centroid per list
    if r.scalar("b") != 0 or r.vector("i8").size != 0:
        raise r.fail("has a direct map (save() writes none)")
    if bytes(r.take(4)) != b"ilar" or r.scalar("Q") != nlist or r.scalar("Q") != 4 * d:
        raise r.fail("has inverted lists of another layout")
    layout = bytes(r.take(4))
    sizes = r.vector("u8")
    if layout == b"full":
        if sizes.size != nlist:
            raise r.fail("has the wrong number of inverted lists")
    elif layout == b"sprs":
        pairs = sizes.reshape(-1, 2) if sizes.size % 2 == 0 else None
        if pairs is None or np.any(pairs[:, 0] >= nlist) or np.any(np.diff(pairs[:, 0]) <= 0) \
                or np.any(pairs[:, 1] == 0):
            raise r.fail("has invalid sparse inverted lists")
        sizes = pairs[:, 1]
    else:
        raise r.fail("has inverted lists of another layout")
    if int(sizes.sum(dtype=np.uint64)) != n or np.any(sizes > n):
        raise r.fail("has inverted lists holding another number of vectors")
    seen = np.zeros(n, dtype=bool)
    for size in sizes.tolist():
        if size:
            r.take(size * 4 * d)
            ids = r.array("i8", size)
            if ids.min() < 0 or ids.max() >= n:
                raise r.fail("has inverted-list ids out of range")
            seen[ids] = True
    if not seen.all():  # n ids in all, so one is missing iff one repeats
        raise r.fail("has repeated inverted-list ids")
    return FaissStructure("ivf", metric, nlist=nlist)


def check_faiss_blob(blob: np.ndarray, dimension: int, n_keys: int, metric: int,
                     ef_limit: int) -> FaissStructure:
    """Parse a serialised FAISS index; refuse it unless it is a flat, HNSW-flat or IVF-flat index
    of ``n_keys`` vectors of length ``dimension`` and ``metric`` (0 inner product, 1 L2) whose
    every length, id and level is consistent (see the module docstring)."""
    r = _Reader(blob, "faiss")
    if len(r.buf) < 4:
        raise r.fail("is truncated")
    code = bytes(r.buf[:4])
    if code in _FLAT_CODES:
        got, vectors = _flat(r, dimension, n_keys)
        out = FaissStructure("flat", got, vectors=vectors)
    elif code in (b"IHNf", b"IwFl"):
        r.take(4)
        d, ntotal, got = _header(r, code)
        if (d, ntotal) != (dimension, n_keys):
            raise r.fail(f"holds {ntotal} vectors of {d}, not {n_keys} of {dimension}")
        out = _hnsw(r, d, ntotal, got, ef_limit) if code == b"IHNf" else _ivf(r, d, ntotal, got)
    else:
        raise r.fail(f"is a {code!r} index: load_index reads flat, HNSW-flat and IVF-flat faiss "
                     "indices only")
    r.done()
    if out.metric != metric:
        raise r.fail("has another metric than its settings say")
    return out


def faiss_description(structure: FaissStructure) -> str:
    """The factory string that builds ``structure``: ``Flat``, ``IVF<n>,Flat`` or ``HNSW<M>``."""
    if structure.kind == "flat":
        return "Flat"
    if structure.kind == "ivf":
        return f"IVF{structure.nlist},Flat"
    return f"HNSW{structure.M}"


def same_factory(factory: str, structure: FaissStructure) -> bool:
    """Whether the factory string of the settings names the saved structure."""
    text = re.sub(r"\s+", "", factory)
    text = re.sub(r"^(HNSW\d+),Flat$", r"\1", text)
    return text == faiss_description(structure)


# hnswlib's file: 13 header fields, then cur_element_count level-0 records of
# size_data_per_element bytes (a link list: a uint16 count, a byte of flags (1 = deleted) and a
# spare byte, then maxM0 uint32 ids; the vector, dim float32; the label, uint64), then for each
# element a uint32 byte count of its upper-layer link lists, each a (count, flags, ids) block
# of maxM uint32 ids, one per layer above 0.
_HNSW_HEADER = struct.Struct("=QQQQQQiIQQQdQ")


def check_hnswlib_blob(blob: np.ndarray, dimension: int, n_keys: int, M: int,
                       ef_construction: int) -> None:
    """Refuse an hnswlib file unless it is an inner-product graph of ``n_keys`` vectors of
    length ``dimension`` built with ``M`` and ``ef_construction``, labelled ``0 .. n_keys - 1``,
    whose every count, id and layer is within bounds (a file from hnswlib's ``saveIndex``)."""
    r = _Reader(blob, "hnswlib")
    (offset0, _max_elements, count, per_element, label_offset, data_offset, max_level, entry,
     max_m, max_m0, m, mult, ef_c) = _HNSW_HEADER.unpack(r.take(_HNSW_HEADER.size))
    links0 = 4 * max_m0 + 4
    expected = (0, n_keys, links0 + 4 * dimension + 8, links0 + 4 * dimension, links0, M, 2 * M,
                M, max(ef_construction, M))
    got = (offset0, count, per_element, label_offset, data_offset, max_m, max_m0, m, ef_c)
    if got != expected:
        raise r.fail(f"does not describe {n_keys} vectors of {dimension} with M={M} and "
                     f"ef_construction={ef_construction}")
    if not (math.isfinite(mult) and mult > 0) or not 0 <= entry < n_keys or max_level < 0:
        raise r.fail("has an invalid header")
    records = np.frombuffer(r.take(count * per_element), dtype=np.uint8).reshape(count, -1)
    counts0 = records[:, :2].copy().view(np.uint16)[:, 0]
    if np.any(records[:, 2:4]) or np.any(counts0 > max_m0):
        raise r.fail("has invalid level-0 link lists")
    ids0 = records[:, 4:links0].copy().view(np.uint32)
    used = np.arange(max_m0)[None, :] < counts0[:, None]
    if np.any(ids0[used] >= n_keys):
        raise r.fail("has neighbour ids out of range")
    vectors = records[:, data_offset:label_offset].copy().view(np.float32)
    if not np.all(np.isfinite(vectors)):
        raise r.fail("has non-finite vector entries")
    labels = records[:, label_offset:].copy().view(np.uint64)[:, 0]
    if labels.max(initial=0) >= n_keys or np.unique(labels).size != n_keys:
        raise r.fail(f"does not label its vectors 0 .. {n_keys - 1}")
    _check_upper_layers(r, n_keys, max_m, max_level, entry)
    r.done()


def _check_upper_layers(r: _Reader, n: int, max_m: int, max_level: int, entry: int) -> None:
    block = 4 * max_m + 4
    levels = np.zeros(n, dtype=np.int64)
    lists: list[tuple[int, np.ndarray]] = []
    for i in range(n):
        size = r.scalar("I")
        if size == 0:
            continue
        if size % block or size // block > max_level:
            raise r.fail("has upper-layer link lists of an invalid size")
        levels[i] = size // block
        lists.append((i, np.frombuffer(r.take(size), dtype=np.uint8).reshape(-1, block)))
    if levels.max(initial=0) != max_level or levels[entry] != max_level:
        raise r.fail("has an invalid entry point or top layer")
    for _, rows in lists:
        counts = rows[:, :2].copy().view(np.uint16)[:, 0]
        if np.any(rows[:, 2:4]) or np.any(counts > max_m):
            raise r.fail("has invalid upper-layer link lists")
        ids = rows[:, 4:].copy().view(np.uint32)
        for layer, (c, row) in enumerate(zip(counts.tolist(), ids), start=1):
            found = row[:c]
            # a search walks layer l only through nodes that have it
            if c and (found.max() >= n or levels[found].min() < layer):
                raise r.fail(f"links layer {layer} to nodes below it or out of range")
