"""Reuse passes over measured marginals of a dense state, one sweep of the histogram a step.

A reuse pass applies the multiplicative-weights step of every measured marginal again, in the
order they were measured. On a dense state each step is bound by memory: the marginal's answer
reads the histogram (and an eight-byte cell index) once, the multiply reads and writes it once
more. Here the multiply of one step and the answer of the next are one sweep, over a one- or
two-byte cell index (:meth:`~fastmwem.workloads.marginals.Marginals.compact_index`), which
makes a step two to three times faster on a histogram of a million cells.

On a junction tree (:func:`fit_clique_marginals`) the same sweeps run on each clique's table
in turn, for the measurements that clique holds, while it is the root.

The results are bit-for-bit those of :func:`~fastmwem.models.state.mw_group_step` (same seed,
same synthetic data): each marginal cell sums its histogram cells in increasing order, as
``np.bincount`` does; a multiply is exact whatever the order; the factors are computed in numpy
between sweeps by the same function (:func:`~fastmwem.models.state.partition_log_factors`), so
no compiled ``exp`` is involved. The sweeps need numba (``pip install "fastmwem[numba]"``);
without it :func:`fit_marginals` declines and the caller runs the plain steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from fastmwem._jit import njit_cached
from fastmwem.models.factored import FactoredState
from fastmwem.models.state import MWState, clipped_targets, partition_log_factors
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.concatenate import Concatenate
from fastmwem.workloads.marginals import Marginals

__all__ = ["fit_clique_marginals", "fit_marginals"]


def _sweep(p: np.ndarray, before: np.ndarray, factors: np.ndarray,  # pragma: no cover
           index: np.ndarray, out: np.ndarray, run: int) -> None:
    """``p[i] *= factors[before[i]]`` (none if ``factors`` is empty), then ``out[index[i]] +=
    p[i]``: each ``out`` cell adds its ``p`` cells in increasing ``i``, as ``np.bincount`` does.

    ``run``: the cells come in runs of this many consecutive cells in the same ``out`` cell (the
    axes the marginal sums out after its last one). A single sum is a chain of dependent adds,
    each waiting for the last; so the runs are taken four at a time when they lie in four
    different cells, and the four chains advance together, each still in its own order.
    """
    scale = factors.size > 0
    if run == 1:  # consecutive cells already cycle through the cells of the marginal
        for i in range(p.size):
            value = p[i]
            if scale:
                value *= factors[before[i]]
                p[i] = value
            out[index[i]] += value
        return
    rows = p.size // run
    r = 0
    while r < rows:
        i = r * run
        b0 = index[i]
        if r + 4 <= rows:
            b1, b2, b3 = index[i + run], index[i + 2 * run], index[i + 3 * run]
            if b0 != b1 and b0 != b2 and b0 != b3 and b1 != b2 and b1 != b3 and b2 != b3:
                a0, a1, a2, a3 = out[b0], out[b1], out[b2], out[b3]
                for j in range(i, i + run):
                    v0, v1, v2, v3 = p[j], p[j + run], p[j + 2 * run], p[j + 3 * run]
                    if scale:
                        v0 *= factors[before[j]]
                        v1 *= factors[before[j + run]]
                        v2 *= factors[before[j + 2 * run]]
                        v3 *= factors[before[j + 3 * run]]
                        p[j], p[j + run], p[j + 2 * run], p[j + 3 * run] = v0, v1, v2, v3
                    a0 += v0
                    a1 += v1
                    a2 += v2
                    a3 += v3
                out[b0], out[b1], out[b2], out[b3] = a0, a1, a2, a3
                r += 4
                continue
        a0 = out[b0]
        for j in range(i, i + run):
            v0 = p[j]
            if scale:
                v0 *= factors[before[j]]
                p[j] = v0
            a0 += v0
        out[b0] = a0
        r += 1


def _multiply(p: np.ndarray, before: np.ndarray,  # pragma: no cover - compiled
              factors: np.ndarray) -> None:
    """``p[i] *= factors[before[i]]``."""
    for i in range(p.size):
        p[i] *= factors[before[i]]


def _multiply_moved(p: np.ndarray, before: np.ndarray,  # pragma: no cover - compiled
                    factors: np.ndarray, scratch: np.ndarray) -> None:
    """``p[i] *= factors[before[i]]``, and ``scratch[i] = |p[i] - scratch[i]|``."""
    for i in range(p.size):
        value = p[i] * factors[before[i]]
        p[i] = value
        scratch[i] = abs(value - scratch[i])


_NONE = np.empty(0)  # no factors: the sweep only sums

_Kernels = tuple[Callable[..., None], ...]
_compiled: _Kernels | Literal[False] | None = None  # False once numba was found missing


def _kernels() -> _Kernels | None:
    # numba is imported here, at the first passes: loading it takes about half a second.
    global _compiled
    if _compiled is None:
        try:
            _compiled = (njit_cached(_sweep, nogil=True),
                         njit_cached(_multiply_moved, nogil=True),
                         njit_cached(_multiply, nogil=True))
        except ImportError:  # the caller's plain steps are used instead
            _compiled = False
    return None if _compiled is False else _compiled


def _compact_indices(workload: LinearWorkload, groups: Sequence[int]
                     ) -> tuple[list[np.ndarray], list[int]] | None:
    """The compact index of each group and the length of its runs (see :func:`_sweep`), when
    each is a group of :class:`~fastmwem.workloads.marginals.Marginals` (not of a subclass,
    which may answer differently), directly or as a part of a
    :class:`~fastmwem.workloads.concatenate.Concatenate`; else ``None``."""
    if type(workload) is Marginals:
        parts: tuple[LinearWorkload, ...] = (workload,)
    elif type(workload) is Concatenate:
        parts = workload.parts
    else:
        return None
    starts = np.cumsum([0] + [np.asarray(part.group_offsets).size - 1 for part in parts])
    indices, runs = [], []
    for g in groups:
        i = int(np.searchsorted(starts, g, side="right") - 1)
        part = parts[i]
        if type(part) is not Marginals:
            return None
        local = int(g) - int(starts[i])
        index = part.compact_index(local)
        if index is None:
            return None
        indices.append(index)
        runs.append(math.prod(part.domain.shape[max(part.axes[local]) + 1:]))
    return indices, runs


def fit_marginals(state: MWState, workload: LinearWorkload, groups: Sequence[int],
                  measured: Sequence[np.ndarray], steps: Sequence[float], passes: int,
                  tolerance: float, on_pass: Callable[[int], object] | None = None) -> int | None:
    """Up to ``passes`` passes of the group steps of :func:`~fastmwem.models.state.mw_group_step`
    over ``groups`` in that order, in place on ``state``; the passes run, or ``None`` (nothing
    done) when the compiled sweeps do not apply.

    Passes stop once one moves the distribution by less than ``tolerance`` in L1 (``0``: run
    them all), as :meth:`~fastmwem.models.state.MWState.moved` measures it. They apply with
    numba installed to marginals (:func:`_compact_indices`) that all have a compact index.

    Args:
        state: the dense state.
        workload: the marginals, or a concatenation of marginals (the closure of an
            adaptive run).
        groups: the measured group of each step.
        measured: each step's noisy answers (counts).
        steps: each step's weight (``step`` of :func:`~fastmwem.models.state.mw_group_step`).
        passes: most passes.
        tolerance: stop once a pass moves the distribution by less than this in L1.
        on_pass: told of each pass as it finishes.
    """
    kernels = _kernels()
    if (kernels is None or passes < 1 or not groups
            or not getattr(workload, "groups_partition_cells", False)):
        return None
    found = _compact_indices(workload, groups)
    if found is None:
        return None
    indices, runs = found
    sweep, multiply_moved, multiply = kernels
    p, total = state.distribution, state.total
    s = float(workload.query_sensitivity)
    nonnegative = bool(getattr(workload, "nonnegative_queries", False))
    targets = [clipped_targets(values, s, nonnegative, total) for values in measured]
    sizes = [int(size) for size in workload.group_sizes()[list(groups)]]
    scratch = state.checkpoint() if tolerance > 0 else None  # the state's own buffer
    factors: np.ndarray | None = None  # of the last step, not yet applied to p
    for done in range(1, passes + 1):
        if scratch is not None:
            np.copyto(scratch, p)
        for j, (index, size) in enumerate(zip(indices, sizes)):
            current = np.zeros(size)
            sweep(p, indices[j - 1], _NONE if factors is None else factors, index, current,
                  runs[j])
            log_factors = partition_log_factors(current, targets[j], s, steps[j])
            if not np.all(np.isfinite(log_factors)):  # as Marginals.multiply_group refuses
                raise ValueError("log_factors must be finite")
            factors = np.exp(log_factors)
        if scratch is not None:
            multiply_moved(p, indices[-1], factors, scratch)
            factors = None
        if on_pass is not None:
            on_pass(1)
        if scratch is not None and float(scratch.sum()) < tolerance:
            return done
    if factors is not None:
        multiply(p, indices[-1], factors)
    return passes


def fit_clique_marginals(state: FactoredState, workload: LinearWorkload, groups: Sequence[int],
                         measured: Sequence[np.ndarray], steps: Sequence[float], passes: int,
                         tolerance: float, on_pass: Callable[[int], object] | None = None
                         ) -> int | None:
    """:func:`fit_marginals` on a junction tree: the same group steps, bit for bit those of
    :meth:`~fastmwem.models.factored.FactoredState.update_group`, in the order given.

    Each run of consecutive groups held by one clique is one chain of sweeps over that clique's
    table while it is the root; the root moves (a message along each edge of the way) only
    between runs, as it does step by step (give the groups in
    :meth:`~fastmwem.models.factored.FactoredState.pass_order`, which also absorbs them). Passes
    stop as :meth:`~fastmwem.models.factored.FactoredState.moved` says, as the plain passes do.
    ``None`` (nothing done, not even a change of structure) when the sweeps do not apply:
    without numba, when a group is not yet held by a clique (absorbing a later group could
    merge an earlier one's clique), or when a group over its clique has no compact index (a
    clique above ``_INDEX_DOMAIN_CELLS``, or a measured marginal above 65,536 cells).
    """
    kernels = _kernels()
    if (kernels is None or passes < 1 or not groups
            or not getattr(workload, "groups_partition_cells", False)
            or not all(state.holds(workload, int(g)) for g in groups)):
        return None
    found = [state.clique_of(workload, int(g)) for g in groups]
    cliques = [cid for cid, _, _ in found]
    indices, runs = [], []
    for _, sub, local in found:
        compact = _compact_indices(sub, [local])
        if compact is None:
            return None
        indices.extend(compact[0])
        runs.extend(compact[1])
    sweep, _, multiply = kernels
    # as update_group steps: each group's scale is that of its workload over the clique
    scales = [float(sub.query_sensitivity) for _, sub, _ in found]
    targets = [clipped_targets(values, s, bool(getattr(sub, "nonnegative_queries", False)),
                               state.total)
               for values, s, (_, sub, _) in zip(measured, scales, found)]
    sizes = [int(sub.group_sizes()[local]) for _, sub, local in found]
    starts = [i for i in range(len(groups)) if i == 0 or cliques[i] != cliques[i - 1]]
    chains = list(zip(starts, starts[1:] + [len(groups)]))
    for done in range(1, passes + 1):
        checkpoint = state.checkpoint() if tolerance > 0 else None
        for first, stop in chains:
            p = state.root_table(cliques[first])
            if any(indices[j].size != p.size for j in range(first, stop)):  # the sweeps index p
                raise RuntimeError("a clique changed shape during the passes")
            factors: np.ndarray | None = None
            for j in range(first, stop):
                current = np.zeros(sizes[j])
                sweep(p, indices[j - 1] if factors is not None else indices[j],
                      _NONE if factors is None else factors, indices[j], current, runs[j])
                log_factors = partition_log_factors(current, targets[j], scales[j], steps[j])
                if not np.all(np.isfinite(log_factors)):  # as Marginals.multiply_group refuses
                    raise ValueError("log_factors must be finite")
                factors = np.exp(log_factors)
            multiply(p, indices[stop - 1], factors)
        if on_pass is not None:
            on_pass(1)
        if checkpoint is not None and state.moved(checkpoint) < tolerance:
            return done
    return passes
