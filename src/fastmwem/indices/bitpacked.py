"""BitPackedIndex: exact maximum inner-product search over 0/1 keys stored one bit per entry."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np

from fastmwem.indices._checks import check_dimension, check_keys, real_matrix
from fastmwem.indices._common import ExactScanIndex
from fastmwem.indices._topk import U64, gamma

__all__ = ["BitPackedIndex", "numba_available"]

_BACKENDS = ("auto", "numba", "numpy")
# Rows per block of the numpy kernels: bounds their index and unpacked-bit buffers.
_ROWS = 4096
_INT_LIMIT = 2**31 - 1
# _POPCOUNT[b] = number of set bits of the byte value b.
_POPCOUNT = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1)


def _numba_kernels() -> ModuleType | None:
    try:
        from fastmwem.indices import _bitkernels_numba
    except ImportError:
        return None
    return _bitkernels_numba


def numba_available() -> bool:
    """Whether the compiled kernels can be used (``pip install "fastmwem[numba]"``)."""
    return _numba_kernels() is not None


def _numpy_scan(packed: np.ndarray, table: np.ndarray) -> np.ndarray:
    n, nb = packed.shape
    out = np.empty(n, dtype=np.int64)
    offsets = np.arange(nb, dtype=np.intp) * 256
    for s in range(0, n, _ROWS):
        index = np.add(packed[s:s + _ROWS], offsets, dtype=np.intp)
        out[s:s + index.shape[0]] = np.take(table, index).sum(axis=1, dtype=np.int64)
    return out


def _numpy_exact(packed: np.ndarray, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = np.empty(ids.size)
    for s in range(0, ids.size, _ROWS):
        bits = np.unpackbits(packed[ids[s:s + _ROWS]], axis=1)
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
    of ``RandomCountingQueries.packed``), 32 times smaller than float32. A search quantises the
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

    >>> index = BitPackedIndex(4)
    >>> index.add([[1, 0, 1, 0], [0, 1, 1, 1], [1, 1, 1, 1]])
    >>> index.search([[0.5, -1.0, 2.0, 0.25]], 2)
    (array([[2.5 , 1.75]]), array([[0, 2]]))
    """

    kind = "bitpacked"

    def __init__(self, dimension: int, *, private: bool = False, backend: str = "auto") -> None:
        super().__init__(check_dimension(dimension), private=private)
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        kernels = _numba_kernels() if backend != "numpy" else None
        if backend == "numba" and kernels is None:
            raise ImportError('backend="numba" needs numba: pip install "fastmwem[numba]"')
        self.backend = "numba" if kernels is not None else "numpy"
        self._kernels = kernels
        self._packed = np.empty((0, -(-self._dimension // 8)), dtype=np.uint8)
        self._max_popcount = 0

    @property
    def n_keys(self) -> int:
        return int(self._packed.shape[0])

    @property
    def packed(self) -> np.ndarray:
        """The keys, bit-packed (read-only view)."""
        view = self._packed.view()
        view.setflags(write=False)
        return view

    def add(self, keys: object) -> None:
        """Append 0/1 keys (a 2-D array of ``dimension`` columns, bool or numeric)."""
        arr = check_keys(keys, self.dimension)
        if arr.dtype != np.bool_ and not np.all((arr == 0) | (arr == 1)):
            row, col = np.argwhere((arr != 0) & (arr != 1))[0]
            raise ValueError(f"keys must be 0/1 for a bit-packed index: keys[{row}, {col}] = "
                             f"{arr[row, col]}")
        self._append(np.packbits(arr.astype(np.bool_), axis=1))

    def add_packed(self, packed: object) -> None:
        """Append keys given bit-packed, as ``np.packbits(keys, axis=1)`` returns them."""
        arr = real_matrix(packed, "packed")
        n_bytes = self._packed.shape[1]
        if arr.dtype != np.uint8:
            raise TypeError(f"packed must have dtype uint8, got {arr.dtype}")
        if arr.ndim != 2 or arr.shape[1] != n_bytes:
            raise ValueError(f"packed must have shape (n, {n_bytes}) for dimension "
                             f"{self.dimension}, got {arr.shape}")
        spare = 8 * n_bytes - self.dimension
        if spare and arr.shape[0] and np.any(arr[:, -1] & np.uint8((1 << spare) - 1)):
            raise ValueError(f"packed has bits set beyond dimension {self.dimension}")
        self._append(np.ascontiguousarray(arr))

    def _append(self, packed: np.ndarray) -> None:
        if packed.shape[0]:
            pop = int(_POPCOUNT[packed].sum(axis=1).max())
            self._max_popcount = max(self._max_popcount, pop)
            self._packed = np.concatenate([self._packed, packed])

    def _padded(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(8 * self._packed.shape[1])
        out[:v.size] = v
        return out

    def _scan(self, v: np.ndarray) -> tuple[np.ndarray, float]:
        quantized, _, scaled_l1 = _quantize(self._padded(v))
        table = _byte_tables(quantized)
        scores = (self._kernels.scan if self._kernels is not None else _numpy_scan)(
            self._packed, table)
        # Quantisation moves a key's score by at most popcount / 2 integer units; the float64
        # sums of ``score`` are within gamma * ||v||_1 of the truth (in the same units).
        rounding = gamma(self.dimension + 1, U64) * scaled_l1
        return scores, self._max_popcount + 2.0 * rounding + 1.0

    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        kernel = self._kernels.exact_scores if self._kernels is not None else _numpy_exact
        return kernel(self._packed, ids, self._padded(v))

    def _payload(self) -> dict[str, np.ndarray]:
        return {"packed": self._packed}

    @classmethod
    def from_payload(cls, dimension: int, payload: dict[str, np.ndarray], *,
                     private: bool = False, backend: str = "auto") -> BitPackedIndex:
        index = cls(dimension, private=private, backend=backend)
        index.add_packed(payload["packed"])
        return index
