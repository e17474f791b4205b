"""Several workloads over one domain, stacked into one workload with their groups kept."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fastmwem._validation import check_int
from fastmwem.workloads.base import LinearWorkload, check_histogram
from fastmwem.workloads.oracles import ConcatenatedOracle, ExactOracle, ScanOracle

__all__ = ["Concatenate"]

_MEMBERS = ("answer", "answer_group", "answer_transpose", "multiply_group", "row",
            "group_offsets", "query_sensitivity", "group_sensitivity", "n_queries", "domain")


def _part_oracle(part: LinearWorkload) -> ExactOracle:
    """A part's own top-k oracle, or an exact scan of its answers when it has none."""
    own = getattr(part, "top_k_oracle", None)
    if own is not None:
        return own()
    n, size = int(part.n_queries), int(part.domain.size)
    return ScanOracle(n, size, part.answer, lambda v, ids: np.asarray(part.answer(v))[ids])


class Concatenate(LinearWorkload):
    """The queries of ``workloads`` one after the other, over their common domain.

    Queries and groups are renumbered consecutively: the queries of ``workloads[0]`` come
    first. Each part's groups stay groups, and its operations are delegated to it, so every
    part keeps its structure (no dense matrix). Sensitivities are the parts' own: the query
    sensitivity is their maximum, and group sensitivities are concatenated (a group never spans
    two parts).

    Args:
        workloads: one or more workloads whose domains are equal (``Domain`` equality, not just
            equal shapes).

    >>> from fastmwem.data.domain import Domain
    >>> from fastmwem.workloads import Marginals, RangeQueries
    >>> d = Domain(["a", "b"], [3, 2])
    >>> w = Concatenate([Marginals(d, [["b"]]), RangeQueries(d, "a", [1], [2])])
    >>> w.n_queries, w.n_groups, w.answer(np.arange(6.0)).tolist()
    (3, 2, [6.0, 9.0, 14.0])
    >>> w.describe_group(1)
    'range(a in [1, 2])'
    """

    def __init__(self, workloads: Iterable[LinearWorkload]) -> None:
        if isinstance(workloads, (str, bytes)) or not isinstance(workloads, Iterable):
            raise TypeError(f"workloads must be an iterable of workloads, got {type(workloads).__name__}")
        parts = tuple(workloads)
        if not parts:
            raise ValueError("workloads must hold at least one workload")
        for i, part in enumerate(parts):
            missing = [m for m in _MEMBERS if not hasattr(part, m)]
            if missing:
                raise TypeError(f"workloads[{i}] is not a workload (no {', '.join(missing)})")
        domain = parts[0].domain
        for i, part in enumerate(parts[1:], start=1):
            if part.domain != domain:
                raise ValueError(
                    f"workloads must share one domain: workloads[{i}].domain = {part.domain} "
                    f"differs from workloads[0].domain = {domain}"
                )
        self.domain = domain
        self.parts: tuple[LinearWorkload, ...] = parts
        sizes = [int(p.n_queries) for p in parts]
        groups = [int(np.asarray(p.group_offsets).size - 1) for p in parts]
        self._query_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._group_starts = np.concatenate([[0], np.cumsum(groups)]).astype(np.int64)
        self._offsets = np.concatenate(
            [[0]] + [np.asarray(p.group_offsets[1:], dtype=np.int64) + s
                     for p, s in zip(parts, self._query_starts[:-1])]
        ).astype(np.int64)
        self._group_sens = np.concatenate(
            [np.asarray(p.group_sensitivity, dtype=np.float64) for p in parts]
        )

    @property
    def groups_partition_cells(self) -> bool:
        """True when every part's groups partition the cells (each cell in one query per group)."""
        return all(getattr(p, "groups_partition_cells", False) for p in self.parts)

    @property
    def nonnegative_queries(self) -> bool:  # type: ignore[override]
        """True when every part's queries are non-negative."""
        return all(getattr(p, "nonnegative_queries", False) for p in self.parts)

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self._query_starts[-1])

    @property
    def group_offsets(self) -> np.ndarray:
        return self._offsets

    @property
    def query_sensitivity(self) -> float:
        return max(float(p.query_sensitivity) for p in self.parts)

    @property
    def group_sensitivity(self) -> np.ndarray:
        return self._group_sens.copy()

    def _locate_query(self, query: int) -> tuple[int, int]:
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        i = int(np.searchsorted(self._query_starts, q, side="right") - 1)
        return i, q - int(self._query_starts[i])

    def _locate_group(self, group: int) -> tuple[int, int]:
        g = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        i = int(np.searchsorted(self._group_starts, g, side="right") - 1)
        return i, g - int(self._group_starts[i])

    def describe(self, query: int) -> str:
        i, q = self._locate_query(query)
        describe = getattr(self.parts[i], "describe", None)
        return describe(q) if describe is not None else f"workload {i} query {q}"

    def describe_group(self, group: int) -> str:
        i, g = self._locate_group(group)
        describe = getattr(self.parts[i], "describe_group", None)
        return describe(g) if describe is not None else f"workload {i} group {g}"

    # -- answers -----------------------------------------------------------------------------
    def answer(self, histogram: np.ndarray) -> np.ndarray:
        hist = check_histogram(histogram, self.domain)
        return np.concatenate([np.asarray(p.answer(hist), dtype=np.float64) for p in self.parts])

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        i, g = self._locate_group(group)
        return self.parts[i].answer_group(histogram, g)

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        parts = np.searchsorted(self._query_starts, ids, side="right") - 1
        out = np.empty(ids.size)
        for i in np.unique(parts):
            sel = parts == i
            part, local = self.parts[i], ids[sel] - self._query_starts[i]
            own = getattr(part, "answer_queries", None)
            out[sel] = own(hist, local) if own is not None else np.asarray(part.answer(hist))[local]
        return out

    def group_attributes(self, group: int) -> tuple[int, ...] | None:
        i, g = self._locate_group(group)
        own = getattr(self.parts[i], "group_attributes", None)
        return None if own is None else own(g)

    def group_on_marginal(self, group: int, axes: tuple[int, ...]) -> tuple[LinearWorkload, int]:
        i, g = self._locate_group(group)
        return self.parts[i].group_on_marginal(g, axes)

    def answer_on_marginal(self, group: int, marginal: np.ndarray) -> np.ndarray:
        i, g = self._locate_group(group)
        return self.parts[i].answer_on_marginal(g, marginal)

    def top_k_oracle(self) -> ConcatenatedOracle:
        """The parts' own oracles, merged: exact, and as fast as the parts' structure allows."""
        return ConcatenatedOracle([_part_oracle(p) for p in self.parts])

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        w = self._check_weights(weights)
        out = np.zeros(self.domain.size)
        for p, start, stop in zip(self.parts, self._query_starts[:-1], self._query_starts[1:]):
            out += p.answer_transpose(w[start:stop])
        return out

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        i, g = self._locate_group(group)
        self.parts[i].multiply_group(histogram, g, log_factors)

    def row(self, query: int) -> np.ndarray:
        i, q = self._locate_query(query)
        return self.parts[i].row(q)
