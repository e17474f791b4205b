"""Privacy definitions as objects: the strings still work, and an object runs the same release."""

from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import ZCDP, Accountant, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.release import PureDefinition, ZCDPDefinition, definition_of, mwem
from fastmwem.workloads import Marginals
from tests.release._auto import run_with_defaults


@pytest.fixture
def table():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rows = np.random.default_rng(0).integers(0, 2, size=(300, 3))
    return Dataset(rows, domain), Marginals.all_kway(domain, 2)


def test_definition_of_reads_the_strings_and_keeps_objects():
    assert definition_of("pure") == PureDefinition()
    assert definition_of("zcdp", 1e-9) == ZCDPDefinition(delta=1e-9)
    zcdp = ZCDPDefinition()
    assert definition_of(zcdp) is zcdp
    with pytest.raises(ValueError, match="privacy must be one of"):
        definition_of("approx")


def test_each_definition_prices_its_own_events():
    pure, zcdp = PureDefinition(), ZCDPDefinition()
    assert pure.event(0.5) == PureDP(Fraction(0.5)) and zcdp.event(0.5) == ZCDP(Fraction(0.5))
    assert pure.budget(1.0) == Fraction(1) and zcdp.budget(rho=0.25) == Fraction(1, 4)
    assert pure.noise_scale(0.5) == 2.0 and zcdp.noise_scale(0.5) == 1.0
    with pytest.raises(ValueError, match="composes in zCDP"):
        zcdp.check_accountant(Accountant(epsilon=1.0))


@pytest.mark.parametrize("privacy, budget", [
    ("pure", {"epsilon": 1.0}), (ZCDPDefinition(delta=1e-6), {"epsilon": 1.0, "delta": 1e-6})])
def test_an_object_runs_the_release_its_string_runs(table, privacy, budget):
    dataset, workload = table
    name = definition_of(privacy).name
    by_name, _ = run_with_defaults(dataset, workload, rng=3, privacy=name, **budget)
    by_object, _ = run_with_defaults(dataset, workload, rng=3, privacy=definition_of(privacy), **budget)
    assert np.array_equal(by_name.histogram, by_object.histogram)
    assert by_name.guarantee == by_object.guarantee
    fixed = mwem(dataset, workload, rounds=2, rng=1, privacy=definition_of(privacy), **budget)
    assert fixed.guarantee["definition"] == name
