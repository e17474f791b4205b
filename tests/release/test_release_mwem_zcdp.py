"""MWEM's zCDP mode and adaptive rounds: plans, charges, guarantees, refusals, the rule's inputs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import (
    ZCDP,
    Accountant,
    BoundedRange,
    approx_dp_to_zcdp_budget,
    zcdp_to_approx_dp,
)
from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, mwem, mwem_privacy_plan
from fastmwem.release.mwem import adaptive as adaptive_module
from fastmwem.release.mwem.auto import DEFAULT_MODEL, default_model
from fastmwem.release.selection import ScanSelection
from fastmwem.workloads import Marginals, MatrixWorkload
from tests.release._auto import run_with_defaults


def dataset(n=3000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    latent = rng.random(n) < 0.3
    cols = [(rng.random(n) < np.where(latent, 0.8, 0.2)).astype(np.int64) for _ in range(d)]
    return Dataset(np.stack(cols, axis=1), Domain([f"x{i}" for i in range(d)], [2] * d))


def test_fixed_rounds_zcdp_plan_fits_the_converted_budget():
    ds = dataset()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1.0, rounds=4, privacy="zcdp", delta=1e-6, rng=0,
                  reuse_passes=2)
    budget = approx_dp_to_zcdp_budget(1.0, 1e-6, conversion="tight")
    spent = sum(e.cost[0] for e in result.ledger)
    assert spent <= budget and spent > budget * Fraction(999_999, 10**6)
    kinds = [type(e.event) for e in result.ledger]
    assert kinds == [ZCDP] + [BoundedRange, ZCDP] * 4
    assert result.guarantee["definition"] == "zcdp"
    assert result.guarantee["epsilon"] <= 1.0 and result.guarantee["delta"] == 1e-6
    assert result.report()["privacy"]["definition"] == "zcdp"
    assert all(r.rho_measure is not None and r.epsilon_measure is None for r in result.trace)
    config = MWEMConfig(epsilon=1.0, rounds=4, privacy="zcdp", delta=1e-6)
    assert [e for e, _ in mwem_privacy_plan(config, w)] == [e.event for e in result.ledger]


def test_zcdp_measurements_are_integers():
    ds = dataset()
    result = mwem(ds, Marginals.all_kway(ds.domain, 2), rho=0.5, privacy="zcdp", rounds=3,
                  rng=1, reuse_passes=1)
    for values in result.measurements:
        assert np.all(values == np.rint(values))


@pytest.mark.parametrize("privacy", ["pure", "zcdp"])
def test_adaptive_run_charges_a_ceiling_and_each_round_within_it(privacy):
    ds = dataset()
    w = Marginals.all_kway(ds.domain, 3)
    budget = {"epsilon": 1.0} if privacy == "pure" else {"rho": 0.02}
    acc = Accountant(**budget)
    result = mwem(ds, w, rounds=None, privacy=privacy, rng=2, accountant=acc, **budget)
    count, ceiling = (e.cost[0] for e in result.ledger)
    assert count + ceiling <= acc.budget().__dict__[("epsilon" if privacy == "pure" else "rho")]
    inside = Accountant(**({"epsilon": ceiling} if privacy == "pure" else {"rho": ceiling}))
    inside.compose_all([(e.event, e.label) for e in result.round_ledger])  # never refused
    left = inside.remaining()
    assert (left.epsilon if privacy == "pure" else left.rho) < ceiling * Fraction(1, 10**9)
    rounds = [r for r in result.trace if r.round > 0]
    assert [r.round for r in rounds] == list(range(1, len(rounds) + 1))
    assert sum(1 for r in result.trace if r.round == 0) == 5  # the 1-way marginals first
    assert len(result.trace) == len(result.measurements)
    assert "round_ledger" in result.report()["privacy"]


class _RoundRobin(ScanSelection):
    """A selection that ignores the data: round t picks candidate t (mod the candidates)."""

    def prepare(self, workload, private, **kwargs):
        return _RoundRobinChooser()


class _RoundRobinChooser:
    def __init__(self):
        self.calls = 0
        self.answers = None

    def retuned(self, *args):
        return self

    def choose(self, state, available, rng):
        ids = np.flatnonzero(available)
        self.calls += 1
        return int(ids[self.calls % ids.size])

    def true_answers(self, queries):
        return np.zeros(queries.stop - queries.start)


def test_the_rule_reads_only_released_values(monkeypatch):
    """Two different datasets whose released measurements are the same make the same decisions.

    The selection and the measurements are replaced by ones that never read the data (their
    outputs are the same for both datasets); everything the rule decides (anneals, each round's
    budget, the number of rounds) must then be the same.
    """
    decisions = []
    original = adaptive_module.should_anneal

    def spy(before, after, expected):
        out = original(before, after, expected)
        decisions.append(out)
        return out

    monkeypatch.setattr(adaptive_module, "should_anneal", spy)
    traces = []
    for seed in (0, 1):
        decisions.clear()
        ds = dataset(seed=seed, n=1000 + 2000 * seed)
        result = mwem(ds, Marginals.all_kway(ds.domain, 2), rounds=None, privacy="zcdp",
                      rho=0.05, rng=3, total=500, selection=_RoundRobin())
        traces.append((list(decisions), [(r.selected, r.noise_scale) for r in result.trace]))
    assert traces[0] == traces[1]
    assert any(traces[0][0]) and len(traces[0][1]) > 10


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"epsilon": 1, "delta": 1e-9}, "delta"),
    ({"epsilon": 1, "privacy": "zcdp"}, "delta"),
    ({"epsilon": 1, "privacy": "zcdp", "delta": 1.0}, "delta"),
    ({"epsilon": 1, "privacy": "zcdp", "delta": 1e-9, "rho": 0.1}, "rho"),
    ({"rho": 0.1}, "rho"),
    ({"epsilon": 1, "privacy": "renyi"}, "privacy"),
    ({"epsilon": 1, "privacy": "zcdp", "delta": 1e-6, "noise_test": 0.01}, "noise_test"),
    ({"epsilon": 1, "rounds": None, "selection": "lazy"}, "adaptive"),
    ({"epsilon": 1, "rounds": None, "measure": "query"}, "group"),
    ({"epsilon": 1, "initial_rounds": 5}, "initial_rounds"),
    ({"epsilon": 1, "total_std": 3.0}, "total"),
])
def test_bad_combinations_fail_before_any_charge(kwargs, message):
    ds = dataset()
    acc = Accountant(rho=10) if kwargs.get("privacy") == "zcdp" else Accountant(epsilon=10)
    kwargs = {"rounds": 3, **kwargs}
    with pytest.raises((ValueError, TypeError), match=message):
        mwem(ds, Marginals.all_kway(ds.domain, 2), rng=0, accountant=acc, **kwargs)
    assert acc.ledger == ()


def test_zcdp_refuses_non_integer_queries_and_pure_accountants():
    ds = dataset(d=3)
    real = MatrixWorkload(ds.domain, np.full((2, 8), 0.5))
    with pytest.raises(ValueError, match="integer"):
        mwem(ds, real, rho=1, privacy="zcdp", rounds=1, rng=0)
    acc = Accountant(epsilon=5)
    with pytest.raises(ValueError, match="zCDP"):
        mwem(ds, Marginals.all_kway(ds.domain, 2), rho=1, privacy="zcdp", rounds=1, rng=0,
             accountant=acc)
    assert acc.ledger == ()


def test_with_defaults_zcdp_states_the_guarantee_of_count_and_rounds():
    ds = dataset()
    result, choices = run_with_defaults(ds, Marginals.all_kway(ds.domain, 3), epsilon=0.5,
                                privacy="zcdp", delta=1e-8, rng=4, rounds="adaptive")
    assert choices.adaptive and choices.rounds >= 1 and choices.noise_test is None
    rho = approx_dp_to_zcdp_budget(0.5, 1e-8, conversion="tight")
    assert result.privacy.rho <= rho
    g = result.guarantee
    assert g["definition"] == "zcdp" and g["delta"] == 1e-8
    assert g["epsilon"] <= 0.5 + 1e-9
    assert zcdp_to_approx_dp(result.privacy.rho, 1e-8, conversion="tight") <= 0.5


def test_with_defaults_pure_default_anneals_on_a_dense_model_without_supersets():
    ds = dataset()
    result, choices = run_with_defaults(ds, Marginals.all_kway(ds.domain, 3), epsilon=1.0, rng=5)
    assert choices.adaptive and choices.noise_test is not None
    assert choices.candidates != "supersets"
    assert result.guarantee == {"definition": "pure", "epsilon": 1.0}
    assert result.round_ledger != ()
    # with a selection that cannot retune, the rule keeps fixed rounds
    result, choices = run_with_defaults(ds, Marginals.all_kway(ds.domain, 3), epsilon=1.0, rng=5,
                                        selection="lazy")
    assert not choices.adaptive and choices.noise_test is not None
    assert result.round_ledger == ()


@pytest.mark.parametrize(("epsilon", "adaptive"), [(0.5, False), (20.0, True)])
def test_with_defaults_zcdp_default_anneals_only_with_enough_signal(epsilon, adaptive):
    ds = dataset()  # 3000 records: rho n^2 reaches ADAPTIVE_MIN_RHO_N2 only at a large epsilon
    result, choices = run_with_defaults(ds, Marginals.all_kway(ds.domain, 3), epsilon=epsilon,
                                        privacy="zcdp", delta=1e-8, rng=6, model="dense")
    assert choices.adaptive is adaptive and choices.rounds_default
    assert bool(result.round_ledger) is adaptive


@pytest.mark.parametrize("epsilon", [0.5, 20.0])
def test_with_defaults_zcdp_takes_a_junction_tree_for_marginals(epsilon):
    ds = dataset()  # a dense-sized domain: the zCDP default's model is a junction tree all the same
    result, choices = run_with_defaults(ds, Marginals.all_kway(ds.domain, 3), epsilon=epsilon,
                                        privacy="zcdp", delta=1e-8, rng=6)
    assert DEFAULT_MODEL["zcdp"] == "junction-tree" and result.model is not None
    assert result.histogram is None and not choices.adaptive and choices.estimator == "final-fit"
    pure, _ = run_with_defaults(ds, Marginals.all_kway(ds.domain, 3), epsilon=epsilon, rng=6)
    assert DEFAULT_MODEL["pure"] == "auto" and pure.histogram is not None  # dense: it fits


def test_with_defaults_zcdp_keeps_a_dense_model_where_a_tree_cannot_run():
    ds = dataset()
    w = Marginals.all_kway(ds.domain, 3)
    # an average of iterates needs a dense histogram: the default model falls back to one
    result, _ = run_with_defaults(ds, w, epsilon=1.0, privacy="zcdp", delta=1e-8, rng=6,
                                  output="average")
    assert result.histogram is not None and result.model is None
    # and a workload without marginal structure has no junction tree at all
    matrix = MatrixWorkload(ds.domain, np.eye(ds.domain.size)[:3])
    assert default_model("zcdp", {"epsilon": 1.0}, matrix, False, None, []) == "auto"
