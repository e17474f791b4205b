"""BitPackedIndex: exact maximum inner-product search over 0/1 keys stored one bit per entry."""

from __future__ import annotations

import math
import sys
from types import ModuleType

import numpy as np

from fastmwem._validation import check_int
from fastmwem.indices._checks import check_dimension, check_keys, real_matrix, row_blocks
from fastmwem.indices._common import ExactScanIndex
from fastmwem.indices._saved import IndexFileError, SavedArchive
from fastmwem.indices._topk import U64, best_k, gamma

__all__ = ["BitPackedIndex", "numba_available"]

_BACKENDS = ("auto", "numba", "numpy")
#: Keys per storage block: a block's int64 scores (32 KiB) stay in L1 cache during a scan.
BLOCK = 4096
# Blocks per step of the numpy scan, and ids per step of exact scoring: bound the buffers.
_GROUP = 16
_ROWS = 4096
_INT_LIMIT = 2**31 - 1
# The largest share of the scores' spread the window of the compiled scan is left (_extra_bits).
_SHARE = 0.3
# _POPCOUNT[b] = number of set bits of the byte value b.
_POPCOUNT = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(
    axis=1).astype(np.uint8)
# Where byte j % 8 of a stored 64-bit word sits in memory (the words hold the packed bytes
# little-endian, whatever the machine's byte order).
_LITTLE = sys.byteorder == "little"


def _popcounts(words: np.ndarray) -> np.ndarray:
    """Set bits of each row of 64-bit words (numpy 2's bit count when there is one: a table
    look-up per byte took a third of a 10^6-key build)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return count(words).sum(axis=1, dtype=np.int64)
    return _POPCOUNT[words.view(np.uint8)].sum(axis=1, dtype=np.int64)


def _numba_kernels() -> ModuleType | None:
    # Imported on first use: loading numba takes about half a second.
    from fastmwem.indices.bitpacked import _kernels_numba

    return _kernels_numba if _kernels_numba.AVAILABLE else None


def _numba_exact() -> ModuleType:
    # Loaded with the kernels above, when numba is installed.
    from fastmwem.indices.bitpacked import _exact_numba

    return _exact_numba


def numba_available() -> bool:
    """Whether the compiled kernels can be used (``pip install "fastmwem[numba]"``)."""
    return _numba_kernels() is not None


def _byte_column(words: np.ndarray, j: int) -> np.ndarray:
    """Byte ``j`` of every key of ``words`` (shape ``(blocks, width)``, a strided view)."""
    offset = j % 8 if _LITTLE else 7 - j % 8
    return words.view(np.uint8)[:, j // 8, offset::8]


def _numpy_scan(words: np.ndarray, table: np.ndarray, absolute: bool) -> np.ndarray:
    n_blocks, width = words.shape[0], words.shape[2]
    out = np.zeros((n_blocks, width), dtype=np.int64)
    tables = table.reshape(-1, 256)
    for s in range(0, n_blocks, _GROUP):
        acc = out[s:s + _GROUP]
        for j in range(tables.shape[0]):
            acc += np.take(tables[j], _byte_column(words[s:s + _GROUP], j))
    flat = out.reshape(-1)
    return np.abs(flat, out=flat) if absolute else flat


def _numpy_rows(words: np.ndarray, ids: np.ndarray) -> np.ndarray:
    width = words.shape[2]
    return words[ids // width, :, ids % width]


def _numpy_sums(rows: np.ndarray, tables: np.ndarray) -> np.ndarray:
    out = np.empty(rows.shape[0])
    for s in range(0, rows.shape[0], _ROWS):
        chunk = rows[s:s + _ROWS]
        acc = np.zeros(chunk.shape[0])
        for j in range(tables.shape[0]):
            # One table per byte, added in ascending byte order: the compiled kernel's sums,
            # bit for bit.
            byte = (chunk[:, j // 8] >> np.uint64(8 * (j % 8))) & np.uint64(0xFF)
            acc += np.take(tables[j], byte)
        out[s:s + chunk.shape[0]] = acc
    return out


def _byte_tables(cells: np.ndarray) -> np.ndarray:
    """Flat ``(len(cells) // 8) * 256`` table of subset sums of each group of 8 cells (the dtype
    of ``cells``); entry ``256 j + b`` sums the cells of byte ``j`` set in the byte value ``b``."""
    c = cells.size // 8
    table = np.zeros((c, 256), dtype=cells.dtype)
    per_byte = cells.reshape(c, 8)
    for p in range(8):
        # Byte values in [2^p, 2^(p+1)) add cell 7 - p (np.packbits is big-endian) to the
        # values below 2^p.
        np.add(table[:, :1 << p], per_byte[:, 7 - p:8 - p], out=table[:, 1 << p:2 << p])
    return table.reshape(-1)


def _quantize(v: np.ndarray) -> tuple[np.ndarray, float]:
    """``(round(v 2^p), sum|v| 2^p)`` with the largest ``p`` whose subset sums fit in int32.

    The L1 norm is taken on ``v`` scaled by a power of two to a maximum in [0.5, 1), so neither
    huge nor subnormal queries overflow it.
    """
    top = float(np.abs(v).max())
    if top == 0.0:
        return np.zeros(v.size, dtype=np.int64), 0.0
    shift = math.frexp(top)[1]
    total = float(np.abs(np.ldexp(v, -shift)).sum())
    power = math.floor(math.log2((_INT_LIMIT - v.size) / (total * (1.0 + 1e-6)))) - shift
    while True:
        quantized = np.rint(np.ldexp(v, power)).astype(np.int64)
        if int(np.abs(quantized).sum()) <= _INT_LIMIT:
            return quantized, math.ldexp(total, power + shift)
        power -= 1  # float rounding of ``total``; never more than once in practice


def _plane_quantize(v: np.ndarray, n_planes: int) -> tuple[np.ndarray, float, float]:
    """``v`` quantised to ``n_planes``-bit integers ``q = round(v 2^p)`` (``p`` as large as the
    largest entry allows), with bounds in units of ``2^-p``.

    Returns ``(q, residual, l1)``: every 0/1 key's ``<key, v 2^p - q>`` lies within
    ``residual`` of 0 (the larger of the summed positive and negative remainders, rounded up);
    ``l1`` bounds ``sum |v| 2^p``.
    """
    top = float(np.abs(v).max())
    power = n_planes - 1 - math.frexp(top)[1] if top > 0.0 else 0
    scaled = np.ldexp(v, power)  # exact, except results below the normal range (see caller)
    limit = 2 ** (n_planes - 1)
    q = np.clip(np.rint(scaled), -limit, limit - 1).astype(np.int64)
    rest = scaled - q  # exact (Sterbenz): q is 0 or within a factor 2 of scaled
    slack = 1.0 + 2.0 * gamma(v.size, U64)  # float sums of v.size terms, rounded up
    residual = max(float(rest[rest > 0].sum()), -float(rest[rest < 0].sum())) * slack
    return q, residual, float(np.abs(scaled).sum()) * slack


def _extra_bits(q: np.ndarray, window: int, most: int) -> int:
    """Bits beyond those of ``q`` (at most ``most``) for the compiled scan, given the 10-bit
    ``q`` and its window.

    Against 0/1 keys whose cells are set at random, a query's scores spread about half its L2
    norm; one dominant cell shifts them all alike (keys with it, keys without). The window's
    share of that spread (without the largest entry of ``q``) sets how many keys lie within
    the window of the k-th best and are rescored: in the h - n a of MWEM's first rounds on a
    skewed table most of them (and the threads' buffers overflow into a second look). Each
    bit halves the share, for a longer scan (about 16 popcounts per key at |X| = 1024, which
    pays for a few hundred keys less to rescore): the fewest bits that bring it to
    ``_SHARE`` (on MWEM's vectors at |X| = 256 and 1024 the fastest count, or within 5% of
    it). Only the speed depends on this choice: every window is a proven bound for its own
    quantisation, so the search returns the same true top-k.
    """
    if window <= 1:  # nothing rounded away: finer planes cannot narrow it
        return 0
    squares = q.astype(np.float64) ** 2
    rest = float(squares.sum() - squares.max())
    spread = 0.5 * math.sqrt(rest)
    if window <= _SHARE * spread:
        return 0
    if window >= _SHARE * spread * 2**most:
        return most
    return min(most, math.ceil(math.log2(window / (_SHARE * spread))))


def _wide(q: np.ndarray, window: int) -> bool:
    """Whether a search should use the wide planes (more than 10 bits, see ``_extra_bits``),
    given the 10-plane ``q`` and its window."""
    return _extra_bits(q, window, 1) > 0


class BitPackedIndex(ExactScanIndex):
    """Exact maximum inner-product search over 0/1 keys, 8 keys' entries per byte.

    Keys are bit-packed like ``np.packbits(keys, axis=1)`` (big-endian within a byte, the layout
    of ``RandomCountingQueries.packed``), 32 times smaller than float32, and stored in blocks of
    ``BLOCK`` keys, one 64-bit word column after another within a block, so that a scan runs
    down columns. A search quantises the query to integers ``q = round(v 2^p)``, scores every
    key exactly in integers, and rescores in float64 only the keys within the quantisation's
    proven error of the k-th best integer score, which gives a true top-k (``indices._topk``).
    ``score`` is the float64 sum of one table entry per key byte (the sum of the query over the
    byte's set entries), in ascending byte order.

    With numba (``pip install "fastmwem[numba]"``) the scan is compiled: ``q`` has 10 bits (11
    to 16 for queries that 10 bits resolve too coarsely, such as a few dominant entries among
    many small ones), held as bit planes, and a key's integer score is a few vectorised
    popcounts of its words; the threads take blocks of keys from a shared counter and keep only
    the keys near the running k-th best score, so the rest of the search handles a few thousand
    keys.
    Without numba, a numpy scan (several times slower) adds one table look-up per key byte with
    ``q`` as fine as int32 sums allow. Both return identical results.

    Args:
        dimension: key length (number of cells).
        private: the keys are private (``save`` then refuses).
        backend: ``"auto"`` (numba when installed), ``"numba"`` or ``"numpy"``.
        progress: show a progress bar on stderr for an ``add`` longer than two seconds.
        threads: threads of the compiled scan (default: numba's, every core). They take
            blocks of keys from a shared counter, so a thread slowed by other work on its core
            takes fewer.

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
        self._exact_kernels = _numba_exact() if kernels is not None else None
        self._n_bytes = -(-self.dimension // 8)
        # words[b, w, r] = word w (packed bytes 8w .. 8w + 7, little-endian) of key b * BLOCK + r
        self._words = np.zeros((0, -(-self._n_bytes // 8), BLOCK), dtype=np.uint64)
        self._n = 0
        self._max_popcount = 0
        self._last_tables: tuple[bytes, np.ndarray] | None = None
        self._buffers: dict[str, np.ndarray] | None = {}
        #: Compiled searches (one pass over the keys each), those that took a second look at
        #: some sub-blocks, and the keys those rescanned (diagnostics for tests and benchmarks).
        self.searches = 0
        self.second_looks = 0
        self.rescanned_keys = 0
        #: Planes of the last compiled search or scan, and the searches that used the wide ones.
        self.last_planes = 0
        #: Keys the last compiled search rescored exactly (those within its window).
        self.last_rescored = 0
        self.wide_searches = 0

    @property
    def n_keys(self) -> int:
        return self._n

    @property
    def n_bytes(self) -> int:
        """Bytes per key: ``ceil(dimension / 8)``."""
        return self._n_bytes

    @property
    def packed(self) -> np.ndarray:
        """The keys bit-packed one row per key, as ``np.packbits(keys, axis=1)`` (a copy)."""
        rows = self._words.transpose(0, 2, 1).reshape(-1, self._words.shape[1])[:self._n]
        out = np.ascontiguousarray(rows.astype("<u8")).view(np.uint8)[:, :self._n_bytes].copy()
        out.setflags(write=False)
        return out

    @property
    def nbytes(self) -> int:
        """Memory held by the keys (8-byte words; the last block is padded to ``BLOCK`` keys)."""
        return int(self._words.nbytes)

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
        n_words = self._words.shape[1]
        missing = -(-total // BLOCK) - self._words.shape[0]
        if missing > 0 and not self._words.shape[0]:  # the first keys: no copy of nothing
            self._words = np.zeros((missing, n_words, BLOCK), dtype=np.uint64)
        elif missing > 0:
            self._words = np.concatenate(
                [self._words, np.zeros((missing, n_words, BLOCK), dtype=np.uint64)])
        if self._exact_kernels is not None:
            # One compiled pass: the words and the popcounts of every key as it goes by.
            pop = self._exact_kernels.fill_words(np.ascontiguousarray(packed), self._words,
                                                 self._n)
            self._max_popcount = max(self._max_popcount, pop)
            self._n = total
            return
        rows = np.zeros((BLOCK, 8 * n_words), dtype=np.uint8)
        start = 0
        while start < packed.shape[0]:
            # One storage block at a time: its keys' words, transposed into place (a scatter by
            # key ids took most of a 10^6-key build).
            b, r = divmod(self._n + start, BLOCK)
            part = packed[start:start + BLOCK - r]
            rows[:part.shape[0], :self.n_bytes] = part
            words = rows[:part.shape[0]].view("<u8")
            self._words[b, :, r:r + part.shape[0]] = words.T
            pop = int(_popcounts(words).max())
            self._max_popcount = max(self._max_popcount, pop)
            start += part.shape[0]
        self._n = total

    def _padded(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(8 * self.n_bytes)
        out[:v.size] = v
        return out

    def _exact_rounding(self, l1: float) -> float:
        """Bound on ``|score - <key, v>|`` for the float64 sums of ``score`` (units of ``l1``):
        a cell passes through at most 7 additions in its table and ``n_bytes`` in the sum."""
        return gamma(8 * self.n_bytes + 1, U64) * l1

    def _planes(self, v: np.ndarray) -> tuple[np.ndarray, int]:
        """The compiled scan's bit planes of ``v`` and its window (integer units): 10 planes, or
        when the 10-bit window is wide against the spread of the scores (``_wide``), 11 to 16
        bits (``_extra_bits``) on 16 planes (the scan skips those holding only sign bits)."""
        kernels = self._numba()
        padded = self._padded(v)
        n_planes = kernels.PLANES
        q, window = self._quantized(padded, n_planes)
        if _wide(q, window):
            # _wide holds exactly when _extra_bits adds one; were _wide replaced (tests force a
            # plane count), the wide planes get all their bits
            most = kernels.WIDE_PLANES - n_planes
            bits = n_planes + (_extra_bits(q, window, most) or most)
            n_planes = kernels.WIDE_PLANES
            q, window = self._quantized(padded, bits)
        self.last_planes = n_planes
        return kernels.bit_planes(q, self._words.shape[1], n_planes), window

    def _quantized(self, padded: np.ndarray, bits: int) -> tuple[np.ndarray, int]:
        """``padded`` on ``bits`` bits and the window: a proven bound on the gap between
        two keys' integer scores and their ``score`` values, for that quantisation."""
        q, residual, l1 = _plane_quantize(padded, bits)
        # Integer scores are within residual of <key, v 2^p>, and score() within the rounding
        # bound; the + 1 covers scaled entries of v below the normal float range.
        return q, math.floor(2.0 * (residual + self._exact_rounding(l1))) + 1

    def _threads(self) -> int:
        return self.threads or self._numba().default_threads()

    def _numba(self) -> ModuleType:
        """The compiled kernels (``indices.bitpacked._kernels_numba``)."""
        if self._kernels is None:  # only the numba backend's paths get here
            raise RuntimeError("the numba kernels are not loaded")
        return self._kernels

    def _scan(self, v: np.ndarray, absolute: bool) -> tuple[np.ndarray, float]:
        if self._kernels is not None:
            planes, window = self._planes(v)
            scores = self._kernels.scan(self._words, planes, absolute, self._threads())
            return scores[:self._n], window  # drop the padding keys of the last block
        quantized, scaled_l1 = _quantize(self._padded(v))
        scores = _numpy_scan(self._words, _byte_tables(quantized), absolute)[:self._n]
        # Quantisation moves a key's score by at most popcount / 2 integer units.
        return scores, self._max_popcount + 2.0 * self._exact_rounding(scaled_l1) + 1.0

    def _top(self, v: np.ndarray, k: int, absolute: bool) -> tuple[np.ndarray, np.ndarray]:
        if self._kernels is None or k >= self._n:
            return super()._top(v, k, absolute)
        planes, window = self._planes(v)
        # The search's working arrays, kept for the next one; a search running meanwhile on
        # another thread finds none and makes its own.
        buffers = self._buffers if self._buffers is not None else {}
        self._buffers = None
        try:
            ids, approx, rows, rescanned = self._kernels.top_candidates(
                self._words, planes, self._n, absolute, k, window, self._threads(), buffers)
        finally:
            self._buffers = buffers
        self.searches += 1
        self.wide_searches += planes.shape[1] != self._numba().PLANES
        if rescanned >= 0:
            self.second_looks += 1
            self.rescanned_keys += rescanned
        if self._exact_kernels is not None:  # the steps below in one compiled call
            scores, top, self.last_rescored = self._exact_kernels.window_top(
                self._words, ids, approx, k, window, self._tables(v), absolute, rows)
            return scores, top
        kth = np.partition(approx, approx.size - k)[approx.size - k]
        ids = ids[approx >= kth - window]
        self.last_rescored = ids.size
        exact = self._exact(ids, v)
        return best_k(ids, exact, k, key=np.abs(exact) if absolute else None)

    def _tables(self, v: np.ndarray) -> np.ndarray:
        # The last query's tables are kept: a lazy selection rescores its top window and then
        # its tail with the same query (at |X| = 1024 the tables take a tenth of a millisecond).
        key = v.tobytes()
        last = self._last_tables
        if last is not None and last[0] == key:
            return last[1]
        if self._exact_kernels is not None:
            tables = self._exact_kernels.byte_tables(v, self.n_bytes)
        else:
            tables = _byte_tables(self._padded(v)).reshape(self.n_bytes, 256)
        self._last_tables = (key, tables)
        return tables

    def _exact(self, ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self._exact_kernels is None:
            return _numpy_sums(_numpy_rows(self._words, ids), self._tables(v))
        return self._exact_kernels.rescore(self._words, ids, self._tables(v))

    def _payload(self) -> dict[str, np.ndarray]:
        return {"packed": self.packed}

    @classmethod
    def from_archive(cls, dimension: int, archive: SavedArchive, *, prefix: str = "",
                     private: bool = False, backend: str = "auto",
                     threads: int | None = None) -> BitPackedIndex:
        """The index saved in ``archive`` (its keys ``<prefix>packed``, checked before reading)."""
        if not prefix:
            archive.expect({"format", "kind", "dimension", "packed"})
        index = cls(dimension, private=private, backend=backend, threads=threads)
        archive.check(f"{prefix}packed", "u", (None, index.n_bytes), (1,))
        try:
            index.add_packed(archive.read(f"{prefix}packed"))
        except (ValueError, TypeError) as exc:
            raise IndexFileError(f"its keys are invalid: {exc}") from None
        return index
