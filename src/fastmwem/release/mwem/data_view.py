"""The private data as a release reads it: after the charge, and only what the run needs.

A dense run reads the full histogram; a factored run reads only marginals (the record count,
the 1-way marginals of a noisy start, and the marginals of the groups that may be selected), so
the data can live anywhere that computes group-by counts: an in-memory
:class:`~fastmwem.data.Dataset` (``marginal``) or a source with a batched ``marginals``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    from fastmwem.data.domain import Domain

__all__ = ["PrivateView", "fetch_marginals", "answers_from_marginals", "HistogramReader",
           "MarginalReader", "MarginalsReader"]

# What a release reads of its dataset (any one may be missing: check_dataset refuses, before
# the charge, a dataset without the reader its model needs). A
# :class:`~fastmwem.data.sources.MarginalSource` has all three.


@runtime_checkable
class HistogramReader(Protocol):
    """Private data read as a histogram over every cell (dense runs)."""

    @property
    def domain(self) -> Domain: ...

    def histogram(self) -> np.ndarray: ...


@runtime_checkable
class MarginalReader(Protocol):
    """Private data read one marginal (count table) at a time."""

    @property
    def domain(self) -> Domain: ...

    def marginal(self, attrs: str | Iterable[str]) -> np.ndarray: ...


@runtime_checkable
class MarginalsReader(Protocol):
    """Private data read as a batch of marginals in one pass: a list in the order asked, or a
    dict keyed by the attribute-name tuples."""

    @property
    def domain(self) -> Domain: ...

    def marginals(self, attribute_sets: Iterable[str | Iterable[str]]
                  ) -> Sequence[np.ndarray] | dict[tuple[str, ...], np.ndarray]: ...


def fetch_marginals(dataset: object, axes_list: list[tuple[int, ...]]) -> list[np.ndarray]:
    """The private count tables on each sorted axes tuple of ``axes_list``.

    Uses the source's batched ``marginals(list of attribute-name tuples)`` when it has one
    (one pass over the data), else ``marginal(names)`` per table.
    """
    if not isinstance(dataset, (MarginalsReader, MarginalReader)):
        raise TypeError(f"{type(dataset).__name__} has neither marginal() nor marginals()")
    domain = dataset.domain
    names = [tuple(domain.attributes[a] for a in axes) for axes in axes_list]
    tables: list[np.ndarray]
    if isinstance(dataset, MarginalsReader) and names:
        found = dataset.marginals(names)
        tables = [found[n] for n in names] if isinstance(found, dict) else list(found)
    elif isinstance(dataset, MarginalReader):
        tables = [dataset.marginal(n) for n in names]
    else:  # nothing asked
        tables = []
    return [np.asarray(t, dtype=np.float64).reshape([domain.shape[a] for a in axes])
            for t, axes in zip(tables, axes_list)]


def answers_from_marginals(workload: LinearWorkload, dataset: object,
                           groups: np.ndarray | None = None) -> np.ndarray:
    """Answers of every query of ``groups`` (default all) from the data's marginals; NaN elsewhere.

    The workload needs a marginal structure; each distinct marginal is counted once.
    """
    chosen = np.arange(int(workload.n_groups)) if groups is None else np.asarray(groups)
    axes_of = {int(g): _axes(workload, int(g)) for g in chosen}
    distinct = sorted(set(axes_of.values()))
    tables = dict(zip(distinct, fetch_marginals(dataset, distinct)))
    offsets = np.asarray(workload.group_offsets)
    out = np.full(int(offsets[-1]), np.nan)
    for g, axes in axes_of.items():
        out[offsets[g]:offsets[g + 1]] = workload.answer_on_marginal(g, tables[axes])
    return out


def _axes(workload: LinearWorkload, group: int) -> tuple[int, ...]:
    axes = workload.group_attributes(group)
    if axes is None:  # a factored run's plan requires every group's axes
        raise TypeError("reading answers from marginals needs a workload with marginal structure")
    return tuple(axes)


class PrivateView:
    """The private dataset for one run (see :class:`~fastmwem.release.selection.PrivateData`).

    Args:
        dataset: the private data (``histogram()`` for dense runs; ``marginal`` or
            ``marginals`` for factored ones).
        workload: the run's workload.
        dense: whether the run keeps a dense histogram.
        groups: the groups that may ever be selected (factored runs read only their
            marginals); may be narrowed before :meth:`answers` is called. Unused (may be
            ``None``) in dense runs.
    """

    def __init__(self, dataset: object, workload: LinearWorkload, *, dense: bool,
                 groups: np.ndarray | None) -> None:
        self._dataset = dataset
        self._workload = workload
        self.dense = dense
        self.groups = groups
        self._histogram: np.ndarray | None = None

    def histogram(self) -> np.ndarray:
        if not self.dense:
            raise ValueError("this run keeps a factored state: the private data is read as "
                             "marginals, never as a histogram over the whole domain")
        if self._histogram is None:
            if not isinstance(self._dataset, HistogramReader):  # refused before the charge
                raise TypeError(f"{type(self._dataset).__name__} has no histogram()")
            self._histogram = self._dataset.histogram()
        return self._histogram

    def count(self) -> float:
        """The number of records."""
        if self.dense:
            return float(self.histogram().sum())
        return float(self.one_way([0])[0].sum())

    def one_way(self, axes: list[int] | None = None) -> list[np.ndarray]:
        """The 1-way marginals (counts) of ``axes`` (default every attribute)."""
        domain = self._workload.domain
        chosen = range(len(domain)) if axes is None else axes
        return fetch_marginals(self._dataset, [(a,) for a in chosen])

    def answers(self) -> np.ndarray:
        if self.dense:
            return self._workload.answer(self.histogram())
        return answers_from_marginals(self._workload, self._dataset, self.groups)

    def release(self) -> None:
        """Drop the cached histogram (the chooser keeps what its rounds need)."""
        self._histogram = None
