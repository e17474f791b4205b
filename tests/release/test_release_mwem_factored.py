"""MWEM on domains too large for a dense histogram: a factored model, chosen by itself."""

import json
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BudgetExceededError, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import answer_error
from fastmwem.mechanisms.seeding import SeededRunWarning
from fastmwem.release import MWEMConfig, mwem, mwem_privacy_plan
from fastmwem.release.mwem import choose_model
from fastmwem.release.mwem.data_view import answers_from_marginals
from fastmwem.workloads import AllIntervals, Marginals, MatrixWorkload, RangeQueries, cuboids

DATA = Path(__file__).resolve().parents[1] / "data"
BIG = Domain([f"x{i}" for i in range(30)], [2] * 30)  # 2**30 cells: above the dense limit

pytestmark = pytest.mark.filterwarnings("ignore::fastmwem.mechanisms.seeding.SeededRunWarning")


def adult_sample() -> Dataset:
    return Dataset.from_csv(DATA / "adult-2000.csv",
                            Domain.from_json(DATA / "adult-2000-domain.json"))


def correlated(n=3000, domain=BIG, seed=0) -> Dataset:
    """Binary records driven by one latent bit, so that pairs are strongly dependent."""
    rng = np.random.default_rng(seed)
    latent = rng.random(n) < 0.3
    cols = [rng.random(n) < np.where(latent, 0.85, 0.15) for _ in range(len(domain))]
    return Dataset(np.stack(cols, axis=1).astype(np.int64), domain)


class MarginalsOnly:
    """Private data that gives marginals only, and records when it was first read."""

    def __init__(self, dataset, accountant):
        self.domain = dataset.domain
        self._dataset = dataset
        self._accountant = accountant
        self.read_after = None

    def marginal(self, attrs):
        if self.read_after is None:
            self.read_after = len(self._accountant.ledger)
        return self._dataset.marginal(attrs)


def test_large_domain_runs_factored_by_itself():
    ds = correlated()
    w = Marginals.all_kway(BIG, 2)
    result = mwem(ds, w, epsilon=2, rounds=8, rng=0)
    assert result.histogram is None and result.model.kind == "junction-tree"
    assert result.model.model_cells < 10_000
    answers = result.answer()
    assert answers.shape == (w.n_queries,)
    np.testing.assert_allclose(np.add.reduceat(answers, w.group_offsets[:-1]), result.total)
    frame = result.sample(500, rng=1)
    assert frame.shape == (500, 30) and frame.isin([0, 1]).all().all()
    report = json.loads(json.dumps(result.report()))
    assert report["model"]["kind"] == "junction-tree"
    assert len(report["rounds"]) == 8 and report["private"] is False
    with pytest.raises(ValueError, match="factored"):
        result.distribution  # noqa: B018


def test_factored_run_learns_the_pairs_as_well_as_a_dense_one():
    small = Domain([f"x{i}" for i in range(6)], [2] * 6)
    ds = correlated(domain=small)
    w = Marginals.all_kway(small, 2)
    true = answers_from_marginals(w, ds) / len(ds)
    uniform = answer_error(true, np.full(w.n_queries, 0.25), w)["mean_group_l1"]
    errors = {}
    for model in ("dense", "junction-tree", "product"):
        fitted = mwem(ds, w, epsilon=5, rounds=10, rng=0, model=model)
        errors[model] = answer_error(true, fitted.answer() / fitted.total, w)["mean_group_l1"]
    assert errors["junction-tree"] < uniform / 4
    assert errors["junction-tree"] < 2 * errors["dense"] + 0.02
    assert errors["product"] < uniform / 4


def test_budget_is_charged_before_marginals_are_read():
    acc = Accountant(epsilon=1)
    data = MarginalsOnly(correlated(), acc)
    mwem(data, Marginals.all_kway(BIG, 2), epsilon=1, rounds=3, rng=0, accountant=acc)
    assert data.read_after == len(acc.ledger) == 7


def test_a_refused_charge_reads_nothing():
    acc = Accountant(epsilon=0.5)
    data = MarginalsOnly(correlated(), acc)
    with pytest.raises(BudgetExceededError):
        mwem(data, Marginals.all_kway(BIG, 2), epsilon=1, rounds=3, rng=0, accountant=acc)
    assert data.read_after is None and acc.ledger == ()


@pytest.mark.parametrize("options, message", [
    ({"output": "average"}, "output='average' needs a dense histogram"),
    ({"max_clique_cells": 1}, r"max_clique_cells \(1\) must be at least"),
    ({"max_model_cells": 3}, r"max_model_cells \(3\) must be at least the 1-way"),
    ({"max_model_cells": 0}, "max_model_cells"),
    ({"model": "dense"}, "dense limit MAX_DENSE_CELLS"),
    ({"candidates": "all"}, "candidates must be one of"),
    ({"final_passes": -1}, "final_passes"),
])
def test_options_a_factored_run_cannot_take_are_refused_before_the_charge(options, message):
    acc = Accountant(epsilon=1)
    data = MarginalsOnly(correlated(), acc)
    with pytest.raises(ValueError, match=message):
        mwem(data, Marginals.all_kway(BIG, 2), epsilon=1, rounds=3, rng=0, accountant=acc,
             **options)
    assert acc.ledger == () and data.read_after is None


def test_lazy_selection_needs_a_dense_state():
    from fastmwem.release.selection import LazySelection

    config = MWEMConfig(epsilon=1, selection=LazySelection())
    with pytest.raises(ValueError, match="selection='lazy' needs a dense histogram"):
        choose_model(config, Marginals.all_kway(BIG, 2))


def test_workload_without_marginal_structure_names_the_limit():
    small = Domain(["a", "b"], [2, 2])
    w = MatrixWorkload(small, np.eye(4))
    assert choose_model(MWEMConfig(epsilon=1), w) == "dense"
    with pytest.raises(ValueError, match="needs a workload with marginal structure"):
        choose_model(MWEMConfig(epsilon=1, model="junction-tree"), w)


def test_memory_budget_chooses_the_factored_model():
    w = Marginals.all_kway(Domain([f"x{i}" for i in range(20)], [2] * 20), 2)
    config = MWEMConfig(epsilon=1)
    assert choose_model(config, w) == "dense"
    assert choose_model(config, w, memory_limit=2**20) == "junction-tree"


def test_noisy_start_is_one_way_marginals_with_the_same_event():
    ds = correlated()
    w = Marginals.all_kway(BIG, 2)
    config = MWEMConfig(epsilon=1, rounds=3, init="noisy-histogram")
    plan = mwem_privacy_plan(config, w, model="junction-tree")
    assert plan[1][1] == "initial 1-way marginals (Laplace)"
    assert plan[1][0] == mwem_privacy_plan(config, w)[1][0]
    assert isinstance(plan[1][0], PureDP) and plan[1][0].epsilon <= Fraction(1, 10)
    result = mwem(ds, w, epsilon=1, rounds=3, rng=0, init="noisy-histogram")
    assert [e.label for e in result.ledger][:2] == ["record count (Laplace)",
                                                   "initial 1-way marginals (Laplace)"]


def test_same_seed_same_result():
    ds = correlated(n=1000)
    w = Marginals.all_kway(BIG, 2)
    a, b = (mwem(ds, w, epsilon=1, rounds=4, rng=7) for _ in range(2))
    assert a.selected == b.selected
    np.testing.assert_array_equal(a.answer(), b.answer())


def test_seeded_factored_run_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mwem(correlated(n=500), Marginals.all_kway(BIG, 1), epsilon=1, rounds=2, rng=0)
    assert any(issubclass(w.category, SeededRunWarning) for w in caught)


def test_sub_marginals_are_candidates_and_selected_ids_index_them():
    ds = adult_sample()
    w = Marginals.all_kway(ds.domain, 3)
    result = mwem(ds, w, epsilon=1, rounds=6, rng=0)
    measured = result.measured_workload
    assert result.workload is w and measured.n_groups == w.n_groups + 91 + 14
    for r in result.trace:
        assert r.description == measured.describe_group(r.selected)
    only = mwem(ds, w, epsilon=1, rounds=3, rng=0, candidates="workload")
    assert only.measured_workload is None and all(g < w.n_groups for g in only.selected)


def test_cap_and_hopeless_candidates_are_left_out():
    """At epsilon 0.1 a 3-way marginal of adult would drown in noise: none is ever measured."""
    ds = adult_sample()
    w = Marginals.all_kway(ds.domain, 3)
    result = mwem(ds, w, epsilon=0.1, rounds=5, rng=0, max_clique_cells=4096)
    shape = dict(zip(ds.domain.attributes, ds.domain.shape))
    for r in result.trace:
        names = r.description[len("marginal("):-1].split(", ")
        assert np.prod([shape[n] for n in names]) <= 4096
    assert max(np.prod([shape[n] for n in c]) for c in result.model.cliques) <= 4096


def test_a_model_cap_bounds_the_cells_of_all_cliques_together():
    ds = adult_sample()
    w = Marginals.all_kway(ds.domain, 2)
    free = mwem(ds, w, epsilon=3, rounds=12, rng=0)
    start = sum(ds.domain.shape)
    bound = start + (free.model.model_cells - start) // 2
    assert free.model.model_cells > bound > start  # the bound below binds
    capped = mwem(ds, w, epsilon=3, rounds=12, rng=0, max_model_cells=bound)
    assert sum(ds.domain.shape) < capped.model.model_cells <= bound


@pytest.mark.parametrize("make", [
    lambda d: RangeQueries.random(d, "age", 50, rng=0),
    lambda d: AllIntervals(d, "hours-per-week"),
    lambda d: cuboids(d, 2),
])
def test_workloads_with_marginal_structure_run_factored(make):
    ds = adult_sample()
    w = make(ds.domain)
    result = mwem(ds, w, epsilon=1, rounds=4, rng=0)
    assert result.model is not None
    true = answers_from_marginals(w, ds) / len(ds)
    errors = answer_error(true, result.answer() / result.total, w)
    assert 0 <= errors["mean_group_l1"] <= 2


def test_marginal_cells_measured_one_by_one():
    ds = adult_sample()
    w = Marginals(ds.domain, [("sex", "income>50K"), ("race",)])
    result = mwem(ds, w, epsilon=1, rounds=4, rng=0, measure="query")
    assert not result.group_mode and result.model is not None
    assert all(r.description.count("=") >= 1 for r in result.trace)


def test_product_model_is_the_disjoint_special_case():
    ds = adult_sample()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1, rounds=5, rng=0, model="product")
    assert result.model.kind == "product"
    assert all(not c.neighbours for c in result.model.tree.cliques.values())


def test_a_factored_run_spends_a_tenth_of_each_round_on_selection():
    ds = correlated(n=1000)
    w = Marginals.all_kway(BIG, 2)
    result = mwem(ds, w, epsilon=1, rounds=4, rng=0)
    select, measure = result.ledger[1].event.epsilon, result.ledger[2].event.epsilon
    assert measure / select == pytest.approx(9, rel=1e-12)
    assert sum(e.cost[0] for e in result.ledger) <= 1
    plan = mwem_privacy_plan(MWEMConfig(epsilon=1, rounds=4), w)  # the model is chosen alike
    assert [e for e, _ in plan] == [e.event for e in result.ledger]
    even = mwem(ds, w, epsilon=1, rounds=4, rng=0, select_fraction=0.5)
    assert even.ledger[1].event.epsilon == even.ledger[2].event.epsilon
    with pytest.raises(ValueError, match="select_fraction must lie in"):
        MWEMConfig(epsilon=1, select_fraction=1.0)
