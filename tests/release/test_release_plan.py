"""The plan of an MWEM run: built once from public input; the automatic defaults plan, never dry-run."""

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BudgetExceededError, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, mwem_privacy_plan
from fastmwem.release.mwem import auto as defaults
from fastmwem.release.mwem.plan import plan_mwem
from fastmwem.workloads import Marginals
from tests.release._auto import run_with_defaults


@pytest.fixture
def table():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rows = np.random.default_rng(0).integers(0, 2, size=(300, 3))
    return Dataset(rows, domain), Marginals.all_kway(domain, 2)


def test_a_plan_holds_the_events_mwem_charges(table):
    _, workload = table
    config = MWEMConfig(epsilon=1.0, rounds=2)
    planned = plan_mwem(config, workload)
    assert list(planned.events) == mwem_privacy_plan(config, workload, model=planned.model)


def test_check_fits_charges_nothing():
    accountant = Accountant(epsilon=1.0)
    accountant.check_fits([(PureDP(0.5), "a"), (PureDP(0.5), "b")])
    assert accountant.ledger == ()
    with pytest.raises(BudgetExceededError):
        accountant.check_fits([(PureDP(0.75), "a"), (PureDP(0.5), "b")])
    assert accountant.ledger == ()


def test_with_defaults_runs_mwem_once(table, monkeypatch):
    dataset, workload = table
    calls = []
    real = defaults.run_plan

    def counting(planned, *args, **kwargs):
        calls.append(planned.config.rounds)
        return real(planned, *args, **kwargs)

    monkeypatch.setattr(defaults, "run_plan", counting)
    run_with_defaults(dataset, workload, epsilon=1.0, rng=np.random.default_rng(1))
    assert len(calls) == 1  # the original dry-ran mwem() against an exhausted accountant


def test_no_room_is_refused_before_the_count(table):
    dataset, workload = table
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(BudgetExceededError):
        run_with_defaults(dataset, workload, epsilon=2.0, accountant=accountant,
                  rng=np.random.default_rng(1))
    assert accountant.ledger == ()
