"""Marginal workloads: every cell of a marginal is a counting query; a marginal is a group."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from fastmwem._validation import check_int
from fastmwem.data.domain import Domain, check_dense
from fastmwem.workloads._common import (
    check_inplace_histogram,
    check_log_factors,
    check_subset_count,
    flat_histogram,
    merged_layout,
)
from fastmwem.workloads.base import LinearWorkload, check_histogram

__all__ = ["Marginals", "merged_layout"]

_INDEX_DOMAIN_CELLS = 2**22
_INDEX_CACHE_CELLS = 2**25
# The compact indices (one or two bytes a histogram cell) of compiled reuse passes.
_COMPACT_CACHE_BYTES = 2**26


class Marginals(LinearWorkload):
    """Marginals of a histogram on the given attribute sets.

    The queries of marginal ``m`` on attributes ``A`` are its ``prod(size(a) for a in A)`` cells,
    in C order over ``A`` sorted by domain position; each is a counting query (``q(x)`` is 0 or 1).
    Each marginal is one group: one record adds 1 to exactly one of its cells, so a group's L1
    sensitivity is 1 and the per-query sensitivity is 1.

    Args:
        domain: the histogram's domain.
        attribute_sets: one entry per marginal: a list or tuple of attribute names (or one
            name). A bare string is refused (``TypeError``): it could mean one attribute or
            each of its characters.

    >>> d = Domain(["a", "b", "c"], [2, 2, 3])
    >>> w = Marginals.all_kway(d, 2)
    >>> w.n_groups, w.n_queries
    (3, 16)
    >>> h = np.ones(d.size)
    >>> w.answer_group(h, 0).tolist()
    [3.0, 3.0, 3.0, 3.0]
    """

    #: Within a marginal, every cell belongs to exactly one query, with value 1.
    groups_partition_cells = True
    nonnegative_queries = True

    def __init__(self, domain: Domain, attribute_sets: Iterable[Sequence[str]]) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
        if isinstance(attribute_sets, (str, bytes)):
            # Iterating a string would give one-way marginals on its characters: "ab" names
            # either the attribute "ab" or the attributes "a" and "b", so it is refused.
            raise TypeError(
                f"attribute_sets must be a list of attribute sets, not a bare "
                f"{type(attribute_sets).__name__} ({attribute_sets!r}): pass "
                f"[{attribute_sets!r}] for the marginal on that one attribute, or "
                f"list({attribute_sets!r}) for a one-way marginal on each of its characters"
            )
        self.domain = domain
        sets: list[tuple[int, ...]] = []
        for attrs in attribute_sets:
            axes = tuple(sorted(domain.axes(attrs)))
            if not axes:
                raise ValueError("attribute_sets must not contain an empty set")
            sets.append(axes)
        if not sets:
            raise ValueError("attribute_sets must name at least one marginal")
        if len(set(sets)) != len(sets):
            raise ValueError("attribute_sets must not repeat a marginal")
        self.axes: tuple[tuple[int, ...], ...] = tuple(sets)
        self.attribute_sets: tuple[tuple[str, ...], ...] = tuple(
            tuple(domain.attributes[i] for i in axes) for axes in sets
        )
        # Python integers: a product of many large sizes would wrap around in int64.
        sizes = [math.prod(domain.shape[i] for i in axes) for axes in sets]
        for axes, size in zip(sets, sizes):
            check_dense(size, f"the marginal on {[domain.attributes[i] for i in axes]}")
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._layouts = [merged_layout(domain.shape, axes) for axes in sets]
        self._index_cache: dict[int, np.ndarray] = {}
        self._compact_cache: dict[int, np.ndarray] = {}

    @classmethod
    def all_kway(cls, domain: Domain, k: int) -> Marginals:
        """All ``k``-way marginals (``C(d, k)`` of them), in lexicographic order."""
        kk = check_int(k, "k", minimum=1, maximum=len(domain))
        check_subset_count(math.comb(len(domain), kk), f"{kk}-way marginals")
        return cls(domain, itertools.combinations(domain.attributes, kk))

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self._offsets[-1])

    @property
    def group_offsets(self) -> np.ndarray:
        return self._offsets

    def _size(self, group: int) -> int:
        """Cells of ``group``'s marginal (MW updates ask on every call: no array of sizes)."""
        return int(self._offsets[group + 1] - self._offsets[group])

    @property
    def query_sensitivity(self) -> float:
        return 1.0

    @property
    def group_sensitivity(self) -> np.ndarray:
        return np.ones(self.n_groups)

    def marginal_shape(self, group: int) -> tuple[int, ...]:
        return tuple(self.domain.shape[i] for i in self.axes[group])

    def describe(self, query: int) -> str:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        g = int(np.searchsorted(self._offsets, q, side="right") - 1)
        cell = np.unravel_index(q - int(self._offsets[g]), self.marginal_shape(g))
        return ", ".join(f"{a}={int(c)}" for a, c in zip(self.attribute_sets[g], cell))

    def describe_group(self, group: int) -> str:
        return "marginal(" + ", ".join(self.attribute_sets[group]) + ")"

    # -- marginal structure ----------------------------------------------------------------------
    def group_attributes(self, group: int) -> tuple[int, ...]:
        return self.axes[check_int(group, "group", minimum=0, maximum=self.n_groups - 1)]

    def group_on_marginal(self, group: int, axes: tuple[int, ...]) -> tuple[Marginals, int]:
        sub = self._marginal_domain(group, axes)
        return Marginals(sub, [self.attribute_sets[group]]), 0

    def answer_on_marginal(self, group: int, marginal: np.ndarray) -> np.ndarray:
        # The group's queries are the cells of its marginal, in the same (C) order.
        g = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        out = np.array(marginal, dtype=np.float64).reshape(-1)
        if out.size != self._size(g):
            raise ValueError(f"marginal must have {self._size(g)} cells, got {out.size}")
        return out

    # -- answers -----------------------------------------------------------------------------
    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        g = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        hist = flat_histogram(histogram, self.domain)
        index = self._cell_index(g)
        if index is not None:
            return np.bincount(index, weights=hist, minlength=self._size(g))
        merged, kept = self._layouts[g]
        other = tuple(i for i in range(len(merged)) if i not in kept)
        return hist.reshape(merged).sum(axis=other).reshape(-1)

    def _cell_index(self, group: int) -> np.ndarray | None:
        """Marginal cell of every histogram cell, for domains of at most ``_INDEX_DOMAIN_CELLS``.

        MWEM re-answers its few measured marginals thousands of times; with the index each answer
        is one ``bincount``, about twice as fast as a multi-axis sum. Whether the index is used
        depends only on the domain size, and a cached index equals a fresh one, so answers are
        bit-for-bit the same whatever the cache holds (same seed, same result).
        """
        if self.domain.size > _INDEX_DOMAIN_CELLS:
            return None
        cached = self._index_cache.get(group)
        if cached is not None:
            return cached
        flat = self._build_index(group, np.dtype(np.intp))
        if len(self._index_cache) * self.domain.size + flat.size <= _INDEX_CACHE_CELLS:
            self._index_cache[group] = flat
        return flat

    def _build_index(self, group: int, dtype: np.dtype[Any]) -> np.ndarray:
        merged, kept = self._layouts[group]
        index = np.zeros(merged, dtype=dtype)
        stride = 1
        for pos in reversed(kept):
            shape = [1] * len(merged)
            shape[pos] = merged[pos]
            index += (np.arange(merged[pos]) * stride).astype(dtype).reshape(shape)
            stride *= merged[pos]
        return index.reshape(-1)

    def compact_index(self, group: int) -> np.ndarray | None:
        """The marginal cell of every histogram cell in one or two bytes, or ``None``.

        For the compiled reuse passes (:mod:`fastmwem.models.marginal_passes`), which read it
        in place of the index of :meth:`answer_group` (eight bytes a cell): ``uint8`` for a
        marginal of at most 256 cells, ``uint16`` up to 65,536. ``None`` when
        :meth:`answer_group` does not use an index (the passes must sum exactly as it does), for
        a larger marginal, and once the cache (``_COMPACT_CACHE_BYTES``) is full.
        """
        g = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        cached = self._compact_cache.get(g)
        if cached is not None:
            return cached
        cells = int(self._offsets[g + 1] - self._offsets[g])
        if self.domain.size > _INDEX_DOMAIN_CELLS or cells > 2**16:
            return None
        dtype = np.dtype(np.uint8 if cells <= 2**8 else np.uint16)
        used = sum(index.nbytes for index in self._compact_cache.values())
        if used + self.domain.size * dtype.itemsize > _COMPACT_CACHE_BYTES:
            return None
        index = self._build_index(g, dtype)
        self._compact_cache[g] = index
        return index

    def answer(self, histogram: np.ndarray) -> np.ndarray:
        """All marginals at once, sharing partial sums along a trie of attribute prefixes.

        A node for the sorted prefix ``(s_1, ..., s_j)`` holds the histogram summed over every
        axis before ``s_j`` that is not in the prefix, as an array of shape (cells of the
        prefix, cells of the axes after ``s_j``). Its children come from a chain that sums the
        following axes out one at a time, so each node costs about twice its own size.

        The marginals are visited in sorted order of their axes, depth first, and each level
        of the trie keeps only its latest chain: a later marginal never needs an earlier one.
        So at most about three histograms' worth of partial sums are alive at once, whatever
        the number of marginals (all 3-way marginals of 26 binary attributes: 3 instead of 15).
        """
        hist = check_histogram(histogram, self.domain)
        shape = self.domain.shape
        tail = [int(np.prod(shape[i:])) for i in range(len(shape) + 1)]
        # stack[j] = [prefix of length j, next axis its chain has not summed out, chain array]
        stack: list[list[Any]] = [[(), 0, hist.reshape(1, tail[0])]]
        out = np.empty(self.n_queries)
        for g in sorted(range(self.n_groups), key=lambda i: self.axes[i]):
            axes = self.axes[g]
            depth = 0
            while depth + 1 < len(stack) and stack[depth + 1][0] == axes[:depth + 1]:
                depth += 1
            del stack[depth + 1:]
            for axis in axes[depth:]:
                level = stack[-1]
                while level[1] < axis:  # sum out the axes between the prefix and ``axis``
                    chain, a = level[2], level[1]
                    level[2] = chain.reshape(chain.shape[0], shape[a], tail[a + 1]).sum(axis=1)
                    level[1] = a + 1
                chain = level[2]
                node = chain.reshape(chain.shape[0] * shape[axis], tail[axis + 1])
                stack.append([level[0] + (axis,), axis + 1, node])
            out[self._offsets[g]:self._offsets[g + 1]] = stack[-1][2].sum(axis=1)
        return out

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        w = self._check_weights(weights)
        out = np.zeros(self.domain.shape)
        for g in range(self.n_groups):
            merged, kept = self._layouts[g]
            out.reshape(merged)[...] += self._broadcastable(g, w[self._offsets[g]:self._offsets[g + 1]])
        return out.reshape(-1)

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        g = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        flat = check_inplace_histogram(histogram, self.domain)
        factors = np.exp(check_log_factors(log_factors, self._size(g)))
        merged, _ = self._layouts[g]
        view = flat.reshape(merged)
        view *= self._broadcastable(g, factors)

    def _broadcastable(self, group: int, values: np.ndarray) -> np.ndarray:
        merged, kept = self._layouts[group]
        shape = [1] * len(merged)
        for pos in kept:
            shape[pos] = merged[pos]
        return np.asarray(values).reshape(shape)
