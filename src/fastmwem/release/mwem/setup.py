"""Everything an MWEM run needs from public input, built and checked before the budget is charged.

A run that would fail part-way (a workload whose answers overflow, a group of sensitivity 0, a
noise scale that is not finite) must fail here, before any randomness or budget is used.

Which synthetic model a run keeps, and which candidates it may measure, are decided here too,
from public input only (the domain, the workload, the options, the memory, and for a factored
model the groups selected so far and the released record count), before the charge unless
stated otherwise.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_noise_scale
from fastmwem._validation import memory_limit as system_memory
from fastmwem.data.domain import Domain, check_dense
from fastmwem.models.factored import marginal_axes
from fastmwem.models.state import MWState, SyntheticState
from fastmwem.release._privacy import PureDefinition, integer_valued
from fastmwem.release.mwem.annealing import expected_abs_noise
from fastmwem.release.mwem.resources import mwem_resources
from fastmwem.release.selection import SCORE_CAP, RoundSelection
from fastmwem.release.selection.candidates import (
    SUPERSET_CELL_RATIO,
    SUPERSET_MAX_QUERIES,
    closure_workload,
    superset_groups,
    superset_workload,
)
from fastmwem.workloads.base import MAX_QUERY_VALUE, LinearWorkload, groups_of_queries

if TYPE_CHECKING:
    from fastmwem.release.mwem.config import MWEMConfig

__all__ = ["MWEMSetup", "prepare", "bound_selection", "check_workload", "check_release_inputs", "check_dataset",
           "choose_model", "candidate_workload", "candidate_kind", "only_supersets",
           "within_cap", "worth_measuring", "candidate_groups", "selectable"]


@dataclass(frozen=True)
class MWEMSetup:
    """The public, validated pieces of a run.

    Attributes:
        group_mode: whether rounds select groups (True) or single queries.
        offsets: the workload's group offsets (computed once).
        sensitivities: L1 sensitivity of each candidate (group or query).
        candidates: which candidates may be selected (positive sensitivity).
        penalties: the data-independent score penalty of each candidate.
        selection: how a round selects (checked against the workload).
    """

    group_mode: bool
    offsets: np.ndarray
    sensitivities: np.ndarray
    candidates: np.ndarray
    penalties: np.ndarray
    selection: RoundSelection

    @property
    def n_candidates(self) -> int:
        return int(np.count_nonzero(self.candidates))


def _sensitivity(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"workload {name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x) or x < 0 or x > MAX_QUERY_VALUE:
        raise ValueError(
            f"workload {name} must be a finite number in [0, {MAX_QUERY_VALUE:g}], got {x:.4g}"
        )
    return x


def check_workload(workload: LinearWorkload) -> tuple[np.ndarray, float, np.ndarray]:
    """Check the workload's sizes and sensitivities; return its offsets, ``s`` and group ones.

    Raises:
        ValueError: inconsistent group offsets; a non-finite, negative or too large
            sensitivity (above ``MAX_QUERY_VALUE``, where answers may overflow); or a workload
            whose queries are all zero (nothing to measure).
    """
    n = workload.n_queries
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"workload n_queries must be an integer >= 1, got {n!r}")
    offsets = np.asarray(workload.group_offsets)
    if (offsets.ndim != 1 or offsets.size < 2 or not np.issubdtype(offsets.dtype, np.integer)
            or offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) <= 0)):
        raise ValueError(
            "workload group_offsets must be strictly increasing integers from 0 to n_queries"
        )
    s = _sensitivity(workload.query_sensitivity, "query_sensitivity")
    groups = np.asarray(workload.group_sensitivity, dtype=np.float64)
    if groups.shape != (offsets.size - 1,):
        raise ValueError(
            f"workload group_sensitivity must have one entry per group ({offsets.size - 1}), "
            f"got shape {groups.shape}"
        )
    bad = ~np.isfinite(groups) | (groups < 0)
    if bad.any():
        g = int(np.argmax(bad))
        raise ValueError(
            f"workload group_sensitivity[{g}] must be finite and >= 0, got {groups[g]}"
        )
    if s == 0 or not groups.any():
        raise ValueError("the workload's queries are all zero (sensitivity 0): nothing to measure")
    return offsets.astype(np.int64, copy=False), s, groups


def prepare(config: MWEMConfig, workload: LinearWorkload, model: str = "dense",
            selection: RoundSelection | None = None) -> MWEMSetup:
    """Build the selection and measurement set-up of a run from public input only.

    ``measure="auto"`` selects groups when some group holds more than one query, else single
    queries. Groups of sensitivity 0 (all-zero queries: their answer is 0 on every dataset, so
    there is nothing to learn) are never selected, nor are their queries in query mode. Every
    mechanism is constructed here, so that a noise scale that is not finite is refused before
    the budget is charged.

    The set-up holds the round selection bound to ``workload`` (:func:`bound_selection`):
    ``selection`` when given (one bound before, by a plan of another configuration), else
    ``config.round_selection``.
    """
    offsets, s, group_sens = check_workload(workload)
    measure = config.measure
    group_mode = bool(np.any(np.diff(offsets) > 1)) if measure == "auto" else measure == "group"
    split = config.budget_split(
        model, rounds=config.round_count(len(workload.domain)))
    definition = config.definition
    pure = isinstance(definition, PureDefinition)
    if group_mode:
        sensitivities = group_sens
        cells = np.diff(offsets).astype(np.float64)
    else:
        sensitivities = np.full(int(offsets[-1]), s)
        cells = np.ones(int(offsets[-1]))
    candidates = sensitivities > 0
    if not group_mode:
        # A query in a group of sensitivity 0 is all zero too: never worth a round.
        candidates &= np.repeat(group_sens > 0, np.diff(offsets))
    score_sensitivity = float(sensitivities.max())
    if config.rounds == 0:  # the 1-way marginals alone: no round selects (nothing is bound)
        return MWEMSetup(group_mode, offsets, sensitivities, candidates, np.zeros(cells.size),
                         config.round_selection if selection is None else selection)
    selection = bound_selection(config.round_selection if selection is None else selection,
                                workload)
    selection.check(workload, epsilon=split["select"], group_mode=group_mode,
                    sensitivities=sensitivities)
    # The largest measurement's noise must stay finite; smaller sensitivities then do too.
    if pure:
        check_noise_scale(score_sensitivity, split["measure"],
                          f"each round's measurement (Laplace, sensitivity {score_sensitivity:.4g})")
    largest = definition.measurement(split["measure"], score_sensitivity,
                                     integer=integer_valued(workload))
    penalty = config.cell_penalty
    if penalty is None:
        # the expected absolute noise of one measured cell (Laplace: exactly the old formula)
        penalty = ((score_sensitivity / split["measure"] if pure
                    else expected_abs_noise(largest)) if group_mode else 0.0)
    with np.errstate(over="ignore"):
        penalties = np.minimum(float(penalty) * cells, SCORE_CAP)
    return MWEMSetup(group_mode, offsets, sensitivities, candidates, penalties, selection)


def bound_selection(selection: RoundSelection, workload: LinearWorkload) -> RoundSelection:
    """``selection`` with what it builds from ``workload`` built (its ``bind``, if it has one).

    The lazy selection builds its top-k oracle here, once per plan, from the public workload.
    """
    bind = getattr(selection, "bind", None)
    if not callable(bind):
        return selection
    bound = bind(workload)
    if not isinstance(bound, RoundSelection):
        raise TypeError(f"selection {selection.name!r}: bind() must return a RoundSelection, "
                        f"got {type(bound).__name__}")
    return bound


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
    bound = config.max_model_cells
    if bound is not None and bound < sum(domain.shape):
        raise ValueError(f"max_model_cells ({bound}) must be at least the 1-way marginals' "
                         f"cells ({sum(domain.shape)}), where a factored model starts")
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
    axes_list = marginal_axes(workload)
    if axes_list is None:  # only a factored run caps cliques, and it needs marginal structure
        raise TypeError("a clique cap needs a workload with marginal structure")
    fits = np.array([math.prod(shape[a] for a in axes) <= cap for axes in axes_list])
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
