"""Compiled passes over the keys of the bit-packed index (numba, when installed): the scan, the
search's pass and its sub-block rescan, once per plane count.

Keys are stored in blocks of ``width`` keys, word-major within a block: ``words[b, w, r]`` is
64-bit word ``w`` (the packed bytes ``8w .. 8w + 7``, little-endian) of key ``b * width + r``.

A key's score against a query quantised to ``P``-bit integers ``q`` (two's complement) held as
bit planes, ``planes[w, p]`` = bit ``p`` of ``q`` over the cells of word ``w``, is
``<key, q> = sum_p weight_p popcount(key & plane_p)``, with ``weight_p = 2^p`` and
``-2^(P-1)`` for the top plane. ``P`` is ``PLANES`` or ``WIDE_PLANES``: each has its own
compiled kernels (the wide ones compiled, or loaded from numba's cache, on first use only). A
pass scores groups of 4 key words on only as many planes as the widest of their cells needs
(``indices.bitpacked._kernels_numba._make_plan``), with a compiled pass per plane count whose loops
over planes and words are unrolled, so the pass over the keys of a block vectorises (AVX-512
VPOPCNTQ where the CPU has it): several times faster than a byte-table look-up per key byte,
which cannot vectorise.

Every compiled function these kernels call is in this file: numba's on-disk cache checks only
the source file of the function it loads, so a callee in another file could change unseen.
``indices.bitpacked._kernels_numba`` drives these kernels. Without numba the module still imports
(``AVAILABLE`` is False) and is not used.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import FunctionType
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from fastmwem._jit import njit_cached

if TYPE_CHECKING:
    from numba.core.typing.templates import Signature

try:
    from numba import prange, types
    from numba.extending import intrinsic
except ImportError:  # the numpy kernels of indices.bitpacked are used instead
    AVAILABLE = False
    prange = range  # type: ignore[misc]  # numba hints prange as a class
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "PLANES", "WIDE_PLANES"]

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
_NEVER = -(2**62)  # below every score (|score| <= 2^(WIDE_PLANES - 1) per cell)
_PADDING = _NEVER - 1  # the score of a padding key in the sub-block maxima: below any threshold
# Keys per sub-block whose best score a search records: the unit a failed guess rescans.
_SUB = 16


_Pass = Callable[[np.ndarray, int, int, np.ndarray, np.ndarray, np.ndarray, bool], None]
# A scan's passes (see _kernels_numba._make_plan): the widths, key words and planes of its
# groups.
_Plan = tuple[np.ndarray, np.ndarray, np.ndarray]
_F = TypeVar("_F", bound=Callable[..., object])
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
                    c: int = (_popcount(x0 & planes[0, p]) + _popcount(x1 & planes[1, p])  # type: ignore[call-arg]
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
    ``plan`` (see ``_kernels_numba._make_plan``), the first writing ``acc``, the others
    adding to it."""
    widths, slots, planes = plan
    if widths.size == 0:  # q is 0
        acc[:] = 0
    for g in range(widths.size):
        _group_pass(widths[g], words, b, r0, slots[g], planes[g], acc, g == 0)


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
