"""Random counting queries: each query is a random 0/1 vector over the cells, stored bit-packed."""

from __future__ import annotations

import numpy as np

from fastmwem._validation import check_int, check_memory, check_probability
from fastmwem.data.domain import Domain
from fastmwem.random import make_rng
from fastmwem.workloads._common import (
    check_domain,
    check_inplace_histogram,
    check_log_factors,
    flat_histogram,
)
from fastmwem.workloads.base import LinearWorkload, check_histogram

__all__ = ["RandomCountingQueries"]

#: Largest bit-packed query matrix (bytes) the class will allocate.
MAX_PACKED_BYTES = 2**31

# Peak memory of drawing the bits, beside the packed matrix: a block of 2**24 uniform draws and
# their comparison (density != 0.5).
_DRAW_BYTES = 9 * 2**24

# Products use byte tables ("four Russians"): for a tile of _COLS packed bytes (8 cells each),
# table[j, v] is the sum of the histogram over the cells of byte j whose bits are set in v, so a
# query's answer is one look-up per byte instead of 8 multiply-adds, and the tile's table
# (_COLS x 256 floats = 128 KiB) stays in cache. Rows go _ROWS at a time to bound the index
# buffers. Measured 2-3x faster than unpacking tiles to float64 and multiplying, and no BLAS.
_COLS = 64
_ROWS = 1024
#: Cells unpacked at once by ``answer_queries`` (a 2 MiB float64 buffer).
_UNPACKED_CELLS = 1 << 18

# _BITS[v, k] = 1 when cell k of a byte (np.packbits is big-endian: cell 0 is the top bit) is set
# in the byte value v.
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)


def _byte_tables(cells: np.ndarray) -> np.ndarray:
    """Flat ``(len(cells) // 8) x 256`` table of subset sums of each group of 8 cells."""
    c = cells.size // 8
    table = np.zeros((c, 256))
    per_byte = cells.reshape(c, 8)
    for p in range(8):
        # Values in [2^p, 2^(p+1)) are those below 2^p with bit p set, i.e. plus cell 7 - p.
        np.add(table[:, :1 << p], per_byte[:, 7 - p:8 - p], out=table[:, 1 << p:2 << p])
    return table.reshape(-1)


class RandomCountingQueries(LinearWorkload):
    """``n_queries`` random counting queries: ``q(x)`` is 1 for a random subset of the cells.

    Each entry of each query is 1 independently with probability ``density`` (a random
    0/1 vector over the cells, the unstructured "all counting queries" class that the MWEM paper (arXiv:1012.4763)
    discusses). The matrix is stored bit-packed (``np.packbits`` along cells, ``n_queries *
    ceil(|D| / 8)`` bytes, at most ``MAX_PACKED_BYTES`` and within the machine's memory, checked
    before anything is drawn). ``answer`` looks each packed byte up
    in a table of the 256 subset sums of its 8 cells (one look-up per query per 8 cells) and
    ``answer_transpose`` histograms the byte values per column, so the matrix is never unpacked.

    Each query is its own group. A record changes each answer by at most 1 (add/remove one
    record), so the sensitivity of a query is 1 (0 for a query that happens to be empty).

    Args:
        domain: the domain.
        n_queries: number of queries (>= 1).
        rng: seed or Generator for the queries' random bits (the workload is public, so this
            randomness is not a privacy resource).
        density: probability in ``(0, 1]`` that a given cell belongs to a given query.

    >>> d = Domain(["a", "b"], [4, 4])
    >>> w = RandomCountingQueries(d, 3, rng=0)
    >>> bool(np.allclose(w.answer(np.ones(d.size)), w.dense().sum(axis=1)))
    True
    """

    nonnegative_queries = True

    def __init__(self, domain: Domain, n_queries: int, *, rng: int | np.random.Generator | None = None,
                 density: float = 0.5) -> None:
        self.domain = check_domain(domain)
        n = check_int(n_queries, "n_queries", minimum=1)
        p = check_probability(density, "density", open_left=True, open_right=False)
        size = domain.size
        n_bytes = -(-size // 8)
        if n * n_bytes > MAX_PACKED_BYTES:
            raise ValueError(
                f"n_queries = {n} random queries over {size} cells need {n * n_bytes} bytes "
                f"bit-packed, above the limit MAX_PACKED_BYTES = {MAX_PACKED_BYTES}"
            )
        check_memory(n * (n_bytes + 1) + _DRAW_BYTES, f"{n} random counting queries")
        gen = make_rng(rng)
        self.density = p
        self._size = size
        packed = np.empty((n, n_bytes), dtype=np.uint8)
        # Bits are drawn in blocks of rows that depend only on the domain size, so a seed gives
        # the same queries whatever the tile sizes of the products.
        if p == 0.5:
            # Fair bits are random bytes: 8 times fewer draws than a comparison per cell.
            block = max(1, (1 << 24) // n_bytes)
            for s in range(0, n, block):
                rows = min(block, n - s)
                packed[s:s + rows] = gen.integers(0, 256, size=(rows, n_bytes), dtype=np.uint8)
            tail = size - 8 * (n_bytes - 1)
            if tail < 8:
                packed[:, -1] &= np.uint8((0xFF << (8 - tail)) & 0xFF)
        else:
            block = max(1, (1 << 24) // size)
            for s in range(0, n, block):
                rows = min(block, n - s)
                packed[s:s + rows] = np.packbits(gen.random((rows, size)) < p, axis=1)
        self.packed = packed
        self.packed.setflags(write=False)
        self._nonempty = np.asarray(packed.any(axis=1))

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self.packed.shape[0])

    @property
    def query_sensitivity(self) -> float:
        return float(self._nonempty.any())

    @property
    def group_sensitivity(self) -> np.ndarray:
        return self._nonempty.astype(np.float64)

    def describe(self, query: int) -> str:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        return f"random counting query {q}"

    def describe_group(self, group: int) -> str:
        return self.describe(group)

    # -- answers -----------------------------------------------------------------------------
    def _padded(self, vector: np.ndarray) -> np.ndarray:
        n_cells = 8 * self.packed.shape[1]
        if n_cells == vector.size:
            return vector
        out = np.zeros(n_cells)
        out[:vector.size] = vector
        return out

    def answer(self, histogram: np.ndarray) -> np.ndarray:
        hist = self._padded(check_histogram(histogram, self.domain))
        n, n_bytes = self.packed.shape
        out = np.zeros(n)
        offsets = np.arange(_COLS, dtype=np.intp) * 256
        for j in range(0, n_bytes, _COLS):
            c = min(_COLS, n_bytes - j)
            table = _byte_tables(hist[8 * j:8 * (j + c)])
            for s in range(0, n, _ROWS):
                index = np.add(self.packed[s:s + _ROWS, j:j + c], offsets[:c], dtype=np.intp)
                out[s:s + index.shape[0]] += np.take(table, index).sum(axis=1)
        return out

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        # A few rows: unpack them (a bounded number of cells at a time) and take dot products.
        distinct, inverse = np.unique(ids, return_inverse=True)
        values = np.empty(distinct.size)
        step = max(1, _UNPACKED_CELLS // self._size)
        for s in range(0, distinct.size, step):
            bits = np.unpackbits(self.packed[distinct[s:s + step]], axis=1, count=self._size)
            values[s:s + step] = np.einsum("ij,j->i", bits.astype(np.float64), hist)
        return values[inverse]

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        w = self._check_weights(weights)
        if not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite")
        n, n_bytes = self.packed.shape
        out = np.zeros(8 * n_bytes)
        offsets = np.arange(_COLS, dtype=np.intp) * 256
        for j in range(0, n_bytes, _COLS):
            c = min(_COLS, n_bytes - j)
            # Weight of each byte value in each column, then spread over the value's set bits.
            by_value = np.zeros(c * 256)
            for s in range(0, n, _ROWS):
                index = np.add(self.packed[s:s + _ROWS, j:j + c], offsets[:c], dtype=np.intp)
                by_value += np.bincount(index.reshape(-1), weights=np.repeat(w[s:s + index.shape[0]], c),
                                        minlength=c * 256)
            out[8 * j:8 * (j + c)] = np.einsum("jv,vk->jk", by_value.reshape(c, 256), _BITS).reshape(-1)
        return out[:self._size]

    def _bits(self, query: int) -> np.ndarray:
        return np.unpackbits(self.packed[query], count=self._size).view(np.bool_)

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        q = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        hist = flat_histogram(histogram, self.domain)
        # A dot product with the 0/1 row is several times faster than a boolean mask; einsum
        # rather than BLAS ddot, whose worker threads add millisecond stalls on a busy machine.
        return np.array([np.einsum("i,i->", hist, self.row(q))])

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        q = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        flat = check_inplace_histogram(histogram, self.domain)
        lf = check_log_factors(log_factors, 1)
        factors = self.row(q)
        factors *= np.expm1(lf[0])
        factors += 1.0
        flat *= factors

    def row(self, query: int) -> np.ndarray:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        return self._bits(q).astype(np.float64)
