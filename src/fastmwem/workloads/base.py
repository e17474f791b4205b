"""The workload protocol: a set of linear queries over a domain, kept in its structure.

A *histogram* is a flat float64 array of ``domain.size`` entries in C order over
``domain.shape`` (cell ``(c_0, ..., c_{d-1})`` at ``np.ravel_multi_index(codes, shape)``). A linear
query ``q`` maps a histogram ``h`` to ``q(h) = sum_x q(x) h(x)``.

Queries are arranged in *groups* of consecutive query indices: a group is what one measurement
measures at once (a whole marginal, or a single query). Selection mechanisms score queries or
groups; multiplicative-weights state updates through ``multiply_group``; a maximum-inner-product
index will use ``row`` vectors as keys. No implementation builds a dense query matrix unless it
was given one.
"""

from __future__ import annotations

import abc
from typing import Protocol, runtime_checkable

import numpy as np

from fastmwem._validation import check_int
from fastmwem.data.domain import MAX_DENSE_CELLS, Domain
from fastmwem.workloads.oracles import ExactOracle, ScanOracle, check_query_ids

__all__ = ["Workload", "LinearWorkload", "check_histogram", "MAX_DENSE_CELLS", "MAX_QUERY_VALUE",
           "groups_of_queries", "queries_of_groups"]

#: Largest ``|q(x)|`` a workload may hold. Answers on a histogram of up to 2**63 records, and
#: sums of up to 2**40 of them, then stay far inside the float range, so that nothing downstream
#: (scores, noisy measurements, errors) can overflow.
MAX_QUERY_VALUE = 1e200


def check_histogram(histogram: object, domain: Domain, name: str = "histogram") -> np.ndarray:
    """Return ``histogram`` as a flat float64 array of ``domain.size`` finite entries."""
    arr = np.asarray(histogram, dtype=np.float64)
    if arr.shape == domain.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1 or arr.size != domain.size:
        raise ValueError(
            f"{name} must have {domain.size} cells (domain shape {domain.shape}), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def groups_of_queries(offsets: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The group of each query id, given a workload's ``group_offsets``."""
    return np.searchsorted(offsets, queries, side="right") - 1


def queries_of_groups(offsets: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The query ids of ``groups`` (group ids in any order), concatenated in that order."""
    groups = np.asarray(groups, dtype=np.int64)
    starts = offsets[groups]
    sizes = offsets[groups + 1] - starts
    shift = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return np.arange(int(sizes.sum()), dtype=np.int64) + shift


@runtime_checkable
class Workload(Protocol):
    """A finite family of linear queries over ``domain``.

    Attributes:
        domain: the domain the queries are defined on.
        n_queries: number of queries.
        n_groups: number of measurement groups; group ``g`` holds queries
            ``group_offsets[g]:group_offsets[g + 1]``.
        query_sensitivity: ``max_x max_q |q(x)|``: how much one record moves one answer (add/remove).
        group_sensitivity: array of ``max_x sum_{q in g} |q(x)|``: the L1 sensitivity of a group.
    """

    domain: Domain

    @property
    def n_queries(self) -> int: ...

    @property
    def group_offsets(self) -> np.ndarray: ...

    @property
    def query_sensitivity(self) -> float: ...

    @property
    def group_sensitivity(self) -> np.ndarray: ...

    def answer(self, histogram: np.ndarray) -> np.ndarray: ...

    def answer_queries(self, histogram: np.ndarray, ids: np.ndarray) -> np.ndarray: ...

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray: ...

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray: ...

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None: ...

    def row(self, query: int) -> np.ndarray: ...


class LinearWorkload(abc.ABC):
    """Shared behaviour of the workloads; subclasses implement ``answer``, ``answer_transpose``.

    The defaults treat each query as its own group and derive group operations from
    ``answer_transpose``; structured workloads override them with faster versions.
    """

    domain: Domain

    #: True when every query value ``q(x)`` is >= 0 (counting queries). MWEM then knows that a
    #: measured answer lies in ``[0, n * query_sensitivity]`` and clips noisy answers to it.
    nonnegative_queries: bool = False

    # -- to implement ------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def n_queries(self) -> int:
        """Number of queries."""

    @abc.abstractmethod
    def answer(self, histogram: np.ndarray) -> np.ndarray:
        """Answers of every query on ``histogram``: an array of ``n_queries`` floats."""

    @abc.abstractmethod
    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        """``sum_q weights[q] * q(x)`` for every cell ``x``: a flat array of ``domain.size``."""

    @property
    @abc.abstractmethod
    def query_sensitivity(self) -> float:
        """``max_x max_q |q(x)|``."""

    # -- groups ------------------------------------------------------------------------------
    @property
    def group_offsets(self) -> np.ndarray:
        return np.arange(self.n_queries + 1)

    @property
    def n_groups(self) -> int:
        # With the default offsets each query is its own group: answer without building them,
        # since group operations check their group id against this on every call (an array of
        # n_queries + 1 entries, ~1 ms at 10**6 queries, per MW update).
        if type(self).group_offsets is LinearWorkload.group_offsets:
            return self.n_queries
        return int(self.group_offsets.size - 1)

    @property
    def group_sensitivity(self) -> np.ndarray:
        return np.full(self.n_groups, self.query_sensitivity)

    def group_queries(self, group: int) -> slice:
        """The query indices of ``group``."""
        g = check_int(group, "group", minimum=0, maximum=self.n_groups - 1)
        offsets = self.group_offsets
        return slice(int(offsets[g]), int(offsets[g + 1]))

    def group_sizes(self) -> np.ndarray:
        return np.diff(self.group_offsets)

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        """Answers of the queries of one group."""
        return self.answer(histogram)[self.group_queries(group)]

    # -- chosen queries --------------------------------------------------------------------------
    def answer_queries(self, histogram: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Answers of the queries ``ids`` only: ``answer(histogram)[ids]``, usually far cheaper.

        ``ids`` is an integer array (any shape, repeats allowed) of query indices; the result has
        its shape. A selection round that needs a few answers calls this instead of ``answer``.
        """
        hist = check_histogram(histogram, self.domain)
        chosen = check_query_ids(ids, self.n_queries)
        flat = chosen.reshape(-1)
        if flat.size == 0:
            return np.zeros(chosen.shape)
        return self._answer_queries(hist, flat).reshape(chosen.shape)

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``answer_queries`` on a checked flat histogram and flat non-empty ids.

        The default answers each group that holds a chosen query, or everything at once when
        the chosen queries span many groups (``answer`` shares work between groups) or the
        workload has no ``answer_group`` of its own; subclasses override it with their structure.
        """
        offsets = np.asarray(self.group_offsets)
        groups = np.searchsorted(offsets, ids, side="right") - 1
        distinct = np.unique(groups)
        if type(self).answer_group is LinearWorkload.answer_group or 4 * distinct.size > offsets.size:
            return self.answer(hist)[ids]
        out = np.empty(ids.size)
        for g in distinct:
            sel = groups == g
            out[sel] = self.answer_group(hist, int(g))[ids[sel] - offsets[g]]
        return out

    def top_k_oracle(self) -> ExactOracle:
        """An exact top-k oracle (a ``fastmwem.indices.TopKOracle``) over the query vectors.

        ``search(v, k)`` gives the ``k`` queries with the largest answers on the vector ``v``
        (any real vector over the cells, e.g. a difference of histograms), ``score(ids, v)``
        their answers. The default computes every answer with ``answer`` and partitions; a
        workload with more structure returns a faster exact oracle.
        """
        return ScanOracle(self.n_queries, self.domain.size, self.answer, self._answer_queries)

    # -- marginal structure ----------------------------------------------------------------------
    def group_attributes(self, group: int) -> tuple[int, ...] | None:
        """The sorted axes the queries of ``group`` depend on, or ``None`` (no known structure).

        A workload that gives axes for every group has a *marginal structure*: each group's
        answers are a function of the marginal on its axes, so a factored synthetic distribution
        can answer and update it without a histogram over the whole domain.
        """
        return None

    def group_on_marginal(self, group: int, axes: tuple[int, ...]) -> tuple[LinearWorkload, int]:
        """Group ``group`` as group ``local`` of a workload over the marginal domain on ``axes``.

        ``axes`` (sorted) must contain :meth:`group_attributes`; the returned workload is over
        ``domain.project`` of those attributes (in domain order), so its histograms are marginal
        tables flattened in C order, and its group ``local`` has the same queries as ``group``.

        Raises:
            TypeError: the workload has no marginal structure.
            ValueError: ``axes`` does not contain the group's attributes.
        """
        raise TypeError(f"{type(self).__name__} has no marginal structure")

    def answer_on_marginal(self, group: int, marginal: np.ndarray) -> np.ndarray:
        """Answers of ``group`` from its marginal (the table on :meth:`group_attributes`)."""
        axes = self.group_attributes(group)
        if axes is None:
            raise TypeError(f"{type(self).__name__} has no marginal structure")
        sub, local = self.group_on_marginal(group, axes)
        return sub.answer_group(np.asarray(marginal, dtype=np.float64).reshape(-1), local)

    def _marginal_domain(self, group: int, axes: tuple[int, ...]) -> Domain:
        """The domain of the marginal on ``axes``, after checking it covers ``group``."""
        own = self.group_attributes(group)
        if own is None:
            raise TypeError(f"{type(self).__name__} has no marginal structure")
        if tuple(sorted(set(axes))) != tuple(axes) or not set(own) <= set(axes):
            raise ValueError(f"axes must be sorted, distinct and contain the group's axes {own}, "
                             f"got {axes}")
        return self.domain.project([self.domain.attributes[a] for a in axes])

    # -- updates -----------------------------------------------------------------------------
    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        """In place: ``histogram[x] *= exp(sum_{q in group} log_factors[q] q(x))``.

        This is the multiplicative-weights step for a measured group. ``log_factors`` has one
        entry per query of the group.
        """
        queries = self.group_queries(group)
        weights = np.zeros(self.n_queries)
        weights[queries] = log_factors
        histogram *= np.exp(self.answer_transpose(weights))

    def row(self, query: int) -> np.ndarray:
        """Query ``query`` as a dense vector over the cells (for indices and tests)."""
        q = check_int(query, "query", minimum=0, maximum=self.n_queries - 1)
        weights = np.zeros(self.n_queries)
        weights[q] = 1.0
        return self.answer_transpose(weights)

    def dense(self) -> np.ndarray:
        """The whole query matrix, ``n_queries x domain.size`` (small workloads and tests only)."""
        return np.stack([self.row(q) for q in range(self.n_queries)])

    def describe(self, query: int) -> str:
        """A short human-readable name of a query."""
        return f"query {query}"

    def describe_group(self, group: int) -> str:
        return f"group {group}"

    def _check_weights(self, weights: object) -> np.ndarray:
        arr = np.asarray(weights, dtype=np.float64)
        if arr.shape != (self.n_queries,):
            raise ValueError(f"weights must have shape ({self.n_queries},), got {arr.shape}")
        return arr

    def __len__(self) -> int:
        return self.n_queries
