"""Top-k oracles over a workload's query vectors, for the lazy selection of a round.

Everything here is built from the workload alone (public), never from the data.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_memory

if TYPE_CHECKING:
    from fastmwem.indices.base import TopKOracle
    from fastmwem.workloads.base import LinearWorkload

__all__ = ["workload_oracle"]

#: Keys handed to an index per ``add`` call.
_BLOCK_ROWS = 65536


def workload_oracle(workload: LinearWorkload, index: object, *,
                    allow_uncertified: bool) -> TopKOracle:
    """The oracle a lazy round searches.

    ``index=None`` takes the bit-packed index for workloads stored bit-packed (random counting
    queries), else the workload's own exact oracle (``top_k_oracle()``: interval heaps, one
    Walsh-Hadamard transform, marginal projections, or a structured scan). A name builds that
    index over the workload's query vectors; an object is checked and used as it is.

    Raises:
        ValueError: an approximate index without a certificate and without the opt-in, keys that
            do not match the workload, or a key matrix beyond the memory limit.
    """
    from fastmwem.indices import BitPackedIndex, TopKOracle, make_index

    if index is None:
        if _packed(workload) is not None:
            index = "bitpacked"
        else:
            return _checked(workload.top_k_oracle(), workload, allow_uncertified)
    if isinstance(index, str):
        built = make_index(index, dimension=workload.domain.size)
        packed = _packed(workload)
        if isinstance(built, BitPackedIndex) and packed is not None:  # index == "bitpacked"
            built.add_packed(packed)
        else:
            for block in _key_blocks(workload, index):
                built.add(block)
        return _checked(built, workload, allow_uncertified)
    if not isinstance(index, TopKOracle):
        raise TypeError(f"index must be a name or a top-k oracle, got {type(index).__name__}")
    return _checked(index, workload, allow_uncertified)


def _checked(oracle: TopKOracle, workload: LinearWorkload, allow_uncertified: bool
             ) -> TopKOracle:
    n, d = workload.n_queries, workload.domain.size
    if oracle.n_keys != n or oracle.dimension != d:
        raise ValueError(
            f"the oracle holds {oracle.n_keys} keys of dimension {oracle.dimension}; "
            f"the workload has {n} queries over {d} cells")
    if not oracle.exact and oracle.certified_gap is None and not allow_uncertified:
        raise ValueError(
            "the oracle is approximate with no certified gap: its output law would not be the "
            "exponential mechanism's and the run would have no exact privacy guarantee; pass "
            "allow_uncertified=True to run it anyway")
    return oracle


def _packed(workload: LinearWorkload) -> np.ndarray | None:
    """The workload's bit-packed 0/1 query matrix (``np.packbits`` rows), if it keeps one."""
    packed = getattr(workload, "packed", None)
    if isinstance(packed, np.ndarray) and packed.dtype == np.uint8 and packed.ndim == 2:
        return packed
    return None


def _key_blocks(workload: LinearWorkload, index: str) -> Iterator[np.ndarray]:
    """The query vectors in row blocks, in ``min(m, |X|)`` structured calls: ``row(q)`` per query
    when there are fewer queries than cells, else ``answer`` of each unit histogram (one column
    of the query matrix per call)."""
    n, size = workload.n_queries, workload.domain.size
    check_memory(4 * n * size, f"the {index!r} index over {n} queries x {size} cells", None)
    matrix = np.empty((n, size), dtype=np.float32)
    if n <= size:
        for query in range(n):
            matrix[query] = workload.row(query)
    else:
        unit = np.zeros(size)
        for cell in range(size):
            unit[cell] = 1.0
            matrix[:, cell] = workload.answer(unit)
            unit[cell] = 0.0
    if index == "bitpacked" and not np.all((matrix == 0) | (matrix == 1)):
        raise ValueError("the 'bitpacked' index needs 0/1 queries; this workload has other "
                         "values (use index='flat')")
    for start in range(0, n, _BLOCK_ROWS):
        yield matrix[start:start + _BLOCK_ROWS]
