"""Range queries: 1-D intervals and multi-dimensional boxes, answered through prefix sums."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_int, check_memory
from fastmwem.data.domain import Domain
from fastmwem.random import make_rng
from fastmwem.workloads._common import (
    broadcastable,
    check_domain,
    check_inplace_histogram,
    check_log_factors,
    flat_histogram,
    merged_layout,
    project,
)
from fastmwem.workloads.base import LinearWorkload, check_histogram

__all__ = ["RangeQueries"]

#: Largest number of signed box corners (over all queries) kept for inclusion-exclusion.
MAX_CORNERS = 2**25


def _check_bounds(values: object, name: str, n_attrs: int) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be an integer array")
    try:
        arr = np.asarray(values)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer array: {exc}") from None
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.ndim == 1 and n_attrs == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.shape[1] != n_attrs:
        raise ValueError(
            f"{name} must have shape (n_queries, {n_attrs}) (one bound per query per attribute), "
            f"got {arr.shape}"
        )
    if arr.shape[0] < 1:
        raise ValueError(f"{name} must describe at least one query")
    return arr.astype(np.int64)


def _prefix_sums(arr: np.ndarray, reverse: bool = False) -> np.ndarray:
    """In place: inclusive cumulative sums along every axis (from the end when ``reverse``)."""
    shape = arr.shape
    for axis, n in enumerate(shape):
        if n == 1:
            continue
        left = int(np.prod(shape[:axis], dtype=np.int64))
        right = int(np.prod(shape[axis + 1:], dtype=np.int64))
        v = arr.reshape(left, n, right)
        if right == 1 or left * right < 64:
            # Along the contiguous last axis numpy's cumsum is fast.
            r = v[:, ::-1, :] if reverse else v
            np.cumsum(r, axis=1, out=r)
        else:
            # Along an outer axis numpy's cumsum walks strided columns (about 30 ns a cell);
            # adding whole slabs one after the other is several times faster.
            steps = range(n - 2, -1, -1) if reverse else range(1, n)
            for i in steps:
                prev = i + 1 if reverse else i - 1
                v[:, i, :] += v[:, prev, :]
    return arr


class UnitBoxQueries:
    """Range workloads whose query ``q`` is the box ``self._box(q)`` of ``self._layout``.

    Each query is its own group and counts records (values 0/1), so under add/remove-one-record
    ``query_sensitivity`` and every group sensitivity are 1. Group operations slice the box.
    """

    domain: Domain
    _layout: tuple[tuple[int, ...], tuple[int, ...]]

    if TYPE_CHECKING:  # the workload class that mixes this in has them (read-only)
        @property
        def n_groups(self) -> int: ...

        @property
        def n_queries(self) -> int: ...

    def _box(self, query: int) -> tuple[slice, ...]:
        raise NotImplementedError

    @property
    def query_sensitivity(self) -> float:
        return 1.0

    @property
    def group_sensitivity(self) -> np.ndarray:
        return np.ones(self.n_groups)

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        q = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        hist = flat_histogram(histogram, self.domain)
        return np.array([hist.reshape(self._layout[0])[self._box(q)].sum()])

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        q = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        flat = check_inplace_histogram(histogram, self.domain)
        lf = check_log_factors(log_factors, 1)
        flat.reshape(self._layout[0])[self._box(q)] *= np.exp(lf[0])

    def row(self, query: int) -> np.ndarray:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        out = np.zeros(self._layout[0])
        out[self._box(q)] = 1.0
        return out.reshape(-1)


class RangeQueries(UnitBoxQueries, LinearWorkload):
    """Counting queries of boxes: products of inclusive intervals over some ordered attributes.

    Query ``i`` counts the records ``x`` with ``lower[i, j] <= x[a_j] <= upper[i, j]`` for every
    attribute ``a_j`` of ``attributes`` (codes are the order); the other attributes are summed
    over. One attribute gives the 1-D range queries of the MWEM paper (arXiv:1012.4763) s.3.1, several give its
    multi-dimensional ranges.

    Answers use inclusive prefix sums of the marginal on ``attributes`` and inclusion-exclusion
    over the box corners, dropping every corner that falls before the start of an axis (so a
    query costs ``2^(number of its intervals not starting at 0)`` look-ups);
    ``answer_transpose`` scatters the same signed corners into a difference array and takes
    reverse cumulative sums. No query matrix is built.

    Each query is its own group. A record changes each answer by at most 1 (add/remove one
    record), so ``query_sensitivity`` and every group sensitivity are 1.

    Args:
        domain: the domain.
        attributes: one attribute name or a sequence of distinct names (the box's axes, in the
            column order of ``lower``/``upper``).
        lower, upper: integer arrays of shape ``(n_queries, len(attributes))`` (or
            ``(n_queries,)`` for one attribute) of inclusive bounds, ``0 <= lower <= upper <
            size(attribute)``.

    >>> d = Domain(["age", "sex"], [5, 2])
    >>> w = RangeQueries(d, "age", lower=[0, 2], upper=[4, 3])
    >>> w.answer(np.arange(10.0)).tolist()
    [45.0, 22.0]
    >>> w.describe(1)
    'age in [2, 3]'
    """

    nonnegative_queries = True

    def __init__(self, domain: Domain, attributes: str | Sequence[str], lower: object,
                 upper: object) -> None:
        self.domain = check_domain(domain)
        if isinstance(attributes, str):
            attributes = (attributes,)
        try:
            attrs = tuple(attributes)
        except TypeError:
            raise TypeError(
                f"attributes must be an attribute name or a sequence of names, got {type(attributes).__name__}"
            ) from None
        if not attrs:
            raise ValueError("attributes must name at least one attribute")
        axes = domain.axes(attrs)
        lo = _check_bounds(lower, "lower", len(attrs))
        hi = _check_bounds(upper, "upper", len(attrs))
        if lo.shape != hi.shape:
            raise ValueError(f"lower and upper must have the same shape, got {lo.shape} and {hi.shape}")
        sizes = np.array([domain.shape[a] for a in axes], dtype=np.int64)
        for name, arr in (("lower", lo), ("upper", hi)):
            bad = (arr < 0) | (arr >= sizes)
            if bad.any():
                i, j = (int(v) for v in np.argwhere(bad)[0])
                raise ValueError(
                    f"{name}[{i}] for attribute {attrs[j]!r} must lie in 0..{int(sizes[j]) - 1}, "
                    f"got {int(arr[i, j])}"
                )
        empty = lo > hi
        if empty.any():
            i, j = (int(v) for v in np.argwhere(empty)[0])
            raise ValueError(
                f"query {i}: lower must be <= upper for attribute {attrs[j]!r}, "
                f"got {int(lo[i, j])} > {int(hi[i, j])}"
            )
        self.attributes: tuple[str, ...] = attrs
        self.lower = lo
        self.upper = hi
        self.lower.setflags(write=False)
        self.upper.setflags(write=False)
        # Internally the box axes are kept in domain order, as the projected marginal is.
        order = np.argsort(axes, kind="stable")
        self._axes = tuple(int(axes[i]) for i in order)
        self._lo = lo[:, order]
        self._hi = hi[:, order]
        self._layout = merged_layout(domain.shape, self._axes)
        self._mshape = tuple(domain.shape[a] for a in self._axes)
        self._corners = self._signed_corners()

    @classmethod
    def random(cls, domain: Domain, attributes: str | Sequence[str], n_queries: int, *,
               rng: int | np.random.Generator | None = None) -> RangeQueries:
        """``n_queries`` random boxes as in the MWEM paper (arXiv:1012.4763) s.3.1.

        For every query and attribute two endpoints are drawn independently and uniformly from
        the attribute's codes; the interval runs from the smaller to the larger (inclusive).
        """
        check_domain(domain)
        n = check_int(n_queries, "n_queries", minimum=1)
        names = (attributes,) if isinstance(attributes, str) else tuple(attributes)
        axes = domain.axes(names)  # validates the names before any randomness is drawn
        if not axes:
            raise ValueError("attributes must name at least one attribute")
        # Endpoints, bounds and their copies: about 12 int64 entries per query and attribute.
        check_memory(96 * n * len(axes), f"{n} random range queries")
        gen = make_rng(rng)
        sizes = np.array([domain.shape[a] for a in axes], dtype=np.int64)
        ends = gen.integers(0, sizes[None, :, None], size=(n, len(axes), 2))
        return cls(domain, names, ends.min(axis=2), ends.max(axis=2))

    def _signed_corners(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Flat marginal indices, query ids and signs of the non-vanishing box corners.

        ``sum_{x in box} m(x) = sum over corners c of sign(c) P[c]`` with ``P`` the inclusive
        prefix sums of ``m``; on each axis a corner takes ``upper`` (+) or ``lower - 1`` (-),
        and the latter vanishes when ``lower == 0``, so it is expanded only for those queries.
        """
        total = int(np.sum(np.left_shift(1, np.count_nonzero(self._lo > 0, axis=1), dtype=np.int64)))
        if total > MAX_CORNERS:
            raise ValueError(
                f"these boxes have {total} inclusion-exclusion corners in total (2^m for a box "
                f"with m intervals not starting at 0), above MAX_CORNERS = {MAX_CORNERS}; "
                "use fewer box attributes or a MatrixWorkload"
            )
        return self._corners_of(self._lo, self._hi)

    def _corners_of(self, lo_bounds: np.ndarray, hi_bounds: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The signed corners of the boxes given by rows of bounds (ids are row positions)."""
        n = lo_bounds.shape[0]
        strides = np.ones(len(self._mshape), dtype=np.int64)
        for j in range(len(self._mshape) - 2, -1, -1):
            strides[j] = strides[j + 1] * self._mshape[j + 1]
        flat = np.zeros(n, dtype=np.int64)
        qid = np.arange(n, dtype=np.int64)
        sign = np.ones(n, dtype=np.float64)
        for j in range(len(self._mshape)):
            lo = lo_bounds[qid, j]
            up = flat + hi_bounds[qid, j] * strides[j]
            keep = lo > 0
            down = flat[keep] + (lo[keep] - 1) * strides[j]
            flat = np.concatenate([up, down])
            qid = np.concatenate([qid, qid[keep]])
            sign = np.concatenate([sign, -sign[keep]])
        return flat, qid, sign

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self.lower.shape[0])

    def describe(self, query: int) -> str:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        return ", ".join(
            f"{a} in [{int(lo)}, {int(hi)}]"
            for a, lo, hi in zip(self.attributes, self.lower[q], self.upper[q])
        )

    def describe_group(self, group: int) -> str:
        return "range(" + self.describe(group) + ")"

    # -- answers -----------------------------------------------------------------------------
    def answer(self, histogram: np.ndarray) -> np.ndarray:
        hist = check_histogram(histogram, self.domain)
        prefix = _prefix_sums(np.ascontiguousarray(project(hist, self._layout)))
        flat, qid, sign = self._corners
        return np.bincount(qid, weights=sign * prefix.reshape(-1)[flat], minlength=self.n_queries)

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        # The corners of the chosen boxes only, over the same prefix sums as ``answer``.
        prefix = _prefix_sums(np.ascontiguousarray(project(hist, self._layout)))
        flat, pos, sign = self._corners_of(self._lo[ids], self._hi[ids])
        return np.bincount(pos, weights=sign * prefix.reshape(-1)[flat], minlength=ids.size)

    def group_attributes(self, group: int) -> tuple[int, ...]:
        check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        return self._axes

    def group_on_marginal(self, group: int, axes: tuple[int, ...]) -> tuple[RangeQueries, int]:
        sub = self._marginal_domain(group, axes)
        return RangeQueries(sub, self.attributes, self.lower[group:group + 1],
                            self.upper[group:group + 1]), 0

    def _box(self, query: int) -> tuple[slice, ...]:
        merged, kept = self._layout
        box = [slice(None)] * len(merged)
        for j, pos in enumerate(kept):
            box[pos] = slice(int(self._lo[query, j]), int(self._hi[query, j]) + 1)
        return tuple(box)

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        w = self._check_weights(weights)
        if not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite")
        flat, qid, sign = self._corners
        size = int(np.prod(self._mshape, dtype=np.int64))
        diff = np.bincount(flat, weights=sign * w[qid], minlength=size).reshape(self._mshape)
        suffix = _prefix_sums(diff, reverse=True)
        out = np.zeros(self._layout[0])
        out += broadcastable(suffix, self._layout)
        return out.reshape(-1)
