"""Offline private multiplicative weights (Fast-MWEM Algorithms 1-2): fastmwem.release.pmw.offline."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem import Accountant, BudgetExceededError
from fastmwem.accounting import ApproxDP, BoundedRange
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import workload_error
from fastmwem.mechanisms import ExponentialMechanism
from fastmwem.release.pmw.offline import (
    OfflinePMWConfig,
    _LazyChooser,
    pmw_offline,
    pmw_offline_privacy_plan,
)
from fastmwem.testing import chi_square_pvalue
from fastmwem.workloads import Marginals, RandomCountingQueries

ALPHA = 1e-4


def _data(domain: Domain, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    cells = rng.choice(domain.size, size=n, p=rng.dirichlet(np.full(domain.size, 0.3)))
    return Dataset(np.column_stack(np.unravel_index(cells, domain.shape)), domain)


@pytest.mark.parametrize("composition", ["zcdp", "advanced"])
def test_the_plan_fills_but_never_exceeds_the_budget(composition):
    config = OfflinePMWConfig(epsilon=1.0, delta=1e-6, rounds=50, composition=composition)
    accountant = (Accountant(epsilon=1.0, delta=1e-6, composition="zcdp")
                  if composition == "zcdp" else Accountant(epsilon=1.0, delta=1e-6))
    accountant.compose_all(pmw_offline_privacy_plan(config))
    # a slightly larger epsilon0 would not fit: the per-round share is (nearly) maximal
    bigger = OfflinePMWConfig(epsilon=1.0 + 1e-3, delta=1e-6, rounds=50, composition=composition)
    fresh = (Accountant(epsilon=1.0, delta=1e-6, composition="zcdp")
             if composition == "zcdp" else Accountant(epsilon=1.0, delta=1e-6))
    with pytest.raises(BudgetExceededError):
        fresh.compose_all(pmw_offline_privacy_plan(bigger))
    assert fresh.ledger == ()
    events = [e for e, _ in pmw_offline_privacy_plan(config)]
    kinds = {type(e) for e in events}
    assert kinds <= ({BoundedRange} | {type(events[0])} if composition == "zcdp"
                     else {ApproxDP} | {type(events[0])})


def test_lazy_and_scan_rounds_have_the_same_law():
    domain = Domain(["a", "b"], [4, 4])
    workload = RandomCountingQueries(domain, 25, rng=np.random.default_rng(1))
    dataset = _data(domain, 40, seed=2)
    eps0 = 0.5
    lazy = _LazyChooser(workload, eps0, None, None)
    synthetic = 40.0 * np.random.default_rng(3).dirichlet(np.ones(domain.size))
    true_hist = dataset.histogram()
    signed = workload.answer(synthetic) - workload.answer(true_hist)
    law = ExponentialMechanism(epsilon=eps0).probabilities(np.concatenate([signed, -signed]))
    rng = np.random.default_rng(4)
    draws = np.array([lazy.choose(synthetic, true_hist, rng) for _ in range(6000)])
    counts = np.bincount(draws, minlength=2 * workload.n_queries)
    assert chi_square_pvalue(counts, law) > ALPHA
    wrong = ExponentialMechanism(epsilon=3 * eps0).probabilities(np.concatenate([signed, -signed]))
    assert chi_square_pvalue(counts, wrong) < ALPHA


@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_pmw_improves_on_the_uniform_distribution(selection):
    domain = Domain([f"x{i}" for i in range(5)], [2] * 5)
    dataset = _data(domain, 5000, seed=5)
    workload = Marginals.all_kway(domain, 1)
    uniform = workload_error(dataset.histogram(), np.ones(domain.size), workload)["mean_group_l1"]
    result = pmw_offline(dataset, workload, epsilon=5.0, delta=1e-6, rounds=200, selection=selection,
                 rng=np.random.default_rng(6))
    error = workload_error(dataset.histogram(), result.histogram, workload)["mean_group_l1"]
    assert error < 0.6 * uniform
    assert result.measurements and all(m.size == 0 for m in result.measurements)


@pytest.mark.parametrize("options, message", [
    ({"delta": 0.0}, "delta"),
    ({"delta": 1.0}, "delta"),
    ({"composition": "basic"}, "composition"),
    ({"selection": "permute-and-flip"}, "selection"),
    ({"selection": "exponential", "index": "flat"}, "lazy"),
    ({"rounds": 0}, "rounds"),
    ({"learning_rate": -1.0}, "learning_rate"),
    ({"learning_rate": 1e6}, "learning_rate"),
    ({"learning_rate": 1e300}, "learning_rate"),
])
def test_bad_input_is_refused_before_the_charge(options, message):
    domain = Domain(["a"], [4])
    dataset = _data(domain, 10, seed=7)
    accountant = Accountant(epsilon=1.0, delta=1e-6, composition="zcdp")
    arguments = {"epsilon": 1.0, "delta": 1e-6, "rounds": 5, **options}
    with pytest.raises((ValueError, TypeError), match=message):
        pmw_offline(dataset, Marginals.all_kway(domain, 1), accountant=accountant, **arguments)
    assert accountant.ledger == ()


def test_the_largest_learning_rate_keeps_the_distribution_finite():
    # exp(+-eta) per step: at eta = 1e6 the update overflowed (or erased every cell) and the run
    # failed after the charge with "histogram must be finite".
    from fastmwem.release.pmw.offline import MAX_LEARNING_RATE
    from fastmwem.workloads import MatrixWorkload

    domain = Domain(["a", "b"], [4, 4])
    workload = MatrixWorkload(domain, np.vstack([np.ones((1, 16)), np.eye(16)]))
    result = pmw_offline(_data(domain, 50, seed=3), workload, epsilon=1.0, delta=1e-6, rounds=40,
                 learning_rate=MAX_LEARNING_RATE, rng=0)
    assert np.all(np.isfinite(result.histogram)) and result.histogram.sum() > 0


@pytest.mark.parametrize("composition", ["zcdp", "advanced"])
def test_an_uncertified_index_needs_the_opt_in_and_is_recorded_without_guarantee(composition):
    pytest.importorskip("faiss")
    from fastmwem.mechanisms import Uncertified
    from fastmwem.mechanisms.lazy import UncertifiedOracleWarning

    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 50, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    arguments = {"epsilon": 1.0, "delta": 1e-6, "rounds": 3, "composition": composition,
                 "selection": "lazy", "index": "faiss:HNSW8", "total": 50}
    kind = "zcdp" if composition == "zcdp" else "basic"
    refused = Accountant(epsilon=1.0, delta=1e-6, composition=kind)
    with pytest.raises(ValueError, match="allow_uncertified"):
        pmw_offline(dataset, workload, accountant=refused, **arguments)
    assert refused.ledger == ()
    accountant = Accountant(epsilon=1.0, delta=1e-6, composition=kind)
    with pytest.warns(UncertifiedOracleWarning):
        pmw_offline(dataset, workload, accountant=accountant, allow_uncertified=True,
            rng=np.random.default_rng(9), **arguments)
    assert all("NO privacy guarantee" in e.label for e in accountant.ledger)
    if composition == "zcdp":
        assert all(isinstance(e.event, Uncertified) for e in accountant.ledger)


@pytest.mark.parametrize("options, error", [
    ({"selection": "exponential", "allow_uncertified": True}, ValueError),
    ({"selection": "lazy", "allow_uncertified": "yes"}, TypeError),
])
def test_a_misplaced_or_malformed_opt_in_is_refused(options, error):
    with pytest.raises(error, match="allow_uncertified"):
        OfflinePMWConfig(epsilon=1.0, delta=1e-6, **options)
