"""Workloads given as any object satisfying the exported :class:`~fastmwem.workloads.Workload`
protocol, not only as :class:`~fastmwem.workloads.LinearWorkload` subclasses.

A release works on a ``LinearWorkload``; :func:`as_linear_workload` wraps any other object that
has every member of the protocol in :class:`ProtocolWorkload`, which forwards those members and
takes everything else (group slices, the exact scan oracle, names) from ``LinearWorkload``'s
defaults. Such a workload has no marginal structure (a dense model) and is not known to have
integer coefficients (no zCDP run). Its ``query_sensitivity`` and ``group_sensitivity`` are
trusted exactly as a ``LinearWorkload`` subclass's are, and checked the same way before any
charge.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.workloads.base import LinearWorkload, Workload

__all__ = ["ProtocolWorkload", "as_linear_workload"]

# The members of the protocol, in its order (a refusal names the missing ones).
_MEMBERS = ("domain", "n_queries", "group_offsets", "query_sensitivity", "group_sensitivity",
            "answer", "answer_queries", "answer_group", "answer_transpose", "multiply_group",
            "row")


class ProtocolWorkload(LinearWorkload):
    """A :class:`~fastmwem.workloads.LinearWorkload` view of a protocol object (``wrapped``)."""

    def __init__(self, workload: Workload) -> None:
        self.wrapped = workload
        self.domain = workload.domain
        # Only a real True: MWEM clips measured answers of non-negative queries to [0, n s].
        self.nonnegative_queries = getattr(workload, "nonnegative_queries", False) is True

    @property
    def n_queries(self) -> int:
        return self.wrapped.n_queries

    @property
    def group_offsets(self) -> np.ndarray:
        return self.wrapped.group_offsets

    @property
    def query_sensitivity(self) -> float:
        return self.wrapped.query_sensitivity

    @property
    def group_sensitivity(self) -> np.ndarray:
        return self.wrapped.group_sensitivity

    def answer(self, histogram: np.ndarray) -> np.ndarray:
        return self.wrapped.answer(histogram)

    def _answer_queries(self, hist: np.ndarray, ids: np.ndarray) -> np.ndarray:
        return self.wrapped.answer_queries(hist, ids)

    def answer_group(self, histogram: np.ndarray, group: int) -> np.ndarray:
        return self.wrapped.answer_group(histogram, group)

    def answer_transpose(self, weights: np.ndarray) -> np.ndarray:
        return self.wrapped.answer_transpose(weights)

    def multiply_group(self, histogram: np.ndarray, group: int, log_factors: np.ndarray) -> None:
        self.wrapped.multiply_group(histogram, group, log_factors)

    def row(self, query: int) -> np.ndarray:
        return self.wrapped.row(query)

    def describe(self, query: int) -> str:
        own = getattr(self.wrapped, "describe", None)
        return str(own(query)) if callable(own) else super().describe(query)

    def describe_group(self, group: int) -> str:
        own = getattr(self.wrapped, "describe_group", None)
        return str(own(group)) if callable(own) else super().describe_group(group)


def as_linear_workload(workload: object) -> LinearWorkload:
    """``workload`` itself if it is a ``LinearWorkload``, else a :class:`ProtocolWorkload`.

    Raises:
        TypeError: the object lacks members of the protocol (named), or its ``domain`` is not a
            :class:`~fastmwem.data.Domain`.
    """
    if isinstance(workload, LinearWorkload):
        return workload
    missing = [name for name in _MEMBERS if not hasattr(workload, name)]
    if len(missing) == len(_MEMBERS):
        raise TypeError("workload must be a fastmwem workload (a LinearWorkload, or an object "
                        "satisfying the fastmwem.workloads.Workload protocol), got "
                        f"{type(workload).__name__}")
    if missing:
        raise TypeError(f"workload must be a fastmwem workload or satisfy the "
                        f"fastmwem.workloads.Workload protocol; {type(workload).__name__} lacks "
                        f"{', '.join(missing)}")
    # Every member is present (checked above); the domain's type is checked next, the other
    # members' types where a release uses them.
    members = cast(Workload, workload)
    if not isinstance(members.domain, Domain):
        raise TypeError(f"workload.domain must be a fastmwem Domain, got "
                        f"{type(members.domain).__name__}")
    return ProtocolWorkload(members)
