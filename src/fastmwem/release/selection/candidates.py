"""What a round may measure: the workload's groups, their sub-marginals, or their supersets.

On a large domain the workload's marginals are often far too large to measure at one round's
epsilon (a 3-way marginal of 85 x 100 x 2 cells drowns in Laplace noise), while the marginals on
subsets of their attributes are cheap and, fitted by multiplicative weights, answer the large
ones well. The *closure* of a marginal workload adds every marginal on a proper subset of a
group's attributes as a further candidate (as AIM selects among the downward closure of its
workload). The candidate set follows from the workload alone, so it is public.

On a small domain of few values per attribute the opposite pays under pure DP: a marginal on
two more attributes than the workload's (*supersets*, e.g. 5-way marginals of binary
attributes for a 3-way workload: 32 cells instead of 8) costs one measurement like any
marginal, since one record moves it by 1 in L1, yet answers ten 3-way marginals at once, so
the same rounds cover far more of the workload. On NLTCS (16 binary attributes, all 3-way
marginals, 3 seeds) with the rounds of :func:`~fastmwem.release.mwem.auto.superset_rounds`:
mean 3-way L1 0.080 / 0.037 / 0.015 / 0.008 at epsilon 0.1 / 0.3 / 1 / 3, against 0.114 /
0.048 / 0.021 / 0.017 selecting among the 3-way marginals themselves (docs/mwem.md).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.concatenate import Concatenate
from fastmwem.workloads.marginals import Marginals

__all__ = ["CANDIDATE_SETS", "closure_workload", "superset_workload", "workload_weights",
           "superset_groups", "SUPERSET_EXTRA", "SUPERSET_CELL_RATIO", "SUPERSET_MAX_QUERIES"]

#: Values of ``MWEMConfig.candidates``.
CANDIDATE_SETS = ("auto", "workload", "closure", "supersets")
#: Attributes a superset candidate adds to a workload marginal.
SUPERSET_EXTRA = 2
#: Supersets are used only while the largest has at most this many times the cells of the
#: workload's largest marginal (binary attributes: exactly 4 with two more attributes).
SUPERSET_CELL_RATIO = 4
#: Most queries (cells) of all superset candidates together: each round scores them all.
SUPERSET_MAX_QUERIES = 2**22


def _marginal_groups(workload: LinearWorkload) -> list[tuple[int, ...]] | None:
    """The attributes of each group, if every group is a whole marginal, else ``None``."""
    own = getattr(workload, "group_attributes", None)
    if own is None or not getattr(workload, "groups_partition_cells", False):
        return None
    groups = [own(g) for g in range(int(workload.n_groups))]
    return None if any(axes is None for axes in groups) else [tuple(a) for a in groups]


def closure_workload(workload: LinearWorkload) -> LinearWorkload | None:
    """``workload`` followed by the marginals on proper subsets of its groups' attributes.

    Only workloads whose groups are whole marginals (``groups_partition_cells`` and a
    ``group_attributes`` for every group) have a closure; the others give ``None``, as do
    workloads that already hold every sub-marginal. The workload's own groups keep their ids.
    """
    groups = _marginal_groups(workload)
    if groups is None:
        return None
    present = set(groups)
    extra = sorted({sub for axes in present for r in range(1, len(axes))
                    for sub in itertools.combinations(axes, r)} - present,
                   key=lambda axes: (len(axes), axes))
    if not extra:
        return None
    names = workload.domain.attributes
    return Concatenate([workload, Marginals(workload.domain,
                                            [[names[a] for a in axes] for axes in extra])])


def superset_workload(workload: LinearWorkload) -> LinearWorkload | None:
    """``workload`` followed by the marginals on its groups' attributes and two more.

    ``None`` when the workload has no marginal structure, when a superset would have more than
    ``SUPERSET_CELL_RATIO`` times the cells of the workload's largest marginal, or when all
    supersets together hold more than ``SUPERSET_MAX_QUERIES`` cells. The workload's own
    groups keep their ids (a run selects among the supersets only:
    :func:`superset_groups`).
    """
    groups = _marginal_groups(workload)
    if groups is None:
        return None
    shape = workload.domain.shape
    order = max(len(axes) for axes in groups)
    if order + SUPERSET_EXTRA > len(shape):
        return None
    largest = max(math.prod(shape[a] for a in axes) for axes in groups)
    found = sorted({tuple(sorted((*axes, *more)))
                    for axes in set(groups)
                    for more in itertools.combinations(
                        [a for a in range(len(shape)) if a not in axes], SUPERSET_EXTRA)})
    cells = [math.prod(shape[a] for a in axes) for axes in found]
    if max(cells) > SUPERSET_CELL_RATIO * largest or sum(cells) > SUPERSET_MAX_QUERIES:
        return None
    names = workload.domain.attributes
    return Concatenate([workload, Marginals(workload.domain,
                                            [[names[a] for a in axes] for axes in found])])


def superset_groups(candidates: LinearWorkload, workload: LinearWorkload) -> np.ndarray:
    """Which groups of a :func:`superset_workload` a round may select: the supersets only."""
    mask = np.ones(int(candidates.n_groups), dtype=bool)
    mask[:int(workload.n_groups)] = False
    return mask


def workload_weights(candidates: LinearWorkload, workload: LinearWorkload) -> np.ndarray:
    """AIM's weight of each candidate group: how much of the workload it touches, at most 1.

    For a candidate marginal ``r`` and the workload's marginals ``s``, ``sum_s |r & s|`` (shared
    attributes; AIM, arXiv:2201.12677, s.4), divided by its largest value. Workloads without a
    marginal structure weigh every candidate 1. Public: it reads the two workloads only.
    """
    own = getattr(candidates, "group_attributes", None)
    theirs = getattr(workload, "group_attributes", None)
    n = int(candidates.n_groups)
    if own is None or theirs is None:
        return np.ones(n)
    try:
        targets = [frozenset(theirs(g)) for g in range(int(workload.n_groups))]
        mine = [frozenset(own(g)) for g in range(n)]
    except TypeError:  # a group without attributes
        return np.ones(n)
    counts: dict[int, int] = {}
    for axes in targets:
        for a in axes:
            counts[a] = counts.get(a, 0) + 1
    # sum_s |r & s| = sum over r's attributes of the workload marginals holding each one
    weights = np.array([float(sum(counts.get(a, 0) for a in axes)) for axes in mine])
    top = float(weights.max())
    return weights / top if top > 0 else np.ones(n)
