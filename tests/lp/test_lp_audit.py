"""Clopper-Pearson audit of the scalar LP's constraint choice on neighbouring b (small size).

A round's choice is run many times on ``b`` and on a neighbour ``b'`` with
``|b - b'|_inf = sensitivity``, the tight pair for the exponential mechanism: one row's score up,
all others down. The Clopper-Pearson lower bound on the privacy loss over all outputs and both
directions must not exceed the round's ``epsilon0``, at overall level 99% (alpha = 0.01,
Bonferroni over outputs x directions). Positive control: the same audit of a round calibrated
with half the sensitivity (really ``2 epsilon0``) must exceed ``epsilon0``.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.lp.oracles import scalar_oracle
from fastmwem.lp.scalar import objective_rows, scalar_selector
from fastmwem.testing import clopper_pearson_epsilon_lower_bound
from tests.lp._problems import draw_counts

EPS0, SENS = 1.0, 0.1
M, D = 5, 3
OVERALL_ALPHA = 0.01
RUNS_DEFAULT = 10_000
RUNS_SLOW = 200_000

_A = np.array([[0.2, 0.5, 0.9], [0.4, 0.4, 0.4], [0.9, 0.1, 0.3], [0.0, 0.6, 0.6],
               [0.5, 0.5, 0.1]])
_B = np.array([0.45, 0.40, 0.50, 0.35, 0.42])
_B_NEIGHBOUR = _B + SENS * (1 - 2 * np.eye(M)[0])  # row 0 one sensitivity worse, others better
_X = np.full(D, 1 / D)  # round 1 plays the uniform distribution


def _select(b: np.ndarray, selection: str, sensitivity: float):
    rows = objective_rows(_A, b, None, None)
    oracle = scalar_oracle(_A, b, "flat") if selection == "lazy" else None
    return scalar_selector(rows, epsilon0=EPS0, sensitivity=sensitivity, selection=selection,
                           oracle=oracle)


def _audit(selection: str, sensitivity: float, runs: int, seed: int) -> float:
    counts = [draw_counts(_select(b, selection, sensitivity), _X, M, runs, seed + j)
              for j, b in enumerate((_B, _B_NEIGHBOUR))]
    alpha = OVERALL_ALPHA / (2 * M)
    return clopper_pearson_epsilon_lower_bound(counts[0], counts[1], runs, runs, alpha)


def _check(selection: str, runs: int, seed: int, control: bool = True) -> None:
    assert np.abs(_B - _B_NEIGHBOUR).max() == pytest.approx(SENS)
    bound = _audit(selection, SENS, runs, seed)
    assert bound <= EPS0, f"{selection}: eps_LB = {bound:.3f} > {EPS0}"
    assert bound > 0.5 * EPS0  # not vacuous: the pair is tight
    if control:
        wrong = _audit(selection, SENS / 2, runs, seed + 10)
        assert wrong > EPS0, f"{selection}: the 2 epsilon0 control was not caught ({wrong:.3f})"


@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_constraint_choice_audit(selection):
    # The audit's power (the control) is shown once, on the faster classic selection.
    _check(selection, RUNS_DEFAULT, seed=100, control=selection == "exponential")


@pytest.mark.slow
@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_constraint_choice_audit_large(selection):
    _check(selection, RUNS_SLOW, seed=200)
