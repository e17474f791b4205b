"""FlatIndex: an exact scan of dense keys in float32 (float64 where float32 would round them)."""

from __future__ import annotations

import math

import numpy as np

from fastmwem.indices._checks import check_dimension, check_keys, row_blocks
from fastmwem.indices._common import ExactScanIndex
from fastmwem.indices._saved import IndexFileError, SavedArchive
from fastmwem.indices._topk import U32, U64, gamma, holder_bound, update_norms

__all__ = ["FlatIndex", "exact_dot"]

# Rows rescored per block: bounds the float64 temporary of a wide rescoring (e.g. all keys tie).
_BLOCK = 8192
# Below the float32 normal range a product or a converted query entry may lose everything (flush
# to zero); each such loss is below 2^-126 times the key entry in the units of the scaled query.
_TINY32 = 2.0**-125


def exact_dot(rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``rows @ v`` in float64, the same bits for a key whatever rows come with it.

    A row-wise ``sum`` of the products depends only on the row, unlike a BLAS product whose
    blocking varies with the shape; the lazy mechanism compares scores from ``search`` with scores
    from ``score``, so both must round a key's score identically.
    """
    out = np.empty(rows.shape[0])
    for s in range(0, rows.shape[0], _BLOCK):
        block = np.asarray(rows[s:s + _BLOCK], dtype=np.float64)
        out[s:s + block.shape[0]] = np.multiply(block, v).sum(axis=1)
    return out


class FlatIndex(ExactScanIndex):
    """Exact maximum inner-product search by a full scan: the ground truth among the indices.

    Keys are stored in float32 when that is lossless (0/1 or small-integer keys, float32 data),
    else in float64. A search scans every key with one BLAS product in the storage precision, then
    rescores exactly, in float64, every key within twice a proven rounding bound of the k-th
    scanned score, so the returned set is a true top-k and the returned scores are exactly what
    ``score`` gives (see ``indices._topk``).

    Args:
        dimension: key length; taken from the first ``add`` when omitted.
        private: the keys are private (``save`` then refuses).
        progress: show a progress bar on stderr for an ``add`` longer than two seconds.

    >>> index = FlatIndex()
    >>> index.add(np.eye(3))
    >>> index.search(np.array([[0.5, 2.0, -1.0]]), 2)[1]
    array([[1, 0]])
    """

    kind = "flat"

    def __init__(self, dimension: int | None = None, *, private: bool = False,
                 progress: bool = True) -> None:
        super().__init__(None if dimension is None else check_dimension(dimension),
                         private=private)
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be a bool, got {type(progress).__name__}")
        self.progress = progress
        self._keys: np.ndarray | None = None
        self._norms = (0.0, 0.0, 0.0)  # largest L1, L2 and Linf norm of a key

    @property
    def n_keys(self) -> int:
        return 0 if self._keys is None else int(self._keys.shape[0])

    @property
    def storage(self) -> np.dtype:
        """dtype the keys are kept in (float32 when lossless)."""
        return np.dtype(np.float32) if self._keys is None else self._keys.dtype

    def add(self, keys: object) -> None:
        """Append keys (rows of a finite 2-D array); their ids continue from ``n_keys``."""
        arr = check_keys(keys, self._dimension)
        storage = self.storage
        if storage == np.float32 and not np.can_cast(arr.dtype, np.float32, "safe"):
            # e.g. float64 or int64 input: keep float32 only if every entry survives the rounding
            if not all(np.array_equal(block.astype(np.float32), block)
                       for _, block in row_blocks(arr)):
                storage = np.dtype(np.float64)
        if self._keys is not None and self._keys.dtype != storage:
            self._keys = self._keys.astype(storage)
        new = np.empty(arr.shape, dtype=storage)
        label = "building flat index" if self.progress else None
        for start, block in row_blocks(arr, progress=label):
            new[start:start + block.shape[0]] = block
            self._norms = update_norms(self._norms, block)
        self._keys = new if self._keys is None else np.concatenate([self._keys, new])
        self._dimension = arr.shape[1]

    def keys(self) -> np.ndarray:
        """A float64 copy of the stored keys."""
        return np.empty((0, self.dimension)) if self._keys is None else self._keys.astype(np.float64)

    def _scan(self, v: np.ndarray, absolute: bool) -> tuple[np.ndarray, float]:
        keys = self._stored()
        d = keys.shape[1]
        top = float(np.abs(v).max())
        # Scaling by a power of two is exact and keeps |v'| < 1: no overflow of a float32 sum
        # unless a key's L1 norm nears the float32 range, which falls back to float64 below.
        shift = math.frexp(top)[1] if top > 0 else 0
        scaled = np.ldexp(v, -shift)
        wide = keys.dtype == np.float64 or self._norms[0] >= 1e37
        unit = U64 if wide else U32
        approx = (keys.astype(np.float64, copy=False) if wide and keys.dtype != np.float64
                  else keys) @ scaled.astype(np.float64 if wide else np.float32)
        if not np.all(np.isfinite(approx)):  # cannot happen for finite keys below 1e37; a guard
            approx = self._exact(np.arange(self.n_keys), scaled)
        if absolute:
            np.abs(approx, out=approx)
        spread = holder_bound(self._norms, scaled)
        scan_error = gamma(d + 3, unit) * spread + (0.0 if wide else (self._norms[0] + d) * _TINY32)
        exact_error = gamma(d + 1, U64) * spread
        return approx, 2.0 * (scan_error + exact_error) * (1.0 + 1e-9)

    def _stored(self) -> np.ndarray:
        """The stored keys; none (a 0-row matrix) before the first ``add``."""
        if self._keys is None:
            return np.empty((0, self.dimension), dtype=self.storage)
        return self._keys

    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        return exact_dot(self._stored()[ids], v)

    def _payload(self) -> dict[str, np.ndarray]:
        return {"keys": self._stored()}

    @classmethod
    def from_archive(cls, dimension: int, archive: SavedArchive, *, prefix: str = "",
                     private: bool = False) -> FlatIndex:
        """The index saved in ``archive`` (its keys ``<prefix>keys``, checked before reading)."""
        if not prefix:
            archive.expect({"format", "kind", "dimension", "keys"})
        archive.check(f"{prefix}keys", "f", (None, dimension), (4, 8))
        index = cls(dimension, private=private)
        try:
            index.add(archive.read(f"{prefix}keys"))
        except (ValueError, TypeError) as exc:
            raise IndexFileError(f"its keys are invalid: {exc}") from None
        return index
