"""``make_index`` (an index by name) and ``load_index`` (an index saved with ``save``)."""

from __future__ import annotations

import os
from typing import Any, TypeAlias

from fastmwem._validation import check_int
from fastmwem.indices._checks import check_dimension, check_keys
from fastmwem.indices._common import FORMAT
from fastmwem.indices._saved import (
    MAX_INDEX_BYTES,
    IndexFileError,
    SavedArchive,
    check_regular_file,
    file_error,
)
from fastmwem.indices.ann import FaissIndex, HnswlibIndex
from fastmwem.indices.bitpacked import BitPackedIndex
from fastmwem.indices.flat import FlatIndex

__all__ = ["make_index", "load_index", "INDEX_SPECS", "IndexFileError", "MAX_INDEX_BYTES"]

#: What ``make_index`` and ``load_index`` return.
Index: TypeAlias = FlatIndex | BitPackedIndex | FaissIndex | HnswlibIndex

#: The names ``make_index`` accepts (``faiss:`` takes any faiss index_factory string).
INDEX_SPECS = ("flat", "bitpacked", "faiss:<factory string>", "hnswlib")


def make_index(spec: str, keys: object = None, *, dimension: int | None = None,
               private: bool = False, **options: Any) -> Index:
    """Build an index by name and, if ``keys`` are given, add them.

    Args:
        spec: ``"flat"`` (exact, float32 scan), ``"bitpacked"`` (exact, 0/1 keys),
            ``"faiss:Flat"`` (exact), ``"faiss:IVF1024,Flat"``, ``"faiss:HNSW32"`` (any faiss
            factory string; approximate unless Flat) or ``"hnswlib"`` (approximate). The faiss and
            hnswlib indices need ``pip install "fastmwem[ann]"``.
        keys: the keys, a 2-D array (one row per key); optional.
        dimension: key length; required without ``keys``, checked against them otherwise.
        private: the keys are private data: ``save`` will refuse.
        **options: passed to the index class (``backend`` for bitpacked; ``metric``,
            ``max_norm``, ``params``, ``progress`` for faiss; ``M``, ``ef_construction``, ``ef``,
            ``progress`` for hnswlib).

    >>> index = make_index("bitpacked", [[1, 0, 1], [0, 1, 1]])
    >>> index.search([[1.0, 2.0, -1.0]], 1)
    (array([[1.]]), array([[1]]))
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a str such as 'flat', got {type(spec).__name__}")
    if spec not in ("flat", "bitpacked", "hnswlib") and not spec.startswith("faiss:"):
        raise ValueError(f"spec must be one of {', '.join(INDEX_SPECS)}; got {spec!r}")
    arr = None
    if keys is not None:
        arr = check_keys(keys, None)
        if dimension is not None and check_dimension(dimension) != arr.shape[1]:
            raise ValueError(f"keys have {arr.shape[1]} columns but dimension={dimension}")
        dimension = arr.shape[1]
    elif dimension is None:
        raise ValueError("make_index needs keys or a dimension")
    d = check_dimension(dimension)
    if spec.startswith("faiss:"):
        index: Index = FaissIndex(spec[len("faiss:"):], d, private=private, **options)
    else:
        classes: dict[str, type[FlatIndex] | type[BitPackedIndex] | type[HnswlibIndex]] = {
            "flat": FlatIndex, "bitpacked": BitPackedIndex, "hnswlib": HnswlibIndex}
        cls = classes[spec]
        index = cls(d, private=private, **options)
    if arr is not None:
        index.add(arr)
    return index


_CLASSES: dict[str, type[Index]] = {
    cls.kind: cls for cls in (FlatIndex, BitPackedIndex, FaissIndex, HnswlibIndex)}
# faiss and hnswlib take 32-bit dimensions
_MAX_DIMENSION = 2**31 - 1


def load_index(path: str | os.PathLike[str], *, max_bytes: int = MAX_INDEX_BYTES,
               **options: Any) -> Index:
    """Load an index written by ``save`` (``options`` as for ``make_index``, e.g. ``backend``).

    The file is not trusted: its archive members, their sizes, dtypes and shapes are checked
    before any array is read (a member may not be compressed, so nothing expands beyond the
    file), and a FAISS or hnswlib structure is parsed and checked before the library reads it
    (see :mod:`fastmwem.indices._ann_files`). Whether the loaded index is exact comes from what
    was loaded (the keys, or the FAISS structure's own type), never from its settings.

    Args:
        path: the file.
        max_bytes: refuse a file whose arrays hold more bytes (default 16 GiB).
        **options: passed to the index class.

    Raises:
        IndexFileError: (a ``ValueError``) the file is missing, unreadable, or not a saved
            fastmwem index this version can check: ``"<path> is not a saved fastmwem index:
            <reason>"``.
    """
    name = check_regular_file(path)
    limit = check_int(max_bytes, "max_bytes", minimum=1)
    try:
        with SavedArchive(name, limit) as archive:
            if archive.text("format") != FORMAT:
                raise IndexFileError(f"it is not in format {FORMAT}")
            kind = archive.text("kind")
            if kind not in _CLASSES:
                raise IndexFileError(f"it holds an unknown index kind {kind[:40]!r}")
            dimension = archive.integer("dimension")
            if not 1 <= dimension <= _MAX_DIMENSION:
                raise IndexFileError(f"its dimension must lie in 1..{_MAX_DIMENSION}")
            return _CLASSES[kind].from_archive(dimension, archive, **options)
    except IndexFileError as exc:
        raise file_error(exc, name) from None
    except PermissionError as exc:
        raise IndexFileError(f"it cannot be read: {exc.strerror}", name) from None
    except OSError as exc:
        raise IndexFileError(f"it cannot be read: {exc.strerror or 'input/output error'}",
                             name) from None
