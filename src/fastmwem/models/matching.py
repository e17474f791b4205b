"""Matched records: move drawn records' values until their marginals match the model's.

Systematic sampling (:mod:`fastmwem.models.sampling`) gives every clique cell of a factored
model ``floor`` or ``ceil`` of its expected count, but a marginal that spans cliques is only
as close as the draws down the tree make it: on adult (epsilon 1) the written records' mean
2-way L1 error was 0.0831 against the model's 0.0806, all of the gap in the 62 attribute pairs
that lie across cliques. Yet records whose counts are ``floor`` or ``ceil`` of the model's
expected counts would cost nothing against the real (integer) counts on average.

So after the draw, a local search moves records towards the model. For each record in a random
order and each attribute, it tries giving the record another value of that attribute and keeps
the value that most lowers ``sum |count - n * model fraction|`` over the *scored* marginals (the
workload's, within a cell budget), if any lowers it. Scoring every value of a 100-value
attribute against 78 triples is the cost, so the values are first *screened* by the same sum
over the attribute pairs inside the scored marginals, and only the best few are scored. A
record is only looked at for an attribute when taking its value away alone lowers the scored
sum (it sits in over-full cells). Three passes over the records reach (adult, seed 0, all
3-way marginals scored) 2-way / 3-way L1 0.0800 / 0.178, model 0.0806 / 0.175, in about 8 s
for 48,842 records (6 s in the compiled loop); scoring every value instead took 112 s for the
same error.

The records are post-processing of the model (no privacy cost) but no longer draws from it one
by one: their marginals on the scored sets are what the model says, to integer rounding.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from fastmwem._validation import check_int

__all__ = ["MATCH_CANDIDATES", "MATCH_MAX_CELLS", "MATCH_PASSES", "match_marginals",
           "dense_marginals", "match_bytes", "match_records", "scored_sets"]

#: Passes over the records (each pass visits every record and attribute once).
MATCH_PASSES = 3
#: Values of an attribute scored after the screening by pairs (adult: 16 gave 0.0802 / 0.178,
#: 32 gave 0.0800 / 0.178 for 7.5 / 9.3 s).
MATCH_CANDIDATES = 32
#: Cells of a window table that :func:`dense_marginals` reads many marginals from.
WINDOW_CELLS = 2**14
#: Budget of scored marginal cells (the counts and targets take 16 bytes a cell): marginals
#: are taken smallest first until the next would pass it. Adult's 364 triples have 2.1e7.
MATCH_MAX_CELLS = 2**25


def scored_sets(sets: Sequence[Sequence[int]], shape: Sequence[int],
                max_cells: int = MATCH_MAX_CELLS) -> list[tuple[int, ...]]:
    """The attribute sets to score: distinct, sorted, smallest first within ``max_cells``.

    Only public things decide it (the workload's sets and the domain's shape).

    >>> scored_sets([(2, 0), (0, 1), (0, 2)], (10, 10, 1000), max_cells=200)
    [(0, 1)]
    """
    distinct = sorted({tuple(sorted(int(a) for a in s)) for s in sets if len(s)},
                      key=lambda s: (_cells(s, shape), s))
    out, used = [], 0
    for s in distinct:
        if used + _cells(s, shape) > max_cells:
            break
        out.append(s)
        used += _cells(s, shape)
    return out


def dense_marginals(joint: np.ndarray, sets: Sequence[Sequence[int]],
                    window_cells: int = WINDOW_CELLS
                    ) -> Callable[[tuple[int, ...]], np.ndarray]:
    """``marginal(axes)`` of a dense ``joint`` (fractions), for ``axes`` inside one of ``sets``.

    Summing a 2^24-cell joint over 21 axes costs about 0.1 s, and a 3-way workload on 24
    attributes has 2,024 sets: matching 10^5 records took 207 s, nearly all of it in those sums.
    So the sets are grouped into windows of at most ``window_cells`` cells (23 windows there);
    each window's table is summed from the joint once, and its sets' marginals from that small
    table: 13 s, of which 6 s in the compiled loop.
    """
    joint = np.asarray(joint, dtype=np.float64)
    total = float(joint.sum())  # dividing the tables, not the joint: no copy of the joint
    windows = _windows(sets, joint.shape, window_cells)
    tables: dict[tuple[int, ...], np.ndarray] = {}

    def marginal(axes: tuple[int, ...]) -> np.ndarray:
        window = next((w for w in windows if set(axes) <= set(w)), tuple(axes))
        table = tables.get(window)
        if table is None:
            table = joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in window))
            table /= total
            tables[window] = table
        return table.sum(axis=tuple(i for i, a in enumerate(window) if a not in axes))

    return marginal


def _windows(sets: Sequence[Sequence[int]], shape: Sequence[int],
             window_cells: int) -> list[tuple[int, ...]]:
    """Attribute sets of at most ``window_cells`` cells (or one set) covering every set."""
    uncovered = [tuple(sorted(s)) for s in sets]
    windows = []
    while uncovered:
        window = set(uncovered[0])
        for s in uncovered[1:]:
            if _cells(window | set(s), shape) <= window_cells:
                window |= set(s)
        windows.append(tuple(sorted(window)))
        uncovered = [s for s in uncovered if not set(s) <= window]
    return windows


def match_bytes(sets: Sequence[Sequence[int]], shape: Sequence[int]) -> int:
    """Memory :func:`match_records` takes for ``sets``: counts and targets, 16 bytes a cell."""
    scored = scored_sets(sets, shape)
    return 16 * sum(_cells(s, shape) for s in scored + _screening_sets(scored))


def match_records(codes: np.ndarray, shape: Sequence[int], sets: Sequence[Sequence[int]],
                  marginal: Callable[[tuple[int, ...]], np.ndarray],
                  rng: np.random.Generator) -> int:
    """:func:`match_marginals` on the :func:`scored_sets` of ``sets`` (the defaults)."""
    return match_marginals(codes, shape, scored_sets(sets, shape), marginal, rng)


def match_marginals(codes: np.ndarray, shape: Sequence[int], sets: Sequence[tuple[int, ...]],
                    marginal: Callable[[tuple[int, ...]], np.ndarray],
                    rng: np.random.Generator, *, passes: int = MATCH_PASSES,
                    candidates: int = MATCH_CANDIDATES) -> int:
    """Move values of ``codes`` (rows of int64 codes, in place); return how many moved.

    ``sets`` are the scored attribute sets (sorted axes, as :func:`scored_sets` gives) and
    ``marginal(axes)`` the model's marginal on them as fractions over the sorted axes. No move
    raises the scored sum ``sum |count - n * fraction|``.
    """
    if not (isinstance(codes, np.ndarray) and codes.dtype == np.int64 and codes.ndim == 2
            and codes.flags.c_contiguous):
        raise ValueError("codes must be a C-contiguous 2-d int64 array (changed in place)")
    check_int(passes, "passes", minimum=0)
    check_int(candidates, "candidates", minimum=1)
    if codes.shape[1] != len(shape):
        raise ValueError(f"codes have {codes.shape[1]} columns for {len(shape)} attributes")
    for s in sets:
        if not (len(s) and list(s) == sorted(set(s)) and 0 <= s[0] and s[-1] < len(shape)):
            raise ValueError(f"each set must be distinct attribute positions in ascending "
                             f"order, got {s!r}")
    n = codes.shape[0]
    if n == 0 or not sets or passes == 0:
        return 0
    loop = _compiled_loop()
    if loop is None:
        warnings.warn('matching the records to the model needs numba (pip install numba): '
                      'the records are written as systematically drawn', stacklevel=3)
        return 0
    sizes = np.asarray(shape, dtype=np.int64)
    screens = _screening_sets(sets)
    scored = _layout(codes, sizes, sets, marginal, n)
    screened = _layout(codes, sizes, screens, marginal, n)
    order = rng.permutation(n).astype(np.int64)
    return int(loop(codes, sizes, order, passes, candidates, *scored, *screened))


def _cells(axes: Iterable[int], shape: Sequence[int]) -> int:
    return int(np.prod([int(shape[a]) for a in axes], dtype=object))


def _screening_sets(sets: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The pairs inside the scored sets (a set of one or two attributes screens itself)."""
    out: set[tuple[int, ...]] = set()
    for s in sets:
        out.update(itertools.combinations(s, 2) if len(s) > 2 else [s])
    return sorted(out)


def _layout(codes: np.ndarray, shape: np.ndarray, sets: Sequence[tuple[int, ...]],
            marginal: Callable[[tuple[int, ...]], np.ndarray], n: int) -> tuple[np.ndarray, ...]:
    """Flat counts and targets of ``sets``, each set's offset, and per attribute its sets.

    For attribute ``a``, ``sets_of[ptr[a]:ptr[a+1]]`` are the sets holding it and ``stride_of``
    the stride of ``a`` within each, so a record's cell after a change of ``a`` from ``x`` to
    ``v`` is its cell plus ``(v - x) * stride``.
    """
    width = max(len(s) for s in sets)
    axes = np.full((len(sets), width), -1, dtype=np.int64)
    strides = np.zeros((len(sets), width), dtype=np.int64)
    offsets = np.zeros(len(sets), dtype=np.int64)
    targets: list[np.ndarray] = []
    per_attribute: list[list[tuple[int, int]]] = [[] for _ in shape]
    used = 0
    for i, s in enumerate(sets):
        sizes = shape[list(s)]
        step = np.cumprod(np.concatenate([sizes[1:], [1]])[::-1])[::-1]
        axes[i, :len(s)], strides[i, :len(s)], offsets[i] = s, step, used
        for a, st in zip(s, step):
            per_attribute[a].append((i, int(st)))
        targets.append(n * np.asarray(marginal(s), dtype=np.float64).reshape(-1))
        used += int(np.prod(sizes))
    counts = np.zeros(used)
    cells = np.empty(n, dtype=np.int64)
    for i, s in enumerate(sets):
        size = int(np.prod(shape[list(s)]))
        np.multiply(codes[:, s[0]], strides[i, 0], out=cells)
        for j in range(1, len(s)):
            cells += codes[:, s[j]] * strides[i, j]
        counts[offsets[i]:offsets[i] + size] = np.bincount(cells, minlength=size)
    ptr = np.cumsum([0] + [len(p) for p in per_attribute]).astype(np.int64)
    sets_of = np.array([i for p in per_attribute for i, _ in p], dtype=np.int64)
    stride_of = np.array([st for p in per_attribute for _, st in p], dtype=np.int64)
    return counts, np.concatenate(targets), offsets, axes, strides, ptr, sets_of, stride_of


def _compiled_loop() -> Callable[..., int] | None:
    """The compiled matching loop, or ``None`` without numba (imported on first use: loading
    numba takes about half a second, too much for ``import fastmwem``)."""
    try:
        from fastmwem.models.matching_numba import match_loop
    except ImportError:  # the records stay as drawn; match_marginals warns
        return None
    return match_loop
