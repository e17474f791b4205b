"""The bit-packed index's searches on its compiled kernels (numba, when installed): a query's
bit planes and scoring plan, the scan, and the search for the top candidates.

A query is quantised to ``P``-bit integers ``q`` (two's complement) held as bit planes,
``planes[w, p]`` = bit ``p`` of ``q`` over the cells of key word ``w``; ``P`` is ``PLANES`` or
``WIDE_PLANES``, read from the planes' shape. ``_make_plan`` groups the key words 4 by 4 and
scores each group on only as many planes as the widest of its cells needs (MWEM's queries on 16
planes need about 12 per word, a word of zeros none); ``indices.bitpacked._scan_numba`` holds the
compiled passes over the keys, one per plane count.

``top_candidates`` scans and keeps, per thread, the keys within a window of a running k-th best
score, so nothing of size ``n`` is written; ``indices.bitpacked._exact_numba`` rescores keys in float64
by byte tables (``tables[j, byte j]``, summed over ``j`` in ascending order), exactly as the
numpy kernels of ``indices.bitpacked`` do, so both backends return identical scores. Without
numba the module still imports (``AVAILABLE`` is False) and is not used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from fastmwem._jit import njit_cached
from fastmwem.indices.bitpacked._scan_numba import (
    _GROUP,
    _NEVER,
    _SUB,
    AVAILABLE,
    PLANES,
    WIDE_PLANES,
    _Plan,
)
from fastmwem.indices.bitpacked._scan_numba import _PADDING as _PADDING
from fastmwem.indices.bitpacked._scan_numba import _kth_bound as _kth_bound
from fastmwem.indices.bitpacked._scan_numba import _record_maxima as _record_maxima

if AVAILABLE:
    from numba import config, get_num_threads, set_num_threads

    from fastmwem.indices.bitpacked._scan_numba import _popcount as _popcount
    from fastmwem.indices.bitpacked._scan_numba import (
        _rescan_serial,
        _rescan_serial_wide,
        _scan_parallel,
        _scan_parallel_wide,
        _scan_serial,
        _scan_serial_wide,
        _top_parallel,
        _top_parallel_wide,
        _top_serial,
        _top_serial_wide,
    )

__all__ = ["AVAILABLE", "PLANES", "WIDE_PLANES", "bit_planes", "scan", "top_candidates",
           "default_threads"]

# Blocks below which the scan stays on one thread: waking workers costs more (milliseconds on a
# busy machine) than it saves.
_PARALLEL_BLOCKS = 8
# Candidates a thread's buffer holds: _BUFFER per unit of k (room for the keys within the window
# of the k-th best), and at least _MIN_BUFFER.
_BUFFER = 32
_MIN_BUFFER = 16384
# Bytes of key words a thread's buffer may copy for its candidates (top_candidates), and the
# fewest words a key must have: with fewer, reading a key's words again for its rescoring costs
# less than copying every candidate's in the pass (at |X| = 256, 4 words, 2% more a search).
_ROW_BYTES = 1 << 24
_ROW_WORDS = 8
# Blocks scored first to guess the starting threshold of a search (see top_candidates).
_SAMPLE_BLOCKS = 8

_T = TypeVar("_T")


def _make_plan(planes: np.ndarray, widths: np.ndarray, slots: np.ndarray,  # pragma: no cover
               grouped: np.ndarray) -> int:
    """The passes of a scan over ``planes``: groups of ``_GROUP`` key words, each scored on as
    many planes as its widest word needs; returns the number of groups.

    Why the scores are the same. The cells of word ``w`` all fit in ``t`` bits of two's
    complement exactly when planes ``t - 1 .. P - 1`` of the word are equal (each cell's bits
    above ``t - 2`` copy its sign): its part of ``<key, q>`` is then
    ``sum_{p < t-1} 2^p c_p - 2^(t-1) c_(t-1)``, ``c_p`` the popcount of the key word and
    plane ``p``. Planes ``t - 1 .. P - 1`` of weights ``2^(t-1) .. 2^(P-2), -2^(P-1)`` count
    the same ``c``, which they weigh ``-2^(t-1)`` in all: both sums are equal, in integers.
    Scored on more planes than it needs (``t' > t``, the group's width), a word's sum is the
    same again, for the same reason. A word whose planes are all 0 (its cells are 0) adds 0 and
    is left out; a group short of words is filled with a word on planes of 0 (it adds 0).

    ``widths[g]``, ``slots[g, j]`` (``j < _GROUP``) and ``grouped[g, j, p]`` are group ``g``'s
    plane count, key words and their planes; the groups are in decreasing width.
    """
    n_words, n_planes = planes.shape
    own = np.zeros(n_words, np.int64)
    for w in range(n_words):
        sign = planes[w, n_planes - 1]
        t = n_planes
        while t > 1 and planes[w, t - 2] == sign:
            t -= 1
        own[w] = 0 if t == 1 and sign == 0 else t
    order = np.argsort(-own, kind="mergesort")
    used = 0
    while used < n_words and own[order[used]] > 0:
        used += 1
    n_groups = -(-used // _GROUP)
    grouped[:n_groups] = 0
    for g in range(n_groups):
        widths[g] = own[order[_GROUP * g]]
        for j in range(_GROUP):
            i = _GROUP * g + j
            w = order[i] if i < used else order[_GROUP * g]
            slots[g, j] = w
            if i < used:
                grouped[g, j, :] = planes[w, :]
    return n_groups


def _planes(q: np.ndarray, planes: np.ndarray) -> None:  # pragma: no cover - compiled
    # cell c: word c // 64, byte (c // 8) % 8 of the word (little-endian), bit 7 - c % 8 of the
    # byte (np.packbits is big-endian)
    planes[:] = 0
    for c in range(q.size):
        shift = np.uint64(8 * ((c >> 3) & 7) + 7 - (c & 7))
        for p in range(planes.shape[1]):
            if (q[c] >> p) & 1:
                planes[c >> 6, p] |= np.uint64(1) << shift


if AVAILABLE:
    _planes = njit_cached(_planes, boundscheck=False)
    _make_plan = njit_cached(_make_plan, boundscheck=False)


def _threaded(serial: Callable[..., _T], parallel: Callable[..., _T], threads: int, n_blocks: int,
              *args: Any) -> _T:
    if threads <= 1 or n_blocks < _PARALLEL_BLOCKS:
        return serial(*args)
    before = get_num_threads()
    # numba.config sets its options as module attributes at import
    set_num_threads(min(threads, config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    try:
        return parallel(*args)
    finally:
        set_num_threads(before)


def bit_planes(q: np.ndarray, n_words: int, n_planes: int = PLANES) -> np.ndarray:
    """``planes[w, p]``: bit ``p`` of the ``n_planes``-bit integers ``q`` (two's complement,
    one per cell) over the cells of key word ``w``; ``n_planes`` is ``PLANES`` or
    ``WIDE_PLANES``."""
    if n_planes not in (PLANES, WIDE_PLANES):
        raise ValueError(f"n_planes must be {PLANES} or {WIDE_PLANES}, got {n_planes}")
    planes = np.empty((n_words, n_planes), dtype=np.uint64)
    _planes(q, planes)
    return planes


def plan(planes: np.ndarray) -> _Plan:
    """The group passes of a scan over ``planes`` (see ``_make_plan``)."""
    n_words, n_planes = planes.shape
    groups = -(-n_words // _GROUP)
    widths = np.empty(groups, dtype=np.int64)
    slots = np.empty((groups, _GROUP), dtype=np.int64)
    grouped = np.empty((groups, _GROUP, n_planes), dtype=np.uint64)
    used = _make_plan(planes, widths, slots, grouped)
    return widths[:used], slots[:used], grouped[:used]


def scan(words: np.ndarray, planes: np.ndarray, absolute: bool, threads: int) -> np.ndarray:
    """Integer score ``<key, q>`` of every stored key (or its absolute value), padding keys of
    the last block included, on ``threads`` threads."""
    out = np.empty(words.shape[0] * words.shape[2], dtype=np.int64)
    serial, parallel = ((_scan_serial, _scan_parallel) if planes.shape[1] == PLANES
                        else (_scan_serial_wide, _scan_parallel_wide))
    _threaded(serial, parallel, threads, words.shape[0], words, plan(planes), absolute,
              out)
    return out


def top_candidates(words: np.ndarray, planes: np.ndarray, n: int, absolute: bool, k: int,
                   window: int, threads: int, buffers: dict[str, np.ndarray] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Ids and integer scores of a superset of the keys whose score is at least the k-th best
    score minus ``window`` (``1 <= k < n``), their key words (one row of ``words.shape[1]``
    per id, or None), and how many keys a second look rescored (-1 when there was none).

    The key words are copied as the pass meets each candidate, while its block is in cache,
    for keys of at least ``_ROW_WORDS`` words when the threads' copies take at most
    ``_ROW_BYTES`` each; after a second look they are not (None).

    ``buffers`` (a dict the caller keeps between searches, used by one search at a time) holds
    the working arrays for the next search: a search writes every entry it reads, and fresh
    arrays (about a megabyte at ``m = 10^6``) cost page faults at every search.

    One pass over the keys. Each thread takes blocks from a shared counter and keeps the keys
    within ``window`` of the k-th best score seen so far (by it or, through a shared threshold,
    by any thread): that running score never exceeds the final k-th best, so no key of the
    window is dropped. The pass also records the best score of every sub-block of ``_SUB``
    keys, which bounds the cost of a second look.

    The threshold starts at a guess rather than at the lowest score, which spares the thousands
    of candidates kept while a running k-th best climbs: the score of rank ``2 k s / n + 16``
    among the ``s`` keys of the first blocks, minus ``window``. In keys in random order,
    ``k s / n`` of the sample score above the k-th best on average (standard deviation at most
    its square root), so the guess is almost never too high; keys in another order can make it
    so. It is checked after the pass: the candidates' k-th best is at most the true one, so if
    it reaches the guess plus ``window``, the window was kept whole.

    Otherwise (and when ties crowd a thread's buffer), the second look rescans only sub-blocks
    (see ``_second_look``): never a second pass over all the keys, and the result stays exact.
    """
    n_blocks, n_words, width = words.shape
    chunks = threads if threads > 1 and n_blocks >= _PARALLEL_BLOCKS else 1
    cap = min(max(_BUFFER * k, _MIN_BUFFER), n)
    blocks = min(_SAMPLE_BLOCKS, n_blocks - 1)  # full blocks only: the last one has padding
    rank = 2 * k * blocks * width // n + 16
    guessing = _guesses and blocks >= 1 and 4 * rank <= blocks * width
    kept = {} if buffers is None else buffers
    sample = _buffer(kept, "sample", (blocks * width if guessing else 0,))
    maxima = _buffer(kept, "maxima", (n_blocks * (width // _SUB),))
    ids = _buffer(kept, "ids", (chunks, cap))
    values = _buffer(kept, "values", (chunks, cap))
    counts = _buffer(kept, "counts", (chunks,))
    copied = cap if n_words >= _ROW_WORDS and cap * n_words * 8 <= _ROW_BYTES else 0
    rows = _buffer(kept, "rows", (chunks, copied, n_words)).view(np.uint64)
    serial, parallel = ((_top_serial, _top_parallel) if planes.shape[1] == PLANES
                        else (_top_serial_wide, _top_parallel_wide))
    passes = plan(planes)
    start = _threaded(serial, parallel, chunks, n_blocks, words, passes, n, absolute,
                      k, window, rank, sample, maxima, ids, values, rows, counts)
    if np.all(counts >= 0):  # copies: the buffers are the next search's
        ids_found = np.concatenate([ids[t, :counts[t]] for t in range(chunks)])
        values_found = np.concatenate([values[t, :counts[t]] for t in range(chunks)])
        if not sample.size or _guess_holds(values_found, k, window, start):
            rows_found = (np.concatenate([rows[t, :counts[t]] for t in range(chunks)])
                          if copied else None)
            return ids_found, values_found, rows_found, -1
        upper = start  # the pass kept every key scoring at least the guess (_second_look)
    else:  # ties crowded a buffer: the pass's candidates are incomplete
        ids_found = values_found = np.empty(0, dtype=np.int64)
        upper = -_NEVER
    more_ids, more_values, rescanned = _second_look(words, planes, passes, n, absolute, k,
                                                    window, maxima, upper)
    return (np.concatenate([ids_found, more_ids]), np.concatenate([values_found, more_values]),
            None, rescanned)


def _buffer(kept: dict[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A C-contiguous int64 array of ``shape`` (contents undefined): the start of the one kept
    under ``name`` if that is long enough, else of a new one with room to grow (a lazy round
    asks for one more key each round: the top set and the excluded queries)."""
    size = math.prod(shape)
    arr = kept.get(name)
    if arr is None or arr.size < size:
        arr = kept[name] = np.empty(size + size // 4, dtype=np.int64)
    return arr[:size].reshape(shape)


def _second_look(words: np.ndarray, planes: np.ndarray, passes: _Plan, n: int, absolute: bool,
                 k: int, window: int, maxima: np.ndarray, upper: int
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """The keys scoring in ``[lower, upper)`` that a search still needs, by rescanning only the
    sub-blocks whose best score reaches ``lower``; and how many keys were rescanned.

    Why the result is exact. Sub-blocks are disjoint and each maximum is the score of one of
    its keys, so at least k keys score at least ``M``, the k-th largest maximum: the true k-th
    best is at least ``M``, and every key within ``window`` of it scores at least
    ``lower = M - window``. Such a key lies in a sub-block whose maximum reaches ``lower``, and
    all those are rescanned. The keys scoring at least ``upper`` are already known: when the
    guess failed, the pass's threshold never rose above the guess (a raise to ``T`` needs k
    candidates scoring at least ``T + window``, which are kept, and the check would then have
    held), so the pass kept exactly the keys scoring at least the guess, ``upper``; after a
    crowded buffer nothing is known and ``upper`` is above every score. So the two parts
    together hold every key scoring at least ``min(lower, upper)``, a superset of the window.

    Cost: ``_SUB`` keys per sub-block whose best key reaches ``lower``, at most ``_SUB`` times
    the keys scoring at least ``lower`` (in random keys about that many sub-blocks as keys
    within the window: a few percent of a pass), whatever the guess was.
    """
    real = -(-n // _SUB)  # sub-blocks holding at least one key
    best = maxima[:real]
    if k >= real:
        lower = _NEVER  # fewer sub-blocks than k: every key
    else:
        lower = int(np.partition(best, real - k)[real - k]) - window
    chosen = np.flatnonzero(best >= lower).astype(np.int64)
    size = min(chosen.size * _SUB, n)
    ids = np.empty(size, dtype=np.int64)
    values = np.empty(size, dtype=np.int64)
    rescan = _rescan_serial if planes.shape[1] == PLANES else _rescan_serial_wide
    count = rescan(words, passes, n, absolute, chosen, lower, upper, ids, values)
    return ids[:count], values[:count], size


#: Whether searches start from a guessed threshold (tests turn it off to compare).
_guesses = True


def _guess_holds(values: np.ndarray, k: int, window: int, guess: int) -> bool:
    if values.size < k:
        return False
    return int(np.partition(values, values.size - k)[values.size - k]) - window >= guess


def default_threads() -> int:
    """Threads numba would use (its default: every core)."""
    return get_num_threads()
