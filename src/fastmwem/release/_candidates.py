"""What a round may measure: the workload's groups, or also their sub-marginals.

On a large domain the workload's marginals are often far too large to measure at one round's
epsilon (a 3-way marginal of 85 x 100 x 2 cells drowns in Laplace noise), while the marginals on
subsets of their attributes are cheap and, fitted by multiplicative weights, answer the large
ones well. The *closure* of a marginal workload adds every marginal on a proper subset of a
group's attributes as a further candidate (as AIM selects among the downward closure of its
workload). The candidate set follows from the workload alone, so it is public.
"""

from __future__ import annotations

import itertools

import numpy as np

from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.concatenate import Concatenate
from fastmwem.workloads.marginals import Marginals

__all__ = ["CANDIDATE_SETS", "closure_workload", "workload_weights"]

#: Values of ``MWEMConfig.candidates``.
CANDIDATE_SETS = ("auto", "workload", "closure")


def closure_workload(workload: LinearWorkload) -> LinearWorkload | None:
    """``workload`` followed by the marginals on proper subsets of its groups' attributes.

    Only workloads whose groups are whole marginals (``groups_partition_cells`` and a
    ``group_attributes`` for every group) have a closure; the others give ``None``, as do
    workloads that already hold every sub-marginal. The workload's own groups keep their ids.
    """
    own = getattr(workload, "group_attributes", None)
    if own is None or not getattr(workload, "groups_partition_cells", False):
        return None
    groups = [own(g) for g in range(int(workload.n_groups))]
    if any(axes is None for axes in groups):
        return None
    present = {tuple(axes) for axes in groups}
    extra = sorted({sub for axes in present for r in range(1, len(axes))
                    for sub in itertools.combinations(axes, r)} - present,
                   key=lambda axes: (len(axes), axes))
    if not extra:
        return None
    names = workload.domain.attributes
    return Concatenate([workload, Marginals(workload.domain,
                                            [[names[a] for a in axes] for axes in extra])])


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
