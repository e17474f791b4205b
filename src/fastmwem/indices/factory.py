"""``make_index`` (an index by name) and ``load_index`` (an index saved with ``save``)."""

from __future__ import annotations

import os
import zipfile

import numpy as np

from fastmwem.indices._checks import check_dimension, check_keys
from fastmwem.indices._common import FORMAT, IndexBase
from fastmwem.indices.ann import FaissIndex, HnswlibIndex
from fastmwem.indices.bitpacked import BitPackedIndex
from fastmwem.indices.flat import FlatIndex

__all__ = ["make_index", "load_index", "INDEX_SPECS"]

#: The names ``make_index`` accepts (``faiss:`` takes any faiss index_factory string).
INDEX_SPECS = ("flat", "bitpacked", "faiss:<factory string>", "hnswlib")


def make_index(spec: str, keys: object = None, *, dimension: int | None = None,
               private: bool = False, **options: object) -> IndexBase:
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
        index: IndexBase = FaissIndex(spec[len("faiss:"):], d, private=private, **options)
    else:
        cls = {"flat": FlatIndex, "bitpacked": BitPackedIndex, "hnswlib": HnswlibIndex}[spec]
        index = cls(d, private=private, **options)
    if arr is not None:
        index.add(arr)
    return index


_CLASSES = {cls.kind: cls for cls in (FlatIndex, BitPackedIndex, FaissIndex, HnswlibIndex)}


def load_index(path: str | os.PathLike[str], **options: object) -> IndexBase:
    """Load an index written by ``save`` (``options`` as for ``make_index``, e.g. ``backend``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    name = os.fspath(path)
    if os.path.isdir(name):
        raise ValueError(f"path {name!r} is a directory, not a saved index")
    if os.path.exists(name) and not os.path.isfile(name):
        raise ValueError(f"path {name!r} is not a regular file (a FIFO, device or socket)")
    try:
        with np.load(name, allow_pickle=False) as archive:
            payload = {key: archive[key] for key in archive.files}
    except FileNotFoundError:
        raise ValueError(f"path {name!r} does not exist") from None
    except OSError as exc:
        if exc.strerror:  # the file system's own refusal, such as a permission
            raise ValueError(f"path {name!r} cannot be read: {exc.strerror}") from None
        raise ValueError(f"path {name!r} is not a saved index") from None
    except (ValueError, zipfile.BadZipFile, EOFError):
        # numpy's own message may advise allow_pickle=True, which would run code from the file
        raise ValueError(f"path {name!r} is not a saved index (not an .npz archive written by "
                         "save())") from None
    if "format" not in payload or str(payload["format"]) != FORMAT:
        raise ValueError(f"path {name!r} is not a saved index (format {FORMAT})")
    kind = str(payload.pop("kind"))
    if kind not in _CLASSES:
        raise ValueError(f"path {name!r} holds an unknown index kind {kind!r}")
    dimension = int(payload.pop("dimension"))
    return _CLASSES[kind].from_payload(dimension, payload, **options)
