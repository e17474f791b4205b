"""Shared argument checks (fastmwem._validation): only the cases issue 8 added."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem._validation import check_scores
from fastmwem.accounting import Accountant
from fastmwem.mechanisms import ExponentialMechanism, PermuteAndFlip


@pytest.mark.parametrize("scores", [[True, False], np.array([True, False, True]),
                                    np.zeros(3, dtype=bool)])
def test_boolean_scores_are_refused(scores):
    with pytest.raises(TypeError, match="scores must hold real numbers, not booleans"):
        check_scores(scores)


@pytest.mark.parametrize("cls", [ExponentialMechanism, PermuteAndFlip])
def test_selection_refuses_boolean_scores_before_the_charge(cls):
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(TypeError, match="not booleans"):
        cls(epsilon=0.5).select(np.array([True, False]), rng=0, accountant=accountant)
    assert accountant.ledger == ()


def test_integer_and_float_scores_still_pass():
    np.testing.assert_array_equal(check_scores(np.array([1, 2], dtype=np.int8)), [1.0, 2.0])
    np.testing.assert_array_equal(check_scores([0.5, -1.0]), [0.5, -1.0])
