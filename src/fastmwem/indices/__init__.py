"""Maximum inner-product search: the top-k oracles behind the lazy exponential mechanism.

Exact indices: :class:`FlatIndex` (float32 scan, the ground truth) and :class:`BitPackedIndex`
(0/1 keys, one bit per entry, compiled with numba when installed), and ``faiss:Flat``.
Approximate adapters (``pip install "fastmwem[ann]"``): FAISS IVF/HNSW and hnswlib; they carry
no certified bound, so the lazy mechanism loses its exact guarantee over them.
"""

from fastmwem.indices._checks import real_matrix
from fastmwem.indices.ann import FaissIndex, HnswlibIndex, mips_query_to_l2, mips_to_l2
from fastmwem.indices.base import AbsTopKOracle, TopKOracle
from fastmwem.indices.bitpacked import BitPackedIndex, numba_available
from fastmwem.indices.factory import (
    INDEX_SPECS,
    MAX_INDEX_BYTES,
    IndexFileError,
    load_index,
    make_index,
)
from fastmwem.indices.flat import FlatIndex

__all__ = [
    "TopKOracle",
    "AbsTopKOracle",
    "FlatIndex",
    "BitPackedIndex",
    "FaissIndex",
    "HnswlibIndex",
    "make_index",
    "load_index",
    "IndexFileError",
    "MAX_INDEX_BYTES",
    "INDEX_SPECS",
    "mips_to_l2",
    "mips_query_to_l2",
    "numba_available",
    "real_matrix",
]
