"""BitPackedIndex: exact maximum inner-product search over 0/1 keys stored one bit per entry."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np

from fastmwem._validation import check_int
from fastmwem.indices._checks import check_dimension, check_keys, real_matrix, row_blocks
from fastmwem.indices._common import ExactScanIndex
from fastmwem.indices._topk import U64, gamma

__all__ = ["BitPackedIndex", "numba_available"]

_BACKENDS = ("auto", "numba", "numpy")
#: Keys per storage block: a block's int32 accumulators (16 KiB) stay in L1 cache during a scan.
BLOCK = 4096
# Blocks per step of the numpy scan, and ids per step of its exact scoring: bound the buffers.
_GROUP = 16
_ROWS = 4096
_INT_LIMIT = 2**31 - 1
# _POPCOUNT[b] = number of set bits of the byte value b.
_POPCOUNT = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1)


def _numba_kernels() -> ModuleType | None:
    # Imported on first use: loading numba takes about half a second.
    from fastmwem.indices import _bitkernels_numba

    return _bitkernels_numba if _bitkernels_numba.AVAILABLE else None


def numba_available() -> bool:
    """Whether the compiled kernels can be used (``pip install "fastmwem[numba]"``)."""
    return _numba_kernels() is not None


def _numpy_scan(blocks: np.ndarray, table: np.ndarray, absolute: bool) -> np.ndarray:
    n_blocks, nb, width = blocks.shape
    out = np.zeros((n_blocks, width), dtype=np.int64)
    tables = table.reshape(nb, 256)
    for s in range(0, n_blocks, _GROUP):
        acc = out[s:s + _GROUP]
        for j in range(nb):
            acc += np.take(tables[j], blocks[s:s + _GROUP, j])  # faster than fancy indexing
    out = out.reshape(-1)
    return np.abs(out, out=out) if absolute else out


def _numpy_exact(blocks: np.ndarray, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = np.empty(ids.size)
    width = blocks.shape[2]
    for s in range(0, ids.size, _ROWS):
        chunk = ids[s:s + _ROWS]
        bits = np.unpackbits(blocks[chunk // width, :, chunk % width], axis=1)
        if bits.shape[0]:
            # A running sum adds the set cells in ascending order (unset cells add an exact
            # zero): the same float64 result as the compiled kernel, bit for bit.
            out[s:s + bits.shape[0]] = np.cumsum(bits * v, axis=1)[:, -1]
    return out


def _byte_tables(cells: np.ndarray) -> np.ndarray:
    """Flat ``(len(cells) // 8) * 256`` int32 table of subset sums of each group of 8 cells."""
    c = cells.size // 8
    table = np.zeros((c, 256), dtype=np.int64)
    per_byte = cells.reshape(c, 8)
    for p in range(8):
        # Byte values in [2^p, 2^(p+1)) add cell 7 - p (np.packbits is big-endian) to the
        # values below 2^p.
        np.add(table[:, :1 << p], per_byte[:, 7 - p:8 - p], out=table[:, 1 << p:2 << p])
    return table.reshape(-1).astype(np.int32)


def _quantize(v: np.ndarray) -> tuple[np.ndarray, int, float]:
    """``(round(v 2^p), p, sum|v| 2^p)`` with the largest ``p`` whose subset sums fit in int32.

    The L1 norm is taken on ``v`` scaled by a power of two to a maximum in [0.5, 1), so neither
    huge nor subnormal queries overflow it.
    """
    top = float(np.abs(v).max())
    if top == 0.0:
        return np.zeros(v.size, dtype=np.int64), 0, 0.0
    shift = math.frexp(top)[1]
    total = float(np.abs(np.ldexp(v, -shift)).sum())
    power = math.floor(math.log2((_INT_LIMIT - v.size) / (total * (1.0 + 1e-6)))) - shift
    while True:
        quantized = np.rint(np.ldexp(v, power)).astype(np.int64)
        if int(np.abs(quantized).sum()) <= _INT_LIMIT:
            return quantized, power, math.ldexp(total, power + shift)
        power -= 1  # float rounding of ``total``; never more than once in practice


class BitPackedIndex(ExactScanIndex):
    """Exact maximum inner-product search over 0/1 keys, 8 keys' entries per byte.

    Keys are bit-packed like ``np.packbits(keys, axis=1)`` (big-endian within a byte, the layout
    of ``RandomCountingQueries.packed``), 32 times smaller than float32, and stored in blocks of
    ``BLOCK`` keys, byte-major within a block, so that a scan runs down byte columns. A search quantises the
    query to integers ``round(v 2^p)`` (``p`` as large as int32 sums allow), builds a table of
    the 256 subset sums of each group of 8 entries, and scans every key with one table look-up
    per byte in exact integer arithmetic. A key's quantised score is within ``popcount / 2^(p+1)``
    of its true score, so rescoring every key within the largest popcount (plus float64 slack) of
    the k-th scanned score gives a true top-k (``indices._topk``); ``score`` sums the query over a
    key's set entries in ascending order, in float64.

    The scan runs compiled on every core with numba (``pip install "fastmwem[numba]"``), else
    in numpy (several times slower); both return identical results.

    Args:
        dimension: key length (number of cells).
        private: the keys are private (``save`` then refuses).
        backend: ``"auto"`` (numba when installed), ``"numba"`` or ``"numpy"``.
        progress: show a progress bar on stderr for an ``add`` longer than two seconds.
        threads: threads of the compiled scan (default: numba's, every core). On a machine
            whose cores are busy with other work, ``threads=1`` can be much faster: a parallel
            scan waits for its slowest thread.

    >>> index = BitPackedIndex(4)
    >>> index.add([[1, 0, 1, 0], [0, 1, 1, 1], [1, 1, 1, 1]])
    >>> index.search([[0.5, -1.0, 2.0, 0.25]], 2)
    (array([[2.5 , 1.75]]), array([[0, 2]]))
    """

    kind = "bitpacked"

    def __init__(self, dimension: int, *, private: bool = False, backend: str = "auto",
                 threads: int | None = None, progress: bool = True) -> None:
        super().__init__(check_dimension(dimension), private=private)
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be a bool, got {type(progress).__name__}")
        self.progress = progress
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        if threads is not None:
            check_int(threads, "threads", minimum=1)
        kernels = _numba_kernels() if backend != "numpy" else None
        if backend == "numba" and kernels is None:
            raise ImportError('backend="numba" needs numba: pip install "fastmwem[numba]"')
        self.backend = "numba" if kernels is not None else "numpy"
        self.threads = threads
        self._kernels = kernels
        n_bytes = -(-self._dimension // 8)
        # blocks[b, j, r] = byte j of key b * BLOCK + r (byte-major blocks: see the kernels)
        self._blocks = np.zeros((0, n_bytes, BLOCK), dtype=np.uint8)
        self._n = 0
        self._max_popcount = 0

    @property
    def n_keys(self) -> int:
        return self._n

    @property
    def n_bytes(self) -> int:
        """Bytes per key: ``ceil(dimension / 8)``."""
        return int(self._blocks.shape[1])

    @property
    def packed(self) -> np.ndarray:
        """The keys bit-packed one row per key, as ``np.packbits(keys, axis=1)`` (a copy)."""
        rows = self._blocks.transpose(0, 2, 1).reshape(-1, self.n_bytes)[:self._n].copy()
        rows.setflags(write=False)
        return rows

    @property
    def nbytes(self) -> int:
        """Memory held by the keys (the last block is padded to ``BLOCK`` keys)."""
        return int(self._blocks.nbytes)

    def add(self, keys: object) -> None:
        """Append 0/1 keys (a 2-D array of ``dimension`` columns, bool or numeric)."""
        arr = check_keys(keys, self.dimension)
        packed = np.empty((arr.shape[0], self.n_bytes), dtype=np.uint8)
        for start, block in row_blocks(arr, progress="packing keys" if self.progress else None):
            bad = (block != 0) & (block != 1)
            if arr.dtype != np.bool_ and bad.any():
                row, col = np.argwhere(bad)[0]
                raise ValueError(f"keys must be 0/1 for a bit-packed index: "
                                 f"keys[{start + row}, {col}] = {block[row, col]}")
            packed[start:start + block.shape[0]] = np.packbits(block.astype(np.bool_), axis=1)
        self._append(packed)

    def add_packed(self, packed: object) -> None:
        """Append keys given bit-packed, as ``np.packbits(keys, axis=1)`` returns them."""
        arr = real_matrix(packed, "packed")
        if arr.dtype != np.uint8:
            raise TypeError(f"packed must have dtype uint8, got {arr.dtype}")
        if arr.ndim != 2 or arr.shape[1] != self.n_bytes:
            raise ValueError(f"packed must have shape (n, {self.n_bytes}) for dimension "
                             f"{self.dimension}, got {arr.shape}")
        spare = 8 * self.n_bytes - self.dimension
        if spare and arr.shape[0] and np.any(arr[:, -1] & np.uint8((1 << spare) - 1)):
            raise ValueError(f"packed has bits set beyond dimension {self.dimension}")
        self._append(arr)

    def _append(self, packed: np.ndarray) -> None:
        if not packed.shape[0]:
            return
        total = self._n + packed.shape[0]
        missing = -(-total // BLOCK) - self._blocks.shape[0]
        if missing > 0:
            self._blocks = np.concatenate(
                [self._blocks, np.zeros((missing, self.n_bytes, BLOCK), dtype=np.uint8)])
        for start in range(0, packed.shape[0], 65536):
            rows = packed[start:start + 65536]
            ids = self._n + start + np.arange(rows.shape[0])
            self._blocks[ids // BLOCK, :, ids % BLOCK] = rows
            pop = int(_POPCOUNT[rows].sum(axis=1).max())
            self._max_popcount = max(self._max_popcount, pop)
        self._n = total

    def _padded(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(8 * self.n_bytes)
        out[:v.size] = v
        return out

    def _scan(self, v: np.ndarray, absolute: bool) -> tuple[np.ndarray, float]:
        quantized, _, scaled_l1 = _quantize(self._padded(v))
        table = _byte_tables(quantized)
        if self._kernels is None:
            scores = _numpy_scan(self._blocks, table, absolute)
        else:
            threads = self.threads or self._kernels.default_threads()
            scores = self._kernels.scan(self._blocks, table, absolute, threads)
        scores = scores[:self._n]  # the padding keys of the last block
        # Quantisation moves a key's score by at most popcount / 2 integer units; the float64
        # sums of ``score`` are within gamma * ||v||_1 of the truth (in the same units).
        rounding = gamma(self.dimension + 1, U64) * scaled_l1
        return scores, self._max_popcount + 2.0 * rounding + 1.0

    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        kernel = self._kernels.exact_scores if self._kernels is not None else _numpy_exact
        return kernel(self._blocks, ids, self._padded(v))

    def _payload(self) -> dict[str, np.ndarray]:
        return {"packed": self.packed}

    @classmethod
    def from_payload(cls, dimension: int, payload: dict[str, np.ndarray], *,
                     private: bool = False, backend: str = "auto",
                     threads: int | None = None) -> BitPackedIndex:
        index = cls(dimension, private=private, backend=backend, threads=threads)
        index.add_packed(payload["packed"])
        return index
