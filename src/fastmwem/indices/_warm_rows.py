"""The key rows a warm-start index scans, with a proven bound on each scan's error.

Two stores of the keys ``[A_i, o_i]`` for queries ``[x, t]``, both able to scan some rows at a
query (approximate scores ``b_i`` with ``|b_i - a_i| <= E`` against the exact float64 scores
``a_i`` of ``WarmStartIndex.score``), keep the best of them, and hand out a subset:

* :class:`FloatRows`: the rows as given (float32 or float64), one BLAS product per scan.
* :class:`Int16Rows` (numba): each key as 16-bit integers times a power of two,
  ``[A_i, o_i] ~ s q_i``, half the bytes of float32 and a quarter of float64. A full scan is
  bound by memory traffic, so it is 2-4 times faster, and it keeps the best rows in the same
  pass (no partition of ``m`` scores). The rounding of the keys is part of the bound:
  ``|[A_i, o_i] . v - s q_i . v| <= s r |v|_1`` with ``r`` the largest rounding of an entry (in
  units of ``s``; at most 1), so every search stays exact (the window argument of
  ``indices._topk``).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Protocol

import numpy as np

from fastmwem.indices._topk import U32, U64, gamma, holder_bound

__all__ = ["Rows", "FloatRows", "Int16Rows", "largest", "join"]

# Rows quantised per step of a build (bounds the float64 temporary).
_BLOCK = 65536
# Largest magnitude of a 16-bit entry (the symmetric range: no -32768).
_Q = 32767
# Powers of two of rows and queries the compiled scan takes: far from float64's limits, so no
# product of the scan under- or overflows (other queries are scored exactly by the caller).
_POWER = 400
# Rows per block of the 16-bit store (a block's entries, 100 KB at d = 50, stay in L2 cache).
_WIDTH = 1024
# Blocks scored to guess the threshold of a full scan, spread over the keys.
_SAMPLED = 16
# Below float32's normal range an entry of the scaled query or a product loses at most this.
_TINY32 = 2.0**-148


def largest(values: np.ndarray, size: int) -> tuple[np.ndarray, float]:
    """Positions of the ``size`` largest values (any order) and the largest value left out
    (``-inf`` when none is)."""
    n = values.size
    if size >= n:
        return np.arange(n), -math.inf
    part = np.argpartition(values, n - size - 1)
    return part[n - size:], float(values[part[n - size - 1]])


class Rows(Protocol):
    """What a warm-start index scans."""

    granule: int  # a part (see ``part``) starts at a multiple of this many rows

    def __len__(self) -> int: ...

    def handles(self, v: np.ndarray) -> bool:
        """Whether ``scan`` bounds its error at ``v`` (else the caller scores exactly)."""

    def scan(self, v: np.ndarray) -> tuple[np.ndarray, float]:
        """Approximate scores of every row at ``v`` and a bound on their error."""

    def best(self, v: np.ndarray, size: int
             ) -> tuple[np.ndarray, np.ndarray, float, float, Rows]:
        """About the ``size`` best rows at ``v`` (positions, approximate scores), the best
        approximate score of the other rows, the error bound, and those rows."""

    def take(self, positions: np.ndarray) -> Rows:
        """The rows at ``positions``, in that order."""

    def head(self, count: int) -> Rows:
        """The first ``count`` rows (a view)."""

    def part(self, start: int, stop: int) -> Rows:
        """Rows ``start .. stop - 1`` (a view; ``start`` a multiple of ``granule``)."""


def _exact_rounding(dimension: int, norms: tuple[float, float, float], v: np.ndarray) -> float:
    """How far the exact float64 score (``exact_dot`` plus the offset term) can be from the real
    inner product, with an absolute term for results in the subnormal range."""
    return gamma(dimension + 3, U64) * holder_bound(norms, v) + 2.0**-1060


class FloatRows:
    """Rows as given; a scan is one BLAS product in their precision (see ``scan``)."""

    granule = 1  # a part may start at any row

    def __init__(self, rows: np.ndarray, offsets: np.ndarray, norms: tuple[float, float, float],
                 dimension: int) -> None:
        self.rows, self.offsets, self.norms, self.dimension = rows, offsets, norms, dimension

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def handles(self, v: np.ndarray) -> bool:
        return True

    def scan(self, v: np.ndarray) -> tuple[np.ndarray, float]:
        """Float32 rows are scanned in float32 (one BLAS pass, no copy), the query scaled by a
        power of two so that its entries stay in float32's normal range."""
        x, t = v[:-1], float(v[-1])
        rows, norms = self.rows, self.norms
        if rows.dtype == np.float32:
            top = float(np.abs(x).max(initial=0.0))
            shift = math.frexp(top)[1] if top > 0 else 0
            scaled = np.ldexp(x, -shift)
            approx = (rows @ scaled.astype(np.float32)).astype(np.float64)
            approx *= math.ldexp(1.0, shift)  # exact: a power of two
            # float32 rounding of the query and of the d-term dot product, plus entries and
            # products below float32's normal range, all scaled back by 2**shift.
            error = math.ldexp(gamma(rows.shape[1] + 3, U32) * holder_bound(norms, scaled)
                               + (norms[0] + rows.shape[1]) * 2.0**-125, shift)
        else:
            approx = rows @ x
            error = 0.0
        if t == 1.0:  # the LP's queries: no temporary for t * offsets
            approx += self.offsets
        else:
            approx += t * self.offsets
        return approx, error + _exact_rounding(self.dimension, norms, v)

    def best(self, v: np.ndarray, size: int
             ) -> tuple[np.ndarray, np.ndarray, float, float, FloatRows]:
        approx, error = self.scan(v)
        positions, rest = largest(approx, size)
        return positions, approx[positions], rest, error, self.take(positions)

    def take(self, positions: np.ndarray) -> FloatRows:
        return FloatRows(self.rows[positions], self.offsets[positions], self.norms,
                         self.dimension)

    def head(self, count: int) -> FloatRows:
        return FloatRows(self.rows[:count], self.offsets[:count], self.norms, self.dimension)

    def part(self, start: int, stop: int) -> FloatRows:
        return FloatRows(self.rows[start:stop], self.offsets[start:stop], self.norms,
                         self.dimension)


class Int16Rows:
    """Keys ``[A_i, o_i]`` as 16-bit integers ``q_i`` times one power of two ``s``
    (``[A_i, o_i] ~ s q_i``), scanned by compiled float32 dot products
    (``indices._warmkernels_numba``): a score is ``fl32(q_i . y) s 2^p`` for the query scaled
    to ``y = [x, t] 2^-p``, the last product exact.

    The entries are stored column by column in blocks of rows (``cols[b, j, r]``), so that a
    scan vectorises across the rows. One scale for all rows, from the largest entry: the error
    bound is the largest row's anyway (one bound serves every key), and a scan then reads
    nothing but the entries. Build with :meth:`build`; ``unit`` is the largest
    ``|key_ij / s - q_ij|``.
    """

    granule = _WIDTH  # a part starts at a block

    def __init__(self, cols: np.ndarray, n: int, scale: float, unit: float,
                 norms: tuple[float, float, float], dimension: int, kernels: ModuleType) -> None:
        self._cols, self._n = cols, n
        self.scale, self.unit = scale, unit
        self.norms, self.dimension, self._kernels = norms, dimension, kernels

    @property
    def cols(self) -> np.ndarray:
        """The entries, ``(blocks, d + 1, width)``; a region handed out by a full scan is a
        strided view of a larger buffer until its first scan copies it."""
        if not self._cols.flags.c_contiguous:
            self._cols = np.ascontiguousarray(self._cols)
        return self._cols

    @classmethod
    def build(cls, A: np.ndarray, offsets: np.ndarray, norms: tuple[float, float, float],
              dimension: int) -> Int16Rows | None:
        """The 16-bit rows of ``[A, offsets]``, or None without numba or when the largest entry
        (``norms[2]``) lies outside the range the scan takes (then the float rows are
        scanned)."""
        from fastmwem.indices.bitpacked import numba_available

        top = norms[2]
        if not numba_available() or not math.isfinite(top) or (
                top > 0 and abs(math.frexp(top)[1]) > _POWER):
            return None
        from fastmwem.indices import _warmkernels_numba as kernels

        power = math.frexp(top)[1] - 15 if top > 0 else 0  # every entry below 2^15 s
        m, d = A.shape
        cols = np.zeros((-(-m // _WIDTH), d + 1, _WIDTH), dtype=np.int16)
        unit = 0.0
        for b in range(cols.shape[0]):
            rows = slice(b * _WIDTH, (b + 1) * _WIDTH)
            block = A[rows]
            if block.dtype not in (np.float32, np.float64):
                block = block.astype(np.float64)
            worst = kernels.quantize(np.ascontiguousarray(block),
                                     np.ascontiguousarray(offsets[rows]), power, cols[b])
            unit = max(unit, worst)
        return cls(cols, m, math.ldexp(1.0, power), unit, norms, dimension, kernels)

    def __len__(self) -> int:
        return self._n

    def handles(self, v: np.ndarray) -> bool:
        top = float(np.abs(v).max(initial=0.0))
        return bool(np.all(np.isfinite(v))) and (top == 0.0 or abs(math.frexp(top)[1]) <= _POWER)

    def _query(self, v: np.ndarray) -> tuple[np.ndarray, float, float]:
        """The scaled float32 query ``y = v 2^-p``, ``s 2^p`` and the error bound."""
        top = float(np.abs(v).max(initial=0.0))
        shift = math.frexp(top)[1] if top > 0 else 0
        y = np.ldexp(v, -shift).astype(np.float32)
        power = math.ldexp(1.0, shift)
        v1 = float(np.abs(v).sum()) * (1.0 + gamma(v.size, U64))
        s = self.scale
        # The keys rounded to s q: s r |v|_1. The float32 dot product in any order, with the
        # rounding of y and entries or products below float32's normal range:
        # s 2^15 (gamma |v|_1 + n 2^-148 2^p). The float64 product by s 2^p is exact.
        error = (s * self.unit * v1
                 + s * 2.0**15 * (gamma(v.size + 2, U32) * v1 + v.size * _TINY32 * power))
        return y, s * power, (error + _exact_rounding(self.dimension, self.norms, v)) * 1.000001

    def scan(self, v: np.ndarray) -> tuple[np.ndarray, float]:
        y, scale, error = self._query(v)
        cols = self.cols
        dots = self._kernels.scan(cols, np.arange(cols.shape[0]), y)[:self._n]
        approx = dots.astype(np.float64)
        approx *= scale  # exact: a power of two
        return approx, error

    def best(self, v: np.ndarray, size: int
             ) -> tuple[np.ndarray, np.ndarray, float, float, Int16Rows]:
        """One pass: the rows reaching a threshold guessed from a sample of blocks spread over
        the keys, with their entries copied while in cache. Any threshold gives a valid region,
        since the rows left out are bounded by it (the guess only sets the region's size), at
        most ``2 size + 4096`` rows."""
        n = len(self)
        full = n // _WIDTH  # blocks without padding rows
        if full < 4 * _SAMPLED or size >= n:
            approx, error = self.scan(v)
            positions, rest = largest(approx, size)
            return positions, approx[positions], rest, error, self.take(positions)
        y, scale, error = self._query(v)
        sampled = np.arange(_SAMPLED) * (full // _SAMPLED)
        sample = self._kernels.scan(self.cols, sampled, y).astype(np.float64) * scale
        rank = min(sample.size, max(1, math.ceil(size * sample.size / n)))
        threshold = float(np.partition(sample, sample.size - rank)[sample.size - rank])
        positions, dots, region, rest = self._kernels.select(
            self.cols, n, y, scale, threshold, min(n, 2 * size + 4096))
        kept = Int16Rows(region[None], positions.size, self.scale, self.unit, self.norms,
                         self.dimension, self._kernels)
        return positions, dots.astype(np.float64) * scale, rest, error, kept

    def take(self, positions: np.ndarray) -> Int16Rows:
        positions = np.asarray(positions, dtype=np.int64)
        cols = self.cols
        region = (np.take(cols[0], positions, axis=1) if cols.shape[0] == 1  # one block: numpy
                  else self._kernels.gather(cols, positions))
        return Int16Rows(region[None], region.shape[1], self.scale, self.unit, self.norms,
                         self.dimension, self._kernels)

    def head(self, count: int) -> Int16Rows:
        return self.take(np.arange(count))

    def part(self, start: int, stop: int) -> Int16Rows:
        if start % _WIDTH or not 0 <= start < stop <= self._n:
            raise ValueError("a part of 16-bit rows starts at a block and is not empty")
        return Int16Rows(self.cols[start // _WIDTH:-(-stop // _WIDTH)], stop - start,
                         self.scale, self.unit, self.norms, self.dimension, self._kernels)


def join(parts: list[Rows]) -> Rows:
    """The rows of ``parts`` end to end, as one store of their kind (the parts of one store:
    16-bit rows share its scale, so one scan bounds them all)."""
    compact = [p for p in parts if isinstance(p, Int16Rows)]
    if compact and len(compact) == len(parts):
        first = compact[0]
        cols = np.concatenate([p.cols.transpose(1, 0, 2).reshape(p.cols.shape[1], -1)[:, :len(p)]
                               for p in compact], axis=1)
        return Int16Rows(cols[None], cols.shape[1], first.scale, first.unit, first.norms,
                         first.dimension, first._kernels)
    floats = [p for p in parts if isinstance(p, FloatRows)]
    if len(floats) != len(parts):
        raise TypeError("only rows of one kind are joined")
    return FloatRows(np.concatenate([p.rows for p in floats]),
                     np.concatenate([p.offsets for p in floats]), floats[0].norms,
                     floats[0].dimension)
