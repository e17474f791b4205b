"""Everything an MWEM run needs from public input, built and checked before the budget is charged.

A run that would fail part-way (a workload whose answers overflow, a group of sensitivity 0, a
noise scale that is not finite) must fail here, before any randomness or budget is used.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_noise_scale
from fastmwem.release._privacy import PureDefinition, integer_valued
from fastmwem.release.annealing import expected_abs_noise
from fastmwem.release.selection import SCORE_CAP, RoundSelection
from fastmwem.workloads.base import MAX_QUERY_VALUE, LinearWorkload

if TYPE_CHECKING:
    from fastmwem.release.config import MWEMConfig

__all__ = ["MWEMSetup", "prepare", "check_workload"]


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


def prepare(config: MWEMConfig, workload: LinearWorkload, model: str = "dense") -> MWEMSetup:
    """Build the selection and measurement set-up of a run from public input only.

    ``measure="auto"`` selects groups when some group holds more than one query, else single
    queries. Groups of sensitivity 0 (all-zero queries: their answer is 0 on every dataset, so
    there is nothing to learn) are never selected, nor are their queries in query mode. Every
    mechanism is constructed here, so that a noise scale that is not finite is refused before
    the budget is charged.
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
    selection = config.round_selection
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
