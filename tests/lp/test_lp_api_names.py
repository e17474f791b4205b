"""private_linprog's neighbouring relation is ``neighbors=`` (as for top-k); ``privacy=`` is
its deprecated alias for one release. ``composition=`` keeps its name: it is a composition rule
(advanced, zCDP or basic) inside one privacy definition, (epsilon, delta)-DP."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.lp import private_linprog
from tests.lp._problems import packing_lp, simplex_lp


def _solve(**kw):
    rng = np.random.default_rng(0)
    A, b, _ = simplex_lp(rng, 60, 5)
    return private_linprog(rng.random(5), A, b, epsilon=5.0, delta=1e-6, sensitivity=1e-4,
                           width=2.0, rounds=40, probes=1, rng=np.random.default_rng(3), **kw)


def _dense(**kw):
    c, A, b, _ = packing_lp(np.random.default_rng(1), 60, 5)
    width = 1.01 * float(np.abs(A / -c - b[:, None]).max())  # at the largest target z = 1
    return private_linprog(c, A, b, epsilon=20.0, delta=1e-6, density=5, entry_bound=1.0,
                           max_constraints=60, width=width, objective_range=(-1.0, 0.0),
                           rounds=40, probes=1, rng=np.random.default_rng(3), **kw)


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.x, b.x)
    assert a.ledger == b.ledger and a.setup == b.setup and a.probes == b.probes


@pytest.mark.parametrize("solve, relation", [(_solve, "scalar"), (_dense, "constraint")])
def test_privacy_is_a_deprecated_alias_of_neighbors(solve, relation):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = solve(neighbors=relation)
    with pytest.warns(DeprecationWarning,
                      match="private_linprog: privacy= is deprecated.*use neighbors="):
        old = solve(privacy=relation)
    _same(old, new)
    assert new.setup["neighbors"] == relation and "privacy" not in new.setup


def test_privacy_and_neighbors_disagreeing_is_refused_before_the_charge():
    acc = Accountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="give neighbors= only"), \
            pytest.warns(DeprecationWarning):
        _solve(privacy="scalar", neighbors="constraint", accountant=acc)
    assert acc.ledger == ()


def test_an_unknown_relation_is_refused_by_its_new_name():
    with pytest.raises(ValueError, match="neighbors must be one of"):
        _solve(neighbors="rows")

