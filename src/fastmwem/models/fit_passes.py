"""The dense fit's step over measured marginals, in a few sweeps of the histogram.

A step of :func:`~fastmwem.models.fit.fit` on a dense state needs the gradient
``sum_i A_i^T c_i`` over every cell, and, for each step size the line search tries, the moved
distribution and its answers. Done group by group, each measured group costs a sweep of the
whole histogram for its answers at each trial and one for its share of the gradient at each
step; on a million cells that is most of the fit's time. When every measured group has a
marginal structure (its answers are a function of its marginal), :class:`MarginalTrie`
computes all the marginals at once along a trie of attribute prefixes, and the gradient as the
transpose of that, so a step sweeps the histogram a few times whatever the number of groups.
The elementwise parts of a trial (exponent and clip, normalisation and the difference the line
search reads) are one compiled sweep each with numba, numpy otherwise, with equal results.

The sums are associated differently from the group-by-group path (a marginal cell is summed
along the trie, a cell's gradient adds the broadcast tables in a different order, the
normalising total is ``<saved, factors>``), so the iterates agree with it up to float
rounding, not bit for bit (on a million cells and a thousand steps: the losses to 1e-10 and
every cell to 1e-10, relative).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

import numpy as np

from fastmwem._jit import njit_cached
from fastmwem.models.state import _MAX_STEP, MWState
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.marginals import Marginals

__all__ = ["COMPILED_CELLS", "FLOOR", "DenseMarginals", "MarginalTrie", "inner", "sub_transpose"]

# Every cell keeps at least this mass: a multiplicative step can never revive a zero.
FLOOR = float(np.finfo(np.float64).tiny)


def inner(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` without BLAS (whose threads cost more than they save on a busy machine)."""
    return float(np.einsum("i,i->", a.reshape(-1), b.reshape(-1)))


def sub_transpose(sub: LinearWorkload, local: int, coefficients: np.ndarray) -> np.ndarray:
    """``A^T c`` for group ``local`` of a workload over a marginal domain (a flat table)."""
    weights = np.zeros(sub.n_queries)
    weights[sub.group_queries(local)] = coefficients
    return np.asarray(sub.answer_transpose(weights), dtype=np.float64)


@dataclass
class _Node:
    """A sorted prefix of attribute axes: the slot of its marginal (if one is wanted) and its
    children by their last axis."""

    slot: int | None = None
    children: dict[int, _Node] = field(default_factory=dict)


class MarginalTrie:
    """Marginal tables of a dense histogram on several axis sets, and the transposed sum.

    A node for the prefix ``(s_1, ..., s_j)`` handles an array of shape (cells of the prefix,
    cells of the axes after ``s_j``): the histogram summed over every other axis before
    ``s_j``. Its children come from one chain that sums the following axes out, so each node
    costs about its own size, and the marginals share the large sums near the root.
    :meth:`expand` runs the same trie backwards: each node's table is broadcast over the axes
    its parent's chain summed out, and added to its siblings' on the way up. Both walks are
    planned once, as lists of array operations (a fit runs them thousands of times).

    Args:
        shape: the histogram's shape (domain sizes).
        axes: the axis sets, each sorted and without repeats (repeated sets share a slot).
    """

    def __init__(self, shape: Sequence[int], axes: Sequence[tuple[int, ...]]) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.tail = [math.prod(self.shape[i:]) for i in range(len(self.shape) + 1)]
        root = _Node()
        unique = sorted(set(axes))
        for slot, key in enumerate(unique):
            node = root
            for a in key:
                node = node.children.setdefault(a, _Node())
            node.slot = slot
        self.slots = [unique.index(key) for key in axes]
        self.n_unique = len(unique)
        # Arrays are numbered: 0 the histogram (down) or the result (up). Down: each step is
        # (source, shape, target): target = source.reshape(shape).sum(axis=1).
        self._down: list[tuple[int, tuple[int, ...], int]] = []
        self._outputs = [0] * self.n_unique
        self._count = 1
        self._plan_down(root, 0, 1, 0)
        self._down_frees = _last_uses([((s,), t) for s, _, t in self._down], self._outputs)
        self._places = _places([(math.prod(shape[::2]) if len(shape) == 3 else 0, target)
                                for _, shape, target in self._down],
                               self._down_frees, self.tail[0])
        self._up: list[tuple[str, int, tuple[int, ...], int]] = []
        self._count = 0
        self._result = self._plan_up(root, 1, 0)
        self._up_frees = _last_uses([((s,) if kind in ("add", "expand") else (), t)
                                     for kind, s, _, t in self._up], [self._result])
        self._up_places = _places(
            [(math.prod(shape) if kind in ("expand", "repeat") and target != self._result
              else 0, target) for kind, _, shape, target in self._up],
            self._up_frees, self.tail[0])

    def _array(self) -> int:
        self._count += 1
        return self._count - 1

    def _plan_down(self, node: _Node, array: int, cells: int, level: int) -> None:
        chain, at = array, level
        for b in sorted(node.children):
            if at < b:  # sum the axes between out at once
                target = self._array()
                self._down.append((chain, (cells, self.tail[at] // self.tail[b],
                                           self.tail[b]), target))
                chain, at = target, b
            self._plan_down(node.children[b], chain, cells * self.shape[b], b + 1)
        if node.slot is not None:  # from the end of the chain: the smallest array holding it
            target = self._array()
            self._down.append((chain, (cells, self.tail[at]), target))
            self._outputs[node.slot] = target

    def _plan_up(self, node: _Node, cells: int, level: int) -> int:
        """Plans the node's share of the sum as an array (cells, tail[level]); its number.

        Steps (kind, source, shape, target): ``"add"``, target.reshape(shape) += source
        broadcast over the middle axis; ``"expand"``, target = that broadcast, a new array;
        ``"own"``, target.reshape(shape) += table ``source`` broadcast over the last axis;
        ``"repeat"``, target = table ``source`` broadcast over the last axis, a new array."""
        acc, at = -1, level
        for b in sorted(node.children, reverse=True):
            sub = self._plan_up(node.children[b], cells * self.shape[b], b + 1)
            if acc >= 0:  # broadcast over the axes b..at-1 that this chain summed out
                self._up.append(("add", acc, (cells, self.tail[b] // self.tail[at],
                                              self.tail[at]), sub))
            acc, at = sub, b
        if acc < 0:
            target = self._array()
            self._up.append(("repeat", cast(int, node.slot), (cells, self.tail[level]),
                             target))
            return target
        if node.slot is not None:  # before any broadcast, on the smaller array
            self._up.append(("own", node.slot, (cells, self.tail[at]), acc))
        if at == level:
            return acc
        target = self._array()
        self._up.append(("expand", acc, (cells, self.tail[level] // self.tail[at],
                                         self.tail[at]), target))
        return target

    def marginals(self, histogram: np.ndarray, workspace: np.ndarray | None = None
                  ) -> list[np.ndarray]:
        """Each axis set's marginal of ``histogram`` (flat, C order), in the order given.

        ``workspace``: an array of as many cells, whose values are not needed, to hold the
        partial sums where they fit (the same results, less memory)."""
        arrays: dict[int, np.ndarray] = {0: histogram}
        add = np.add.reduce  # ndarray.sum without its Python wrapper (the same sums)
        for (source, shape, target), place, frees in zip(self._down, self._places,
                                                         self._down_frees):
            if workspace is None or place < 0:
                arrays[target] = add(arrays[source].reshape(shape), axis=1)
            else:
                held = workspace[place:place + shape[0] * shape[2]].reshape(shape[0], shape[2])
                arrays[target] = add(arrays[source].reshape(shape), axis=1, out=held)
            for k in frees:
                del arrays[k]
        return [arrays[self._outputs[s]] for s in self.slots]

    def expand(self, tables: Sequence[np.ndarray], out: np.ndarray | None = None,
               workspace: np.ndarray | None = None) -> np.ndarray:
        """``sum_k`` of ``tables[k]`` (one per axis set given, flat in C order) broadcast over
        the whole domain: a flat array of every cell, written into ``out`` if given (the
        array of the cells, not a copy: it holds the sum as it is built). ``workspace`` is as
        in :meth:`marginals`."""
        merged: list[np.ndarray] = [np.empty(0)] * self.n_unique
        seen = [False] * self.n_unique
        for slot, table in zip(self.slots, tables):
            merged[slot] = merged[slot] + table if seen[slot] else table
            seen[slot] = True
        arrays: dict[int, np.ndarray] = {}
        for (kind, source, shape, target), place, frees in zip(self._up, self._up_places,
                                                               self._up_frees):
            if kind == "add":
                view = arrays[target].reshape(shape)
                view += arrays[source].reshape(shape[0], shape[2])[:, None, :]
            elif kind == "own":
                view = arrays[target].reshape(shape)
                view += merged[source][:, None]
            else:  # a new array: the result's own is written in place
                if target == self._result and out is not None:
                    made = out
                elif workspace is not None and place >= 0:
                    made = workspace[place:place + math.prod(shape)]
                else:
                    made = np.empty(shape)
                if kind == "expand":
                    made.reshape(shape)[...] = arrays[source].reshape(
                        shape[0], shape[2])[:, None, :]
                else:
                    made.reshape(shape)[...] = merged[source][:, None]
                arrays[target] = made
            for k in frees:
                del arrays[k]
        return arrays[self._result].reshape(-1)


def _places(steps: Sequence[tuple[int, int]], frees: Sequence[list[int]], capacity: int
            ) -> list[int]:
    """Where in a workspace of ``capacity`` cells each step (size of the array it makes, 0
    if it is kept or makes none; the array) writes it, first fit among the live ones; -1 if
    nowhere (none made, kept, or no room)."""
    live: dict[int, tuple[int, int]] = {}  # array: (start, stop)
    places = []
    for (size, target), done in zip(steps, frees):
        place = -1
        if size > 0:
            start = 0
            for begin, end in sorted(live.values()):
                if begin - start >= size:
                    break
                start = max(start, end)
            if start + size <= capacity:
                place = start
                live[target] = (start, start + size)
        places.append(place)
        for k in done:
            live.pop(k, None)
    return places


def _last_uses(steps: Sequence[tuple[tuple[int, ...], int]], kept: Sequence[int]
               ) -> list[list[int]]:
    """After each step (arrays read, array written), the arrays no later step uses (to free
    them)."""
    last: dict[int, int] = {}
    for i, (sources, target) in enumerate(steps):
        for k in (*sources, target):
            last[k] = i
    frees: list[list[int]] = [[] for _ in steps]
    for k, i in last.items():
        if k not in kept:
            frees[i].append(k)
    return frees


def _exponent(gradient: np.ndarray, step: float, shift: float,  # pragma: no cover - compiled
              out: np.ndarray) -> None:
    """``out = max(gradient * step - shift, -_MAX_STEP)``, as numpy computes it."""
    for i in range(gradient.size):
        value = gradient[i] * step - shift
        out[i] = value if value > -_MAX_STEP else -_MAX_STEP


def _normalise(saved: np.ndarray, factors: np.ndarray, total: float,  # pragma: no cover
               p: np.ndarray, difference: np.ndarray) -> None:
    """``p = max(saved * factors / total, FLOOR)`` and ``difference = saved - p``, as numpy
    computes them."""
    for i in range(p.size):
        value = saved[i] * factors[i] / total
        value = value if value > FLOOR else FLOOR
        p[i] = value
        difference[i] = saved[i] - value


def _exponent_numpy(gradient: np.ndarray, step: float, shift: float, out: np.ndarray) -> None:
    np.multiply(gradient, step, out=out)
    out -= shift
    np.maximum(out, -_MAX_STEP, out=out)


def _normalise_numpy(saved: np.ndarray, factors: np.ndarray, total: float, p: np.ndarray,
                     difference: np.ndarray) -> None:
    np.multiply(saved, factors, out=p)
    p /= total
    np.maximum(p, FLOOR, out=p)
    np.subtract(saved, p, out=difference)


_Kernels = tuple[Callable[..., None], Callable[..., None]]
_compiled: _Kernels | Literal[False] | None = None  # False once numba was found missing

#: Fewest cells for the compiled sweeps: loading numba and them takes about half a second,
#: about what they save in a fit of a thousand steps on this many cells.
COMPILED_CELLS = 2**18


def _kernels(cells: int) -> _Kernels:
    """The compiled sweeps for a histogram of ``cells``, or their numpy equivalents (the
    same results) on a smaller histogram or without numba."""
    global _compiled
    if cells < COMPILED_CELLS:
        return _exponent_numpy, _normalise_numpy
    if _compiled is None:
        try:
            _compiled = (njit_cached(_exponent, nogil=True), njit_cached(_normalise, nogil=True))
        except ImportError:
            _compiled = False
    return (_exponent_numpy, _normalise_numpy) if _compiled is False else _compiled


class DenseMarginals:
    """Mirror descent on the dense distribution of an :class:`MWState`, in place, for measured
    groups that all have a marginal structure (see :meth:`build`)."""

    def __init__(self, state: MWState, workload: LinearWorkload, groups: Sequence[int],
                 axes: Sequence[tuple[int, ...]]) -> None:
        self.p = state.distribution
        self.saved = np.empty_like(self.p)
        self.scratch = np.empty_like(self.p)  # the exponent, then the factors
        self.difference = np.empty_like(self.p)  # saved - p after a proposal
        # The gradient, rewritten at each step (the last one is no longer read by then).
        self.cells_gradient = np.empty_like(self.p)
        self.workload, self.groups = workload, list(groups)
        self.trie = MarginalTrie(state.domain.shape, axes)
        self.subs = [workload.group_on_marginal(g, a) for g, a in zip(self.groups, axes)]
        # Groups whose queries are their marginal's cells in C order: their answers are the
        # marginal, and their A^T c is the table c (no workload call, which dominates the step
        # on a small domain).
        self.direct = [type(sub) is Marginals and sub.axes == (tuple(range(len(a))),)
                       for (sub, _), a in zip(self.subs, axes)]
        self.exponent, self.normalise = _kernels(self.p.size)
        self.moved: float | None = None
        self.lowest: tuple[np.ndarray, float, float] | None = None  # a gradient's min and max

    @classmethod
    def build(cls, state: MWState, workload: LinearWorkload, groups: Sequence[int]
              ) -> DenseMarginals | None:
        """The model for ``groups``, or ``None`` when one has no marginal structure."""
        own = getattr(workload, "group_attributes", None)
        if own is None or not hasattr(workload, "answer_on_marginal"):
            return None
        axes = []
        for g in groups:
            found = own(g)
            if found is None:
                return None
            key = tuple(int(a) for a in found)
            if not key or list(key) != sorted(set(key)):
                return None
            axes.append(key)
        return cls(state, workload, groups, axes)

    def answers(self) -> list[np.ndarray]:
        tables = self.trie.marginals(self.p, self.scratch)  # the factors: no longer needed
        return [t if direct else
                np.asarray(self.workload.answer_on_marginal(g, t), dtype=np.float64)
                for g, t, direct in zip(self.groups, tables, self.direct)]

    def gradient(self, coefficients: list[np.ndarray]) -> np.ndarray:
        """``sum_i A_i^T c_i``, each ``A_i^T c_i`` as a table on its marginal, expanded."""
        self.lowest = None
        return self.trie.expand([c if direct else sub_transpose(sub, local, c) for
                                 (sub, local), c, direct in zip(self.subs, coefficients,
                                                                self.direct)],
                                out=self.cells_gradient, workspace=self.scratch)

    def _range(self, gradient: np.ndarray) -> tuple[float, float]:
        if self.lowest is None or self.lowest[0] is not gradient:
            self.lowest = (gradient, float(gradient.min()), float(gradient.max()))
        return self.lowest[1], self.lowest[2]

    def largest(self, gradient: np.ndarray) -> float:
        """``max |gradient|``."""
        low, high = self._range(gradient)
        return max(abs(low), abs(high))

    def begin(self) -> None:
        np.copyto(self.saved, self.p)

    def propose(self, gradient: np.ndarray, eta: float) -> float:
        """Move to the step of size ``eta`` from the saved point; return ``<grad, p - p_new>``.

        The exponent's largest value is the smallest gradient's times ``-eta`` (rounding
        preserves order), so the shift needs no sweep of the exponent."""
        shift = self._range(gradient)[0] * -eta
        self.exponent(gradient, -eta, shift, self.scratch)
        np.exp(self.scratch, out=self.scratch)
        self.normalise(self.saved, self.scratch, inner(self.saved, self.scratch), self.p,
                       self.difference)
        self.moved = None
        return inner(gradient, self.difference)

    def revert(self) -> None:
        np.copyto(self.p, self.saved)
        self.moved = 0.0

    def movement(self) -> float:
        if self.moved is None:
            self.moved = float(np.abs(self.difference, out=self.scratch).sum())
        return self.moved

    def finish(self) -> None:
        pass
