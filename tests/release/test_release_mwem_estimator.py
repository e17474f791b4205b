"""MWEM's estimators (reuse passes, or the weighted least-squares fit) and the 1-way start."""

from __future__ import annotations

import copy
import hashlib
import importlib
import math

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.data import Dataset, Domain
from fastmwem.models import MWState
from fastmwem.models.fit import fit
from fastmwem.release import MWEMConfig, mwem, mwem_privacy_plan, mwem_with_defaults
from fastmwem.release.mwem import rounds as rounds_module
from fastmwem.release.mwem.config import FINAL_FIT_ITERATIONS, MAX_FIT_ITERATIONS
from fastmwem.release.mwem.rounds import Measurement
from fastmwem.workloads import Marginals, RandomCountingQueries

pytestmark = pytest.mark.filterwarnings("ignore::fastmwem.mechanisms.seeding.SeededRunWarning")


def table(n: int = 600, d: int = 5, seed: int = 0) -> Dataset:
    """Binary records driven by one latent bit, so that the attributes are dependent."""
    rng = np.random.default_rng(seed)
    latent = rng.random(n) < 0.3
    cols = [rng.random(n) < np.where(latent, 0.8, 0.2) for _ in range(d)]
    domain = Domain([f"x{i}" for i in range(d)], [2] * d)
    return Dataset(np.stack(cols, axis=1).astype(np.int64), domain)


def fingerprint(result) -> str:
    """The selections, measurements and answers of a run (rounded to 6 decimals)."""
    h = hashlib.sha256(np.asarray(result.selected, dtype=np.int64).tobytes())
    for part in (*result.measurements, np.asarray(result.answer())):
        h.update((np.round(np.asarray(part, dtype=np.float64), 6) + 0.0).tobytes())
    return h.hexdigest()[:16]


def charges(result) -> list[tuple[object, str]]:
    return [(entry.event, entry.label) for entry in result.ledger]


def objective(result, measured: list[Measurement]) -> float:
    """The weighted least-squares loss of the result's final state on ``measured``."""
    workload = result.measured_workload or result.workload
    state = (MWState(result.domain, result.histogram, result.total) if result.model is None
             else copy.deepcopy(result.model))
    return fit(state, workload, measured, max_iterations=0).objective


def measurements_of(result, std: float = 1.0) -> list[Measurement]:
    workload = result.measured_workload or result.workload
    return [Measurement(g, workload.group_queries(g), values, std)
            for g, values in zip(result.selected, result.measurements)]


# Computed on the code before the estimator option existed (the same seeds and options).
BEFORE = {
    "dense": ({"rounds": 5}, "4fe0a7fa732e7e1d"),
    "junction-tree": ({"rounds": 5, "model": "junction-tree"}, "ae12fd40351de7af"),
    "adaptive": ({"rounds": None, "privacy": "zcdp", "delta": 1e-9}, "6b71b13432b5f9be"),
}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_default_estimator_reproduces_the_runs_of_before(name):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    options, expected = BEFORE[name]
    assert fingerprint(mwem(ds, w, epsilon=1.0, rng=3, **options)) == expected
    assert fingerprint(mwem(ds, w, epsilon=1.0, rng=3, estimator="passes", **options)) == expected


def test_the_defaults_reproduce_their_run_of_before(monkeypatch):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    # the defaults before the weighted final fit became pure DP's estimator, asked for (and
    # before pure DP's reuse passes stopped at a tolerance of 1e-3)
    before = {"reuse_tolerance": 1e-4}
    assert fingerprint(mwem_with_defaults(ds, w, epsilon=1.0, rng=3, estimator="passes",
                                          **before)) == "b22b318ed2d2e1fc"
    # and the fit's line search before it waited for clean steps to double its step
    monkeypatch.setattr(importlib.import_module("fastmwem.models.fit"), "_GROW_AFTER", 0)
    assert fingerprint(mwem_with_defaults(ds, w, epsilon=1.0, rng=3, **before)) \
        == "fc99bec51ea439be"


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
@pytest.mark.parametrize("privacy", ["pure", "zcdp"])
def test_the_fit_charges_as_the_passes_and_fits_their_measurements_better(model, privacy):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    budget = {"delta": 1e-9} if privacy == "zcdp" else {}
    runs = {estimator: mwem(ds, w, epsilon=1.0, rounds=6, rng=7, model=model, privacy=privacy,
                            estimator=estimator, **budget)
            for estimator in ("passes", "fit")}
    passes, fitted = runs["passes"], runs["fit"]
    assert charges(fitted) == charges(passes)
    assert fitted.guarantee == passes.guarantee
    assert fitted.selected[0] == passes.selected[0]  # round 1 sees the same start
    assert (fitted.model is None) == (model == "dense")
    # On the fit's own measurements (one std for all: fixed rounds measure alike), its state
    # is at least as close as the one the passes left.
    mine = measurements_of(fitted)
    assert objective(fitted, mine) <= objective(passes, mine)


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
@pytest.mark.parametrize("rounds", [6, None])
def test_the_final_fit_keeps_the_rounds_of_the_passes_and_fits_their_measurements(model, rounds):
    # Passes during the rounds: the same selections and measurements, draw for draw; only the
    # last estimate differs, and it fits the measurements at least as well.
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    runs = {estimator: mwem(ds, w, epsilon=1.0, rounds=rounds, rng=7, model=model,
                            privacy="zcdp", delta=1e-9, estimator=estimator)
            for estimator in ("passes", "final-fit")}
    passes, final = runs["passes"], runs["final-fit"]
    assert charges(final) == charges(passes)
    assert final.selected == passes.selected
    for a, b in zip(final.measurements, passes.measurements):
        np.testing.assert_array_equal(a, b)
    mine = measurements_of(final)
    assert objective(final, mine) < objective(passes, mine)


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
def test_after_one_round_both_estimators_saw_the_same_measurement(model):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    passes, fitted = (mwem(ds, w, epsilon=1.0, rounds=1, rng=11, model=model, estimator=e,
                           reuse_passes=2) for e in ("passes", "fit"))
    assert passes.selected == fitted.selected
    np.testing.assert_array_equal(passes.measurements[0], fitted.measurements[0])
    same = measurements_of(fitted)
    assert objective(fitted, same) < objective(passes, same)


def test_each_measurement_is_fitted_with_the_std_of_its_own_mechanism(monkeypatch):
    seen: list[list[float]] = []
    real = rounds_module.fit

    def recording(state, workload, measurements, **kwargs):
        seen.append([float(m.std) for m in measurements])
        return real(state, workload, measurements, **kwargs)

    monkeypatch.setattr(rounds_module, "fit", recording)
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1.0, rounds=3, rng=1, estimator="fit", init="one-way",
                  init_fraction=0.2, total=600)
    config = MWEMConfig(epsilon=1.0, rounds=3, init="one-way", init_fraction=0.2, total=600)
    one_way = math.sqrt(2) / config.one_way_share(5)  # Laplace: std = sqrt(2) b, b = 1 / eps
    rounds = math.sqrt(2) / result.trace[0].epsilon_measure
    assert len(seen) == 3 + 1  # one fit a round, one at the end
    assert seen[-1] == pytest.approx([one_way] * 5 + [rounds] * 3, rel=1e-12)


@pytest.mark.parametrize("given", [None, 7])
def test_the_final_fit_takes_at_most_final_fit_iterations_steps(monkeypatch, given):
    caps: list[int] = []
    real = rounds_module.fit

    def recording(state, workload, measurements, **kwargs):
        caps.append(kwargs["max_iterations"])
        return real(state, workload, measurements, **kwargs)

    monkeypatch.setattr(rounds_module, "fit", recording)
    ds = table()
    options = {} if given is None else {"final_fit_iterations": given}
    mwem(ds, Marginals.all_kway(ds.domain, 2), epsilon=1.0, rounds=3, rng=1,
         estimator="final-fit", **options)
    assert caps == [FINAL_FIT_ITERATIONS if given is None else given]  # the final fit only


def test_no_fit_once_the_noise_test_stops_the_updates(monkeypatch):
    calls: list[int] = []
    real = rounds_module.fit

    def recording(state, workload, measurements, **kwargs):
        calls.append(len(measurements))
        return real(state, workload, measurements, **kwargs)

    monkeypatch.setattr(rounds_module, "fit", recording)
    rng = np.random.default_rng(0)
    domain = Domain(["a", "b", "c"], [2, 2, 2])
    ds = Dataset(rng.integers(0, 2, (300, 3)), domain)  # independent and uniform
    w = Marginals.all_kway(domain, 2)
    result = mwem(ds, w, epsilon=0.5, rounds=3, rng=2, noise_test=0.01, estimator="fit",
                  total=300)
    assert result.updates_skipped and calls == []
    np.testing.assert_allclose(result.histogram, 300 / 8)


@pytest.mark.parametrize("options, message", [
    ({"estimator": "least-squares"}, "estimator"),
    ({"estimator": "fit", "fit_iterations": 0}, "fit_iterations"),
    ({"estimator": "fit", "fit_iterations": -3}, "fit_iterations"),
    ({"fit_iterations": MAX_FIT_ITERATIONS + 1}, "fit_iterations"),
    ({"estimator": "final-fit", "final_fit_iterations": 0}, "final_fit_iterations"),
    ({"final_fit_iterations": MAX_FIT_ITERATIONS + 1}, "final_fit_iterations"),
    ({"estimator": "fit", "fit_tolerance": -1e-3}, "fit_tolerance"),
    ({"estimator": "fit", "fit_tolerance": float("nan")}, "fit_tolerance"),
    ({"estimator": "fit", "fit_tolerance": float("inf")}, "fit_tolerance"),
    ({"init": "one-way", "measure": "query"}, "init='one-way'"),
])
@pytest.mark.parametrize("driver", ["mwem", "defaults"])
def test_bad_estimator_options_are_refused_before_any_charge(options, message, driver):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    acc = Accountant(epsilon=1.0)
    run = mwem if driver == "mwem" else mwem_with_defaults
    with pytest.raises(ValueError, match=message):
        run(ds, w, epsilon=1.0, rounds=3, rng=0, accountant=acc, **options)
    assert acc.ledger == ()


@pytest.mark.parametrize("name", ["fit_iterations", "final_fit_iterations"])
@pytest.mark.parametrize("value", [2.5, True])
def test_a_fit_iterations_of_another_type_is_a_type_error(name, value):
    with pytest.raises(TypeError, match=name):
        MWEMConfig(epsilon=1.0, estimator="fit", **{name: value})


def test_a_one_way_start_of_single_queries_is_refused():
    ds = table()
    w = RandomCountingQueries(ds.domain, 20, rng=0)
    acc = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="init='one-way'"):
        mwem(ds, w, epsilon=1.0, rounds=3, rng=0, accountant=acc, init="one-way",
             measure="query")
    assert acc.ledger == ()


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
@pytest.mark.parametrize("estimator", ["passes", "fit"])
def test_the_one_way_start_is_charged_marginal_by_marginal_within_the_budget(model, estimator):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    config = MWEMConfig(epsilon=1.0, rounds=4, init="one-way", init_fraction=0.2,
                        model=model, estimator=estimator)
    result = mwem(ds, w, epsilon=1.0, rounds=4, rng=5, init="one-way", init_fraction=0.2,
                  model=model, estimator=estimator)
    labels = [entry.label for entry in result.ledger]
    start = [f"initial 1-way marginal x{i} (Laplace)" for i in range(5)]
    assert labels[1:6] == start and labels[0].startswith("record count")
    assert len(labels) == 1 + 5 + 2 * 4
    assert charges(result) == mwem_privacy_plan(config, w, model=model)
    each = config.one_way_share(5)
    assert all(entry.event.epsilon == each for entry in result.ledger[1:6])
    assert result.guarantee == {"definition": "pure", "epsilon": 1.0}
    # The 1-way marginals are measurements: the record of the run holds them first.
    measured = result.measured_workload
    assert [measured.group_attributes(g) for g in result.selected[:5]] == [(i,) for i in range(5)]
    assert len(result.selected) == 5 + 4


def test_the_one_way_start_under_zcdp_spends_the_whole_rho():
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1.0, delta=1e-9, privacy="zcdp", rounds=3, rng=5,
                  init="one-way", estimator="fit")
    config = MWEMConfig(epsilon=1.0, delta=1e-9, privacy="zcdp", rounds=3, init="one-way")
    assert sum(1 for e in result.ledger if e.label.startswith("initial 1-way marginal")) == 5
    assert float(result.privacy.rho) <= float(config.budget())
    assert float(result.privacy.rho) == pytest.approx(float(config.budget()), rel=1e-12)
    assert result.guarantee["epsilon"] <= 1.0


def test_the_one_way_start_leaves_measured_1_way_groups_out_of_the_rounds():
    ds = table()
    w = Marginals(ds.domain, [["x0"], ["x1"], ["x0", "x1"], ["x2", "x3"], ["x3", "x4"]])
    result = mwem(ds, w, epsilon=1.0, rounds=3, rng=0, init="one-way")
    rounds = result.selected[5:]
    assert set(rounds) == {2, 3, 4}  # the 2-way marginals only: the 1-ways were measured
    assert result.measured_workload.n_groups == 5 + 3  # x2, x3, x4 appended for the start
    with pytest.raises(ValueError, match="exceeds the 3 candidate groups"):
        mwem(ds, w, epsilon=1.0, rounds=4, rng=0, init="one-way")


@pytest.mark.parametrize("estimator", ["passes", "fit"])
def test_the_one_way_start_gives_the_1_way_marginals_at_a_large_budget(estimator):
    ds = table(n=5000)
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=50.0, rounds=1, rng=0, init="one-way", init_fraction=0.5,
                  init_uniform_mix=1e-6, total=5000, estimator=estimator)
    one_way = Marginals.all_kway(ds.domain, 1)
    got = one_way.answer(result.histogram / 5000)
    want = one_way.answer(ds.histogram() / 5000)
    assert np.abs(got - want).max() < 0.01


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
def test_a_one_way_start_that_leaves_the_rounds_nothing_is_refused(model):
    ds = table()
    w = Marginals.all_kway(ds.domain, 1)
    acc = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="leaves the rounds nothing"):
        mwem(ds, w, epsilon=1.0, rounds=2, rng=0, accountant=acc, init="one-way", model=model)
    assert acc.ledger == ()
    result = mwem(ds, w, epsilon=1.0, rounds=2, rng=0, init="one-way", model=model,
                  exclude_measured=False)
    assert len(result.selected) == 5 + 2


def test_an_adaptive_run_with_the_one_way_start_measures_them_once_in_the_plan():
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1.0, delta=1e-9, privacy="zcdp", rounds=None, rng=2,
                  init="one-way", estimator="fit")
    labels = [entry.label for entry in result.ledger]
    assert sum(label.startswith("initial 1-way marginal") for label in labels) == 5
    assert not any(entry.label.startswith("1-way") for entry in result.round_ledger)
    assert all(r.round > 0 for r in result.trace)


@pytest.mark.parametrize("privacy", ["pure", "zcdp"])
def test_the_defaults_pass_the_options_through(privacy):
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    budget = {"delta": 1e-9} if privacy == "zcdp" else {}
    result = mwem_with_defaults(ds, w, epsilon=1.0, rng=4, privacy=privacy, estimator="fit",
                                init="one-way", **budget)
    labels = [entry.label for entry in result.ledger]
    assert labels[0].startswith("record count")
    assert sum(label.startswith("initial 1-way marginal") for label in labels) == 5
    plain = mwem_with_defaults(ds, w, epsilon=1.0, rng=4, privacy=privacy, **budget)
    assert result.guarantee == plain.guarantee
    assert result.choices.rounds >= 1


@pytest.mark.parametrize("rounds", [4, None])
def test_the_report_pairs_each_round_with_its_own_measurement_after_a_one_way_start(rounds):
    # The start's 1-way measurements come first in `measurements` but are traced by no round:
    # the report lists them under "start" and gives each round its own measurement.
    ds = table()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1.0, rounds=rounds, rng=5, init="one-way", privacy="zcdp",
                  delta=1e-9)
    report = result.report()
    measured = result.measured_workload or result.workload
    start = report.get("start", [])
    traced = [r for r in report["rounds"] if r["round"] > 0]
    assert len(start) + len(report["rounds"]) == len(result.measurements)
    assert len(start) == len(ds.domain)
    for record in [*start, *report["rounds"]]:
        queries = measured.group_queries(record["selected"])
        assert len(record["measurement"]) == queries.stop - queries.start
        assert record["description"] == measured.describe_group(record["selected"])
    assert traced, "the rounds are reported"
