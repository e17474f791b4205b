"""Compiled kernels of the bit-packed index (numba, when installed).

Keys are stored in blocks of ``width`` keys, word-major within a block: ``words[b, w, r]`` is
64-bit word ``w`` (the packed bytes ``8w .. 8w + 7``, little-endian) of key ``b * width + r``.

The scan scores every key against a query quantised to ``P``-bit integers ``q`` (two's
complement) held as bit planes, ``planes[w, p]`` = bit ``p`` of ``q`` over the cells of word
``w``: ``<key, q> = sum_p weight_p popcount(key & plane_p)``, with ``weight_p = 2^p`` and
``-2^(P-1)`` for the top plane. ``P`` is ``PLANES`` or ``WIDE_PLANES``, read from the planes'
shape: each has its own compiled kernels (the wide ones compiled, or loaded from numba's cache,
on first use only). A pass scores groups of 4 key words on only as many planes as the widest of
their cells needs (``_make_plan``: MWEM's queries on 16 planes need about 12 per word, a word
of zeros none), with a compiled pass per plane count whose loops over planes and words are
unrolled, so the pass over the keys of a block vectorises (AVX-512 VPOPCNTQ where the CPU has
it): several times faster than a byte-table look-up per key byte, which cannot vectorise.

``top_candidates`` scans and keeps, per thread, the keys within a window of a running k-th best
score, so nothing of size ``n`` is written; ``indices._bitexact_numba`` rescores keys in float64
by byte tables (``tables[j, byte j]``, summed over ``j`` in ascending order), exactly as the
numpy kernels of ``indices.bitpacked`` do, so both backends return identical scores. Without
numba the module still imports (``AVAILABLE`` is False) and is not used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from types import FunctionType
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from fastmwem._jit import njit_cached

if TYPE_CHECKING:
    from numba.core.typing.templates import Signature

try:
    from numba import config, get_num_threads, prange, set_num_threads, types
    from numba.extending import intrinsic
except ImportError:  # the numpy kernels of indices.bitpacked are used instead
    AVAILABLE = False
    prange = range  # type: ignore[misc]  # numba hints prange as a class
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "PLANES", "WIDE_PLANES", "bit_planes", "scan", "top_candidates",
           "default_threads"]

#: Bits of the quantised query in the compiled scan. Each plane costs a popcount per key word;
#: fewer planes widen the rounding window (at |X| = 256, m = 10^6, k = 1415: about 2,500 keys to
#: rescore with 10 planes, 12,000 with 8).
PLANES = 10
#: Bits of the finer quantisation, for queries whose 10-bit window is wide against their scores'
#: spread (a few dominant cells: the others round coarsely). Scores stay far from int64's range:
#: ``|<key, q>| <= cells * 2^(WIDE_PLANES - 1)``, below 2^47 for 2^31 cells.
WIDE_PLANES = 16
# Key words per unrolled pass: 4 x 16 popcounts keep the loop body small enough to vectorise.
_GROUP = 4
# Blocks below which the scan stays on one thread: waking workers costs more (milliseconds on a
# busy machine) than it saves.
_PARALLEL_BLOCKS = 8
# Candidates a thread's buffer holds: _BUFFER per unit of k (room for the keys within the window
# of the k-th best), and at least _MIN_BUFFER.
_BUFFER = 32
_MIN_BUFFER = 16384
_NEVER = -(2**62)  # below every score (|score| <= 2^(WIDE_PLANES - 1) per cell)
_PADDING = _NEVER - 1  # the score of a padding key in the sub-block maxima: below any threshold
# Bytes of key words a thread's buffer may copy for its candidates (top_candidates), and the
# fewest words a key must have: with fewer, reading a key's words again for its rescoring costs
# less than copying every candidate's in the pass (at |X| = 256, 4 words, 2% more a search).
_ROW_BYTES = 1 << 24
_ROW_WORDS = 8
# Blocks scored first to guess the starting threshold of a search (see top_candidates).
_SAMPLE_BLOCKS = 8
# Keys per sub-block whose best score a search records: the unit a failed guess rescans.
_SUB = 16


_Pass = Callable[[np.ndarray, int, int, np.ndarray, np.ndarray, np.ndarray, bool], None]
# A scan's passes (see _make_plan): the widths, key words and planes of its groups.
_Plan = tuple[np.ndarray, np.ndarray, np.ndarray]
_F = TypeVar("_F", bound=Callable[..., object])
_T = TypeVar("_T")
# LLVM IR emitters of the intrinsics: numba's lowering context and llvmlite's builder and values
# (llvmlite has no type hints).
_Codegen = Callable[[Any, Any, "Signature", list[Any]], Any]


def _make_pass(n_planes: int) -> _Pass:  # pragma: no cover - compiled
    def _pass(words: np.ndarray, b: int, r0: int, slots: np.ndarray, planes: np.ndarray,
              acc: np.ndarray, first: bool) -> None:
        # acc[r] (+)= <key r0 + r, q> over the key words slots[0 .. 3], on n_planes planes
        # (planes[j, p] of word slots[j]); the loop over r is written twice so that each copy
        # vectorises (a branch inside it would not)
        stop = r0 + acc.size
        row0, row1 = words[b, slots[0], r0:stop], words[b, slots[1], r0:stop]
        row2, row3 = words[b, slots[2], r0:stop], words[b, slots[3], r0:stop]
        top = n_planes - 1
        if first:
            for r in range(acc.size):
                x0, x1 = row0[r], row1[r]
                x2, x3 = row2[r], row3[r]
                s = 0
                for p in range(top):
                    # numba drops an intrinsic's typing context from its signature; its
                    # hints do not (also below)
                    c = (_popcount(x0 & planes[0, p]) + _popcount(x1 & planes[1, p])  # type: ignore[call-arg]
                         + _popcount(x2 & planes[2, p]) + _popcount(x3 & planes[3, p]))  # type: ignore[call-arg]
                    s += np.int64(c) << p
                c = (_popcount(x0 & planes[0, top]) + _popcount(x1 & planes[1, top])  # type: ignore[call-arg]
                     + _popcount(x2 & planes[2, top]) + _popcount(x3 & planes[3, top]))  # type: ignore[call-arg]
                acc[r] = s - (np.int64(c) << top)
        else:
            for r in range(acc.size):
                x0, x1 = row0[r], row1[r]
                x2, x3 = row2[r], row3[r]
                s = 0
                for p in range(top):
                    c = (_popcount(x0 & planes[0, p]) + _popcount(x1 & planes[1, p])  # type: ignore[call-arg]
                         + _popcount(x2 & planes[2, p]) + _popcount(x3 & planes[3, p]))  # type: ignore[call-arg]
                    s += np.int64(c) << p
                c = (_popcount(x0 & planes[0, top]) + _popcount(x1 & planes[1, top])  # type: ignore[call-arg]
                     + _popcount(x2 & planes[2, top]) + _popcount(x3 & planes[3, top]))  # type: ignore[call-arg]
                acc[r] += s - (np.int64(c) << top)
    # A name of its own per variant: compiled code calls a function by a symbol made of its
    # qualified name and a per-process counter, so a pass loaded from numba's cache could share
    # a symbol with one compiled in this process for another plane count (the wrong one ran).
    _pass.__qualname__ = _pass.__name__ = f"_group_pass_{n_planes}"
    return _pass


def _group_pass(width: int, words: np.ndarray, b: int, r0: int,  # pragma: no cover - compiled
                slots: np.ndarray, planes: np.ndarray, acc: np.ndarray, first: bool) -> None:
    """The pass of ``width`` planes (compiled loops are unrolled for a fixed count)."""
    if width <= 8:
        if width <= 4:
            if width == 1:
                _pass1(words, b, r0, slots, planes, acc, first)
            elif width == 2:
                _pass2(words, b, r0, slots, planes, acc, first)
            elif width == 3:
                _pass3(words, b, r0, slots, planes, acc, first)
            else:
                _pass4(words, b, r0, slots, planes, acc, first)
        elif width == 5:
            _pass5(words, b, r0, slots, planes, acc, first)
        elif width == 6:
            _pass6(words, b, r0, slots, planes, acc, first)
        elif width == 7:
            _pass7(words, b, r0, slots, planes, acc, first)
        else:
            _pass8(words, b, r0, slots, planes, acc, first)
    elif width <= 12:
        if width == 9:
            _pass9(words, b, r0, slots, planes, acc, first)
        elif width == 10:
            _pass10(words, b, r0, slots, planes, acc, first)
        elif width == 11:
            _pass11(words, b, r0, slots, planes, acc, first)
        else:
            _pass12(words, b, r0, slots, planes, acc, first)
    elif width == 13:
        _pass13(words, b, r0, slots, planes, acc, first)
    elif width == 14:
        _pass14(words, b, r0, slots, planes, acc, first)
    elif width == 15:
        _pass15(words, b, r0, slots, planes, acc, first)
    else:
        _pass16(words, b, r0, slots, planes, acc, first)


def _score_keys(words: np.ndarray, b: int, r0: int, plan: _Plan,  # pragma: no cover - compiled
                acc: np.ndarray) -> None:
    """``acc[r]`` = integer score of key ``r0 + r`` of block ``b``: one pass per group of
    ``plan`` (see ``_make_plan``), the first writing ``acc``, the others adding to it."""
    widths, slots, planes = plan
    if widths.size == 0:  # q is 0
        acc[:] = 0
    for g in range(widths.size):
        _group_pass(widths[g], words, b, r0, slots[g], planes[g], acc, g == 0)


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


def _scan(words: np.ndarray, plan: _Plan, absolute: bool,  # pragma: no cover - compiled
          out: np.ndarray) -> None:
    n_blocks, _, width = words.shape
    for b in prange(n_blocks):
        acc = out[b * width:(b + 1) * width]
        _score_keys(words, b, 0, plan, acc)
        if absolute:
            for r in range(width):
                acc[r] = abs(acc[r])


def _kth_bound(values: np.ndarray, k: int,  # pragma: no cover - compiled
               counts: np.ndarray) -> int:
    """A value at most the k-th largest of ``values``, within ``(max - min) / 128``: the lower
    edge of the bin holding the k-th largest in a histogram of ``counts.size`` bins (branch-free;
    an exact selection costs ten times more, mostly in mispredicted branches)."""
    hi, lo = values.max(), values.min()
    shift = 0
    while (hi - lo) >> shift >= counts.size:
        shift += 1
    counts[:] = 0
    for x in values:
        counts[(hi - x) >> shift] += 1
    seen = 0
    for b in range(counts.size):
        seen += counts[b]
        if seen >= k:  # bins 0 .. b hold k values, all >= hi - (b + 1) 2^shift + 1
            return hi - ((b + 1) << shift) + 1
    return lo


def _compact(ids: np.ndarray, values: np.ndarray, rows: np.ndarray,  # pragma: no cover
             count: int, threshold: int) -> int:
    """The candidates scoring at least ``threshold`` moved to the front (with their key words
    in ``rows``, when it has any); returns their count."""
    kept = 0
    n_words = rows.shape[1] if rows.shape[0] else 0
    for i in range(count):
        if values[i] >= threshold:
            ids[kept] = ids[i]
            values[kept] = values[i]
            for w in range(n_words):
                rows[kept, w] = rows[i, w]
            kept += 1
    return kept


def _block_scores(words: np.ndarray, b: int, plan: _Plan, absolute: bool,
                  sampled: int, sample: np.ndarray, acc: np.ndarray) -> None:
    # pragma: no cover - compiled
    """``acc`` = the scores (or absolute scores) of block ``b``'s keys; the blocks of the sample
    were scored already."""
    width = acc.size
    if b < sampled:
        acc[:] = sample[b * width:(b + 1) * width]
        return
    _score_keys(words, b, 0, plan, acc)
    if absolute:
        for r in range(width):
            acc[r] = abs(acc[r])


def _record_maxima(acc: np.ndarray, stop: int, b: int, threshold: int, flags: np.ndarray,
                   pairs: np.ndarray, maxima: np.ndarray) -> None:
    # pragma: no cover - compiled
    """``maxima`` of the block's sub-blocks of ``_SUB`` keys, and ``flags[r]`` = key ``r``
    reaches ``threshold`` (in the same pass over the scores); padding keys (``r >= stop``)
    score ``_PADDING``, below every threshold, from here on."""
    for r in range(stop, acc.size):
        acc[r] = _PADDING
    # Maxima of pairs, then of pairs of pairs: each step vectorises (a loop over a sub-block
    # would not; this costs about 6% of the scan, the loop twice that).
    size = acc.size // 2
    for i in range(size):
        x, y = acc[2 * i], acc[2 * i + 1]
        pairs[i] = x if x > y else y
        flags[2 * i] = x >= threshold
        flags[2 * i + 1] = y >= threshold
    while size > 2 * (acc.size // _SUB):
        size //= 2
        for i in range(size):
            x, y = pairs[2 * i], pairs[2 * i + 1]
            pairs[i] = x if x > y else y
    size //= 2
    for i in range(size):
        x, y = pairs[2 * i], pairs[2 * i + 1]
        maxima[b * size + i] = x if x > y else y


def _collect(words: np.ndarray, plan: _Plan, n: int, absolute: bool, k: int, window: int,
             queue: np.ndarray, shared: np.ndarray, sampled: int, sample: np.ndarray,
             maxima: np.ndarray, ids: np.ndarray, values: np.ndarray, rows: np.ndarray) -> int:
    # pragma: no cover - compiled
    """Keys within ``window`` of the running k-th best score, over the blocks this thread takes
    from ``queue`` (a block counter shared by the threads, so a thread slowed down by other work
    takes fewer blocks): ids and integer scores, and the best score of every sub-block of
    ``_SUB`` keys in ``maxima``. Returns the count of keys, or -1 when more than half the buffer
    stays within the window (ties): the keys are then no longer collected, but the maxima are.
    When ``rows`` has rows, ``rows[i]`` gets the key words of candidate ``i``, read while its
    block is in cache (rescoring them from ``words`` later costs a cache miss per word).

    ``shared[0]`` is the highest threshold any thread has reached: each is at most the k-th
    best score of some keys minus ``window``, so at most the final one, and any thread may use
    it. Its reads and writes race, harmlessly: a lost update only lowers the threshold used.
    """
    n_blocks, n_words, width = words.shape
    cap = ids.size
    copied = n_words if rows.shape[0] else 0
    acc = np.empty(width, np.int64)
    # flags[r] = key r reaches the threshold; read 8 at a time, most words are 0
    flags = np.zeros(width, np.uint8)
    flag_words = flags.view(np.uint64)
    bins = np.empty(256, np.int64)
    pairs = np.empty(width // 2, np.int64)
    threshold = shared[0]
    count = 0
    settled = 0  # candidates at the last raise of the threshold
    crowded = False
    while True:
        b = _take(queue)  # type: ignore[call-arg,var-annotated]
        if b >= n_blocks:
            break
        _block_scores(words, b, plan, absolute, sampled, sample, acc)
        stop = min(width, n - b * width)
        threshold = max(threshold, shared[0])
        _record_maxima(acc, stop, b, threshold, flags, pairs, maxima)
        if crowded:
            continue
        pending = count  # the first candidate of this block whose key words are not copied
        for i in range(flag_words.size):
            if flag_words[i] == 0:
                continue
            for r in range(8 * i, 8 * i + 8):
                if not flags[r] or acc[r] < threshold:
                    continue
                if count == cap:
                    _copy_rows(words, b, ids, rows, copied, pending, count)
                    threshold, count = _raise(ids, values, rows, count, k, window,
                                              threshold, bins, shared)
                    pending = count
                    if 2 * count > cap and cap < n:
                        crowded = True  # ties crowd the buffer (one that holds every key cannot)
                        break
                    settled = count
                    if acc[r] < threshold:
                        continue
                ids[count] = b * width + r
                values[count] = acc[r]
                count += 1
            if crowded:
                break
        _copy_rows(words, b, ids, rows, copied, pending, count)
        # Raised once the candidates grow by a quarter (or k / 4): near the candidates of an
        # exact running k-th best, at O(1) amortised per candidate.
        if not crowded and 4 * (count - settled) >= max(k, count, 64):
            threshold, count = _raise(ids, values, rows, count, k, window, threshold, bins,
                                      shared)
            settled = count
    if crowded:
        return -1
    return _compact(ids, values, rows, count, max(threshold, shared[0]))


def _copy_rows(words: np.ndarray, b: int, ids: np.ndarray, rows: np.ndarray,
               copied: int, first: int, stop: int) -> None:  # pragma: no cover - compiled
    """The key words of candidates ``first .. stop - 1`` (keys of block ``b``) into ``rows``,
    after the block's loop over its keys (copied there, they slowed that loop down even when
    ``copied`` was 0)."""
    width = words.shape[2]
    for c in range(first, stop):
        r = ids[c] - b * width
        for w in range(copied):
            rows[c, w] = words[b, w, r]


def _raise(ids: np.ndarray, values: np.ndarray, rows: np.ndarray, count: int, k: int,
           window: int, threshold: int, bins: np.ndarray, shared: np.ndarray) -> tuple[int, int]:
    # pragma: no cover - compiled
    """The threshold raised to the k-th best score of the candidates minus ``window`` (or the
    shared one, if higher), shared, and the candidates compacted to it."""
    threshold = max(threshold, shared[0])
    if count >= k:
        threshold = max(threshold, _kth_bound(values[:count], k, bins) - window)
    if threshold > shared[0]:
        shared[0] = threshold
    return threshold, _compact(ids, values, rows, count, threshold)


def _top_candidates(words: np.ndarray, plan: _Plan, n: int, absolute: bool, k: int,
                    window: int, rank: int, sample: np.ndarray, maxima: np.ndarray,
                    ids: np.ndarray, values: np.ndarray, rows: np.ndarray,
                    counts: np.ndarray) -> int:
    # pragma: no cover - compiled
    """The threads' candidates (see ``_collect``), from a threshold starting at a guess when
    ``sample`` is not empty; returns that starting threshold."""
    queue = np.zeros(1, np.int64)
    shared = np.full(1, _NEVER, np.int64)
    width = words.shape[2]
    sampled = sample.size // width
    if sampled:
        # at most the rank-th best score of the first blocks (all full), minus the window
        for b in prange(sampled):
            acc = sample[b * width:(b + 1) * width]
            _score_keys(words, b, 0, plan, acc)
            if absolute:
                for r in range(width):
                    acc[r] = abs(acc[r])
        bins = np.empty(256, np.int64)
        shared[0] = _kth_bound(sample, rank, bins) - window
    start = shared[0]
    for t in prange(counts.size):
        counts[t] = _collect(words, plan, n, absolute, k, window, queue, shared, sampled,
                             sample, maxima, ids[t], values[t], rows[t])
    return start


def _rescan_subblocks(words: np.ndarray, plan: _Plan, n: int,  # pragma: no cover
                      absolute: bool, chosen: np.ndarray, lower: int, upper: int,
                      ids: np.ndarray, values: np.ndarray) -> int:
    """Ids and scores of the keys of the sub-blocks ``chosen`` (flat sub-block numbers) that
    score in ``[lower, upper)``; returns their count."""
    width = words.shape[2]
    subs = width // _SUB
    acc = np.empty(_SUB, np.int64)
    count = 0
    for i in range(chosen.size):
        b, j = chosen[i] // subs, chosen[i] % subs
        _score_keys(words, b, j * _SUB, plan, acc)
        first = b * width + j * _SUB
        for r in range(min(_SUB, n - first)):
            score = abs(acc[r]) if absolute else acc[r]
            if lower <= score < upper:
                ids[count] = first + r
                values[count] = score
                count += 1
    return count


def _planes(q: np.ndarray, planes: np.ndarray) -> None:  # pragma: no cover - compiled
    # cell c: word c // 64, byte (c // 8) % 8 of the word (little-endian), bit 7 - c % 8 of the
    # byte (np.packbits is big-endian)
    planes[:] = 0
    for c in range(q.size):
        shift = np.uint64(8 * ((c >> 3) & 7) + 7 - (c & 7))
        for p in range(planes.shape[1]):
            if (q[c] >> p) & 1:
                planes[c >> 6, p] |= np.uint64(1) << shift


def _renamed(func: _F, suffix: str, names: dict[str, Any] | None = None) -> _F:
    """``func`` under another name (and with ``names`` as its globals, if given). Numba's
    on-disk cache files a compiled function by its name and bytecode, not by its options nor its
    globals: a serial and a parallel build of one function would share one entry, and whichever
    compiled first would be loaded for both (the parallel scan then ran on one thread)."""
    copy = FunctionType(func.__code__, func.__globals__ if names is None else names,
                        func.__name__ + suffix, func.__defaults__, func.__closure__)
    copy.__qualname__ = func.__qualname__ + suffix
    return cast(_F, copy)


def _plane_kernels(passes: dict[str, _Pass], suffix: str) -> tuple[Any, ...]:
    """The compiled scan (serial, parallel), search (serial, parallel) and sub-block rescan
    over the group passes ``passes`` (``_pass1`` .. ``_pass16``), each named with ``suffix``:
    the kernels they call resolve to these passes through a copy of the module's names."""
    names = dict(globals())
    names.update(passes)
    for func in (_group_pass, _score_keys, _block_scores, _collect):
        names[func.__name__] = _jit(_renamed(func, suffix, names))
    return (_jit(_renamed(_scan, suffix, names)),
            _parallel_jit(_renamed(_scan, suffix + "_parallel", names)),
            _jit(_renamed(_top_candidates, suffix, names)),
            _parallel_jit(_renamed(_top_candidates, suffix + "_parallel", names)),
            _jit(_renamed(_rescan_subblocks, suffix, names)))


if AVAILABLE:
    @intrinsic
    def _popcount(typingctx: object, x: types.Type  # pragma: no cover - compiled
                  ) -> tuple[Signature, _Codegen]:
        def codegen(context: Any, builder: Any, signature: Signature, args: list[Any]) -> Any:
            return builder.call(builder.module.declare_intrinsic("llvm.ctpop", [args[0].type]),
                                args)
        return types.uint64(types.uint64), codegen

    @intrinsic
    def _take(typingctx: object, counter: types.Array  # pragma: no cover - compiled
              ) -> tuple[Signature, _Codegen]:
        """``counter[0]``, atomically incremented: the next block for the calling thread."""
        def codegen(context: Any, builder: Any, signature: Signature, args: list[Any]) -> Any:
            array = context.make_array(signature.args[0])(context, builder, args[0])
            one = context.get_constant(types.int64, 1)
            return builder.atomic_rmw("add", array.data, one, "monotonic")
        return types.int64(types.Array(types.int64, 1, "C")), codegen

    _jit = partial(njit_cached, boundscheck=False)
    _parallel_jit = partial(njit_cached, parallel=True, boundscheck=False)
    _kth_bound = _jit(_kth_bound)
    _compact = _jit(_compact)
    _copy_rows = _jit(_copy_rows)
    _raise = _jit(_raise)
    _record_maxima = _jit(_record_maxima)
    _planes = _jit(_planes)
    _make_plan = _jit(_make_plan)
    # The kernels that score keys, once per plane count (the shared ones above come first: the
    # copies of the module's names taken by _plane_kernels must hold them compiled). A group is
    # never wider than the planes, so the 10-plane kernels call (and compile) only the passes of
    # up to 10 planes: the names of the wider ones stand for the 10-plane pass there.
    _group_passes = {f"_pass{t}": _jit(_make_pass(t)) for t in range(1, WIDE_PLANES + 1)}
    (_pass1, _pass2, _pass3, _pass4, _pass5, _pass6, _pass7, _pass8, _pass9, _pass10, _pass11,
     _pass12, _pass13, _pass14, _pass15, _pass16) = _group_passes.values()
    (_scan_serial, _scan_parallel, _top_serial, _top_parallel,
     _rescan_serial) = _plane_kernels(
         {name: _group_passes[f"_pass{min(t, PLANES)}"]
          for t, name in enumerate(_group_passes, start=1)}, "")
    (_scan_serial_wide, _scan_parallel_wide, _top_serial_wide, _top_parallel_wide,
     _rescan_serial_wide) = _plane_kernels(_group_passes, "_wide")


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
