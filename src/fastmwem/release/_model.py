"""Which synthetic model a run keeps, and which candidates it may measure.

Everything here is decided from public input only (the domain, the workload, the options, the
memory, and for a factored model the groups selected so far and the released record count),
before the charge unless stated otherwise.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import memory_limit as system_memory
from fastmwem.data.domain import Domain, check_dense
from fastmwem.models.factored import marginal_axes
from fastmwem.models.state import MWState, SyntheticState
from fastmwem.release._setup import MWEMSetup
from fastmwem.release.resources import mwem_resources
from fastmwem.release.selection.candidates import (
    SUPERSET_CELL_RATIO,
    SUPERSET_MAX_QUERIES,
    closure_workload,
    superset_groups,
    superset_workload,
)
from fastmwem.workloads.base import LinearWorkload, groups_of_queries

if TYPE_CHECKING:
    from fastmwem.release.config import MWEMConfig

__all__ = ["check_release_inputs", "check_dataset", "choose_model", "candidate_workload",
           "candidate_kind", "only_supersets",
           "within_cap", "worth_measuring", "candidate_groups", "selectable"]


def check_release_inputs(dataset: object, workload: LinearWorkload) -> Domain:
    """The dataset's domain, after checking the dataset and workload belong together."""
    if not isinstance(workload, LinearWorkload):
        raise TypeError(f"workload must be a fastmwem workload, got {type(workload).__name__}")
    domain = getattr(dataset, "domain", None)
    if not isinstance(domain, Domain) or not any(
            callable(getattr(dataset, name, None)) for name in ("histogram", "marginal",
                                                                 "marginals")):
        raise TypeError(f"dataset must be a fastmwem Dataset, got {type(dataset).__name__}")
    if domain != workload.domain:
        raise ValueError(
            f"dataset and workload have different domains: {domain} and {workload.domain}"
        )
    return domain


def check_dataset(dataset: object, model: str) -> None:
    """Refuse a dataset that cannot give what a ``model`` run reads (before the charge)."""
    if model == "dense":
        if not callable(getattr(dataset, "histogram", None)):
            raise TypeError("a dense run reads the data's histogram(); "
                            f"{type(dataset).__name__} has none")
    elif not any(callable(getattr(dataset, n, None)) for n in ("marginal", "marginals")):
        raise TypeError(f"a factored run reads the data's marginals; {type(dataset).__name__} "
                        "has neither marginal() nor marginals()")


def choose_model(config: MWEMConfig, workload: LinearWorkload,
                 memory_limit: int | None = None) -> str:
    """The synthetic model of a run: ``config.model``, or for ``"auto"`` dense when it fits.

    ``"auto"`` keeps a dense histogram when the domain is within ``MAX_DENSE_CELLS`` and the
    dense run's memory estimate within ``memory_limit`` (default the machine's), else a junction
    tree. Decided from public parameters only.

    Raises:
        ValueError: a factored model for a workload without marginal structure, a dense one
            above the dense limit, or options a factored model cannot run (before any charge).
    """
    domain = workload.domain
    model = config.model
    structured = marginal_axes(workload) is not None
    if model == "auto":
        fits = domain.dense and (
            mwem_resources(config, workload).memory_bytes
            <= (memory_limit if memory_limit is not None else system_memory()))
        # Without a marginal structure only a dense run is possible: the memory check then
        # refuses it with the sizes, or the dense check below names the limit.
        model = "dense" if fits or not structured else "junction-tree"
    if model == "dense":
        check_dense(domain.size, "the domain",
                    "use fewer attributes or coarser bins, or a workload with marginal "
                    "structure (marginals, cuboids, ranges, intervals) for a factored model")
        return model
    if not structured:
        raise ValueError(
            f"model={model!r} needs a workload with marginal structure (marginals, cuboids, "
            f"ranges, intervals); {type(workload).__name__} has none"
        )
    if config.output == "average":
        raise ValueError("output='average' needs a dense histogram (an average of factored "
                         "models is not one); use output='last'")
    if getattr(config.round_selection, "requires_dense", False):
        raise ValueError(f"selection={config.round_selection.name!r} needs a dense histogram "
                         f"and the domain has {domain.size} cells; use selection='exponential'")
    cap = config.max_clique_cells
    if cap < max(domain.shape):
        raise ValueError(f"max_clique_cells ({cap}) must be at least the "
                         f"largest attribute size ({max(domain.shape)})")
    return model


def candidate_kind(config: MWEMConfig, workload: LinearWorkload, model: str) -> str:
    """``config.candidates`` with ``"auto"`` resolved (see ``MWEMConfig.candidates``)."""
    wanted = config.candidates
    if wanted != "auto":
        return wanted
    if getattr(config, "rounds", 1) is None or model != "dense":
        return "closure"  # adaptive runs select among the closure, as AIM does
    return "workload"  # mwem_auto's rounds rule may choose supersets instead


def candidate_workload(config: MWEMConfig, workload: LinearWorkload,
                       model: str) -> LinearWorkload:
    """The workload whose groups the rounds select from (see ``MWEMConfig.candidates``)."""
    kind = candidate_kind(config, workload, model)
    if kind == "supersets" and (model != "dense" or getattr(config, "rounds", 1) is None):
        raise ValueError("candidates='supersets' needs a dense model and fixed rounds "
                         f"(this run: model {model!r}, rounds {getattr(config, 'rounds', None)})")
    found = (None if kind == "workload" else
             closure_workload(workload) if kind == "closure" else superset_workload(workload))
    if found is None and config.candidates == "supersets":
        raise ValueError(
            "candidates='supersets' needs a marginal workload whose supersets (two more "
            f"attributes) have at most {SUPERSET_CELL_RATIO}x the cells of its largest marginal "
            f"and at most {SUPERSET_MAX_QUERIES} cells in all")
    return workload if found is None else found


def only_supersets(setup: MWEMSetup, candidates: LinearWorkload,
                   workload: LinearWorkload) -> MWEMSetup:
    """Leave the workload's own groups out of a superset run's selection (public)."""
    if candidates is workload:
        return setup
    return dataclasses.replace(
        setup, candidates=setup.candidates & superset_groups(candidates, workload))


def within_cap(setup: MWEMSetup, workload: LinearWorkload, cap: int) -> MWEMSetup:
    """Leave out candidates whose own marginal is above the clique cap (public)."""
    shape = workload.domain.shape
    fits = np.array([math.prod(shape[a] for a in axes) <= cap
                     for axes in marginal_axes(workload)])  # type: ignore[union-attr]
    if not setup.group_mode:
        fits = np.repeat(fits, np.diff(setup.offsets))
    candidates = setup.candidates & fits
    if not candidates.any():
        raise ValueError(f"every candidate needs a clique above max_clique_cells = {cap}")
    return dataclasses.replace(setup, candidates=candidates)


def worth_measuring(setup: MWEMSetup, total: float) -> MWEMSetup:
    """Leave out candidates that another candidate always outscores (factored runs).

    A candidate's score is its L1 error, at most about ``2 * total`` (the synthetic and the
    true counts), less its penalty; one whose penalty exceeds the smallest penalty by more than
    that never scores above the candidate with the smallest penalty, whose score is at least
    minus its penalty. Decided from public values (the penalties and the released count), it
    saves inferring marginals whose measurement would drown in noise.
    """
    penalties = setup.penalties
    floor = float(penalties[setup.candidates].min())
    candidates = setup.candidates & (penalties <= floor + 2.0 * total)
    return dataclasses.replace(setup, candidates=candidates)


def candidate_groups(setup: MWEMSetup, workload: LinearWorkload) -> np.ndarray:
    ids = np.flatnonzero(setup.candidates)
    return ids if setup.group_mode else np.unique(groups_of_queries(setup.offsets, ids))


def selectable(state: SyntheticState, setup: MWEMSetup, workload: LinearWorkload,
               available: np.ndarray) -> np.ndarray:
    """The candidates the state can measure this round (its structure is public).

    A factored state cannot measure a group whose clique would pass its cap. Should that leave
    no candidate, groups measured before (always measurable: cliques only grow) may be measured
    again.
    """
    if isinstance(state, MWState):
        return available
    for mask in (available, setup.candidates):
        ids = np.flatnonzero(mask)
        groups = ids if setup.group_mode else groups_of_queries(setup.offsets, ids)
        ok = state.measurable(workload, groups)
        if ok.any():
            out = np.zeros_like(mask)
            out[ids[ok]] = True
            return out
    return available  # unreachable: round 1 has a candidate within the cap, later ones too
