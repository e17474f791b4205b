"""MWEM: privacy plan and charging, data isolation, options, accuracy trend."""

from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BoundedRange, BudgetExceededError, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import workload_error
from fastmwem.release import MWEMConfig, MWState, mwem, mwem_privacy_plan
from fastmwem.workloads import Marginals, Parities
from fastmwem.workloads.base import MAX_DENSE_CELLS


def correlated_dataset(n=4000, d=6, seed=0):
    """Binary records with strong pairwise structure, so that MWEM has something to learn."""
    rng = np.random.default_rng(seed)
    latent = rng.random(n) < 0.3
    cols = [(rng.random(n) < np.where(latent, 0.85, 0.15)).astype(np.int64) for _ in range(d)]
    domain = Domain([f"x{i}" for i in range(d)], [2] * d)
    return Dataset(np.stack(cols, axis=1), domain)


class RecordingDataset:
    """A dataset stand-in that records whether the budget was charged before it was read."""

    def __init__(self, dataset, accountant):
        self.domain = dataset.domain
        self._dataset = dataset
        self._accountant = accountant
        self.reads = 0
        self.charged_before_read = None

    def histogram(self):
        self.reads += 1
        self.charged_before_read = len(self._accountant.ledger) > 0
        return self._dataset.histogram()


def test_plan_sums_to_at_most_epsilon_and_matches_ledger():
    ds = correlated_dataset()
    w = Marginals.all_kway(ds.domain, 2)
    acc = Accountant(epsilon=1)
    result = mwem(ds, w, epsilon=1.0, rounds=7, rng=1, accountant=acc, reuse_passes=2)
    assert len(result.ledger) == 1 + 2 * 7  # noisy count, then select + measure per round
    total = sum(entry.cost[0] for entry in result.ledger)
    assert total <= Fraction(1)
    assert total > Fraction(1) - Fraction(1, 10**12)
    kinds = [type(e.event) for e in result.ledger[1:]]
    assert kinds == [BoundedRange, PureDP] * 7
    plan = mwem_privacy_plan(MWEMConfig(epsilon=1.0, rounds=7), w)
    assert [e for e, _ in plan] == [entry.event for entry in result.ledger]


def test_budget_charged_before_data_is_read():
    ds = correlated_dataset()
    acc = Accountant(epsilon=2)
    spy = RecordingDataset(ds, acc)
    mwem(spy, Marginals.all_kway(ds.domain, 2), epsilon=1.0, rounds=3, rng=0, accountant=acc)
    assert spy.reads == 1
    assert spy.charged_before_read is True


def test_refused_plan_spends_nothing_and_reads_nothing():
    ds = correlated_dataset()
    acc = Accountant(epsilon=0.5)
    spy = RecordingDataset(ds, acc)
    with pytest.raises(BudgetExceededError):
        mwem(spy, Marginals.all_kway(ds.domain, 2), epsilon=1.0, rounds=3, rng=0, accountant=acc)
    assert spy.reads == 0
    assert acc.spent() == PureDP(0)
    assert acc.ledger == ()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": 1, "rounds": 0}, "rounds"),
        ({"epsilon": 1, "rounds": 2.5}, "rounds"),
        ({"epsilon": 1, "measure": "cells"}, "measure"),
        ({"epsilon": 1, "init": "zeros"}, "init"),
        ({"epsilon": 1, "output": "best"}, "output"),
        ({"epsilon": 1, "selection": "max"}, "selection"),
        ({"epsilon": 1, "reuse_passes": -1}, "reuse_passes"),
        ({"epsilon": 1, "init_fraction": 1.5}, "init_fraction"),
        ({"epsilon": 1, "cell_penalty": -2.0}, "cell_penalty"),
        ({"epsilon": 1, "total": 0}, "total"),
        ({"epsilon": 1, "rounds": 100}, "rounds"),
    ],
)
def test_bad_arguments_fail_before_any_charge(kwargs, message):
    ds = correlated_dataset()
    acc = Accountant(epsilon=10)
    spy = RecordingDataset(ds, acc)
    with pytest.raises((ValueError, TypeError), match=message):
        mwem(spy, Marginals.all_kway(ds.domain, 2), rng=0, accountant=acc, **kwargs)
    assert acc.ledger == ()
    assert spy.reads == 0


def test_domain_mismatch_and_type_errors():
    ds = correlated_dataset()
    other = Domain([f"y{i}" for i in range(6)], [2] * 6)
    with pytest.raises(ValueError, match="different domains"):
        mwem(ds, Marginals.all_kway(other, 2), epsilon=1, rng=0)
    with pytest.raises(TypeError, match="workload"):
        mwem(ds, "marginals:2", epsilon=1, rng=0)
    with pytest.raises(TypeError, match="dataset"):
        mwem(np.zeros((3, 6)), Marginals.all_kway(ds.domain, 2), epsilon=1, rng=0)


def test_dense_limit_is_named_for_workloads_without_marginal_structure():
    big = Domain([f"a{i}" for i in range(27)], [2] * 27)
    assert big.size > MAX_DENSE_CELLS

    class Huge:
        domain = big

        def histogram(self):  # pragma: no cover - must never be reached
            raise AssertionError("read")

    with pytest.raises(ValueError, match="dense limit MAX_DENSE_CELLS = 67108864"):
        mwem(Huge(), Parities.all_kway(big, 1), epsilon=1, rounds=2, rng=0)
    with pytest.raises(ValueError, match="dense limit MAX_DENSE_CELLS = 67108864"):
        mwem(Huge(), Marginals.all_kway(big, 1), epsilon=1, rounds=2, rng=0, model="dense")
    # Marginals have a structure: a factored run, which reads marginals, not histogram().
    with pytest.raises(TypeError, match="neither marginal"):
        mwem(Huge(), Marginals.all_kway(big, 1), epsilon=1, rounds=2, rng=0)


def mean_l1(ds, result, workload):
    return workload_error(ds.histogram(), result.histogram, workload)["mean_group_l1"]


def test_error_falls_as_epsilon_grows():
    ds = correlated_dataset(n=5000, d=6)
    w = Marginals.all_kway(ds.domain, 3)
    errors = []
    for eps in (0.02, 0.2, 2.0):
        errors.append(np.mean([mean_l1(ds, mwem(ds, w, epsilon=eps, rounds=8, rng=s), w)
                               for s in range(4)]))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05


@pytest.mark.parametrize(
    "options",
    [
        {"init": "noisy-histogram"},
        {"output": "average"},
        {"measure": "query"},
        {"selection": "permute-and-flip"},
        {"exclude_measured": False},
        {"reuse_passes": 0, "rounds": 15},
        {"total": 4000},
        {"cell_penalty": 0.0},
    ],
)
def test_options_run_and_beat_uniform(options):
    ds = correlated_dataset()
    w = Marginals.all_kway(ds.domain, 2)
    uniform = MWState.uniform(ds.domain, len(ds)).histogram
    base = workload_error(ds.histogram(), uniform, w)["mean_group_l1"]
    options = {"rounds": 10, **options}
    result = mwem(ds, w, epsilon=2.0, rng=3, **options)
    assert np.isclose(result.distribution.sum(), 1.0)
    # A single MW step per round (reuse_passes=0, Figure 1) learns slowly; reuse learns fast.
    factor = 0.9 if options.get("reuse_passes") == 0 else 0.6
    assert mean_l1(ds, result, w) < factor * base


def test_query_mode_selects_single_queries():
    ds = correlated_dataset()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=1.0, rounds=5, rng=2, measure="query")
    assert not result.group_mode
    assert all(m.shape == (1,) for m in result.measurements)
    assert all(0 <= q < w.n_queries for q in result.selected)
    assert len(set(result.selected)) == 5  # exclude_measured


def test_same_seed_same_result_and_sampling():
    ds = correlated_dataset()
    w = Marginals.all_kway(ds.domain, 2)
    a = mwem(ds, w, epsilon=1.0, rounds=4, rng=11)
    b = mwem(ds, w, epsilon=1.0, rounds=4, rng=11)
    np.testing.assert_array_equal(a.histogram, b.histogram)
    frame = a.sample(500, rng=5)
    assert list(frame.columns) == list(ds.domain.attributes)
    assert len(frame) == 500
    assert frame.to_numpy().min() >= 0 and frame.to_numpy().max() <= 1
    assert frame.equals(a.sample(500, rng=5))
    assert len(a.sample(rng=1)) == int(round(a.total))


def test_sampled_records_follow_the_synthetic_distribution():
    ds = correlated_dataset()
    w = Marginals.all_kway(ds.domain, 1)
    result = mwem(ds, w, epsilon=1.0, rounds=3, rng=0)
    frame = result.sample(200_000, rng=9, sampling="independent")
    sampled = Dataset(frame.to_numpy(), ds.domain).histogram()
    expected = result.distribution * 200_000
    # Each cell count is binomial; 6 standard deviations over 64 cells keeps false alarms < 1e-6.
    sd = np.sqrt(expected * (1 - result.distribution))
    assert np.all(np.abs(sampled - expected) <= 6 * sd + 1)
    # Systematic: every cell's count is its expectation rounded down or up.
    chunks = list(result.sample_chunks(1001, rng=9, chunk_rows=1001, sampling="systematic"))
    sampled = Dataset(chunks[0].to_numpy(), ds.domain).histogram()
    expected = result.distribution * 1001
    assert np.all((sampled >= np.floor(expected)) & (sampled <= np.ceil(expected)))
    with pytest.raises(ValueError, match="sampling must be one of"):
        result.sample(10, rng=1, sampling="iid")


def test_report_holds_only_private_outputs():
    ds = correlated_dataset()
    w = Marginals.all_kway(ds.domain, 2)
    # A Generator the caller made may have a known seed: only OS randomness counts as private.
    report = mwem(ds, w, epsilon=1.0, rounds=3, rng=np.random.default_rng(0)).report()
    assert report["private"] is False
    assert report["not_private_because"] == ["caller_rng"]
    assert len(report["rounds"]) == 3
    # No round times: a lazy round's time depends on the data (how deep its search goes).
    assert set(report["rounds"][0]) == {
        "round", "selected", "description", "measurement", "epsilon_select",
        "epsilon_measure",
    }
    assert "evaluation" not in report


def test_group_update_matches_generic_update():
    """The folded normalisation of the marginal fast path equals multiply-then-normalise."""
    domain = Domain(["a", "b", "c"], [3, 2, 4])
    w = Marginals.all_kway(domain, 2)
    rng = np.random.default_rng(4)
    start = rng.random(domain.size)
    fast = MWState(domain, start, 100.0)
    measured = rng.random(w.group_sizes()[1]) * 30
    fast.update_group(w, 1, measured)

    p = start / start.sum()
    current = w.dense()[w.group_queries(1)] @ p
    log_factors = (measured / 100.0 - current) / 2
    weights = np.zeros(w.n_queries)
    weights[w.group_queries(1)] = log_factors
    slow = p * np.exp(w.dense().T @ weights)
    np.testing.assert_allclose(fast.distribution, slow / slow.sum(), rtol=1e-12)


@pytest.mark.slow
def test_mwem_runs_on_a_2_to_the_24_cell_domain():
    domain = Domain([f"a{i}" for i in range(24)], [2] * 24)
    rng = np.random.default_rng(0)
    ds = Dataset(rng.integers(0, 2, (2000, 24)), domain)
    result = mwem(ds, Marginals.all_kway(domain, 1), epsilon=1.0, rounds=2, rng=0,
                  reuse_passes=1)
    assert result.histogram.size == 2**24
    assert np.isclose(result.distribution.sum(), 1.0)
    assert result.sample(50, rng=1).shape == (50, 24)


def test_sample_decodes_through_the_schema():
    import pandas as pd

    from fastmwem.data import Categorical, Numeric, Schema

    rng = np.random.default_rng(8)
    raw = pd.DataFrame({"colour": rng.choice(["red", "blue"], 500),
                        "size": rng.uniform(0, 10, 500)})
    schema = Schema([Categorical("colour", ["red", "blue"]), Numeric("size", 0, 10, bins=5)])
    data = schema.encode(raw)
    w = Marginals.all_kway(data.domain, 2)
    result = mwem(data, w, epsilon=1.0, rounds=1, rng=0, schema=schema)
    frame = result.sample(50, rng=1)
    assert set(frame["colour"]) <= {"red", "blue"}
    assert frame["size"].between(0, 10).all()
    assert result.sample(5, rng=1, decode=False)["colour"].isin([0, 1]).all()
    other = Schema([Categorical("colour", ["red", "blue", "green"]), Numeric("size", 0, 10, bins=5)])
    with pytest.raises(ValueError, match="schema"):
        mwem(data, w, epsilon=1.0, rounds=1, rng=0, schema=other)
