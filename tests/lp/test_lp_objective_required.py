"""A solver that needs the costs ``c`` refuses ``c=None`` by name, before randomness or budget."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.lp import dense_feasibility, private_linprog
from tests.lp._problems import packing_lp, simplex_lp

_rng = np.random.default_rng(0)
A, B, _ = simplex_lp(_rng, 40, 5)
PC, PA, PB, PX = packing_lp(_rng, 40, 5)
P_LO = 2 * float(PC @ PX) - 1.0
P_WIDTH = 1.01 * float(np.abs(-P_LO * PA / -PC - PB[:, None]).max())
DENSE = dict(epsilon=1.0, delta=1e-6, density=4, entry_bound=1.0, max_constraints=40,
             width=P_WIDTH, rounds=20)


@pytest.mark.parametrize("solve", [
    lambda acc, g: private_linprog(None, A, B, epsilon=1.0, delta=1e-6, sensitivity=0.01,
                                   width=2.0, rounds=20, accountant=acc, rng=g),
    lambda acc, g: private_linprog(None, PA, PB, neighbors="constraint",
                                   objective_range=(P_LO, 0.0), accountant=acc, rng=g, **DENSE),
    lambda acc, g: dense_feasibility(None, PA, PB, target=-0.5, accountant=acc, rng=g, **DENSE),
], ids=["scalar", "constraint", "dense feasibility"])
def test_missing_costs_are_refused_by_name(solve):
    # These used to fail inside the solver: on None.min(), None >= 0, or by asking for an
    # objective_range.
    acc = Accountant(epsilon=100.0, delta=1e-3)
    generator = np.random.default_rng(1)
    state = generator.bit_generator.state
    with pytest.raises(TypeError, match="c is required"):
        solve(acc, generator)
    assert acc.ledger == ()
    assert generator.bit_generator.state == state
