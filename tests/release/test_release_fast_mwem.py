"""Fast-MWEM: MWEM rounds through the lazy exponential mechanism (selection="lazy")."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem import Accountant, mwem
from fastmwem.accounting import BoundedRange
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import workload_error
from fastmwem.mechanisms import ExponentialMechanism
from fastmwem.models.state import MWState
from fastmwem.release.mwem.data_view import PrivateView
from fastmwem.release.selection import LazySelection, ScanSelection
from fastmwem.testing import chi_square_pvalue
from fastmwem.workloads import AllIntervals, Marginals, RandomCountingQueries

ALPHA = 1e-4  # false-positive rate of each law test


def _data(domain: Domain, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(domain.size, 0.3))
    cells = rng.choice(domain.size, size=n, p=weights)
    return Dataset(np.column_stack(np.unravel_index(cells, domain.shape)), domain)


def _prepared(selection, workload, dataset, epsilon, group_mode):
    if group_mode:
        sens = np.asarray(workload.group_sensitivity, dtype=np.float64)
        penalties = np.zeros(workload.n_groups)
    else:
        sens = np.full(workload.n_queries, float(workload.query_sensitivity))
        penalties = np.zeros(workload.n_queries)
    selection.check(workload, epsilon=epsilon, group_mode=group_mode, sensitivities=sens)
    private = PrivateView(dataset, workload, dense=True, groups=np.arange(workload.n_groups))
    return selection.prepare(workload, private, epsilon=epsilon,
                             group_mode=group_mode, sensitivities=sens, penalties=penalties)


def _choose(chooser, workload, distribution, total, available, rng):
    return chooser.choose(MWState(workload.domain, distribution, total), available, rng)


@pytest.mark.parametrize("index", [None, "flat", "bitpacked"])
def test_lazy_round_selects_from_the_exponential_mechanism_law(index):
    """Single-query rounds: the lazy chooser's law is EM over |q(h) - q(n a)|, alpha = 1e-4."""
    domain = Domain(["a", "b"], [4, 4])
    workload = RandomCountingQueries(domain, 40, rng=np.random.default_rng(3))
    dataset = _data(domain, 60, seed=1)
    distribution = np.random.default_rng(2).dirichlet(np.ones(domain.size))
    total = 60.0
    epsilon = 0.4
    available = np.ones(workload.n_queries, dtype=bool)
    available[[0, 5, 17]] = False
    lazy = _prepared(LazySelection(index=index), workload, dataset, epsilon, group_mode=False)
    scores = np.abs(workload.answer(distribution) * total - workload.answer(dataset.histogram()))
    law = ExponentialMechanism(epsilon=epsilon).probabilities(scores[available])
    rng = np.random.default_rng(11)
    draws = [_choose(lazy, workload, distribution, total, available, rng) for _ in range(6000)]
    assert not np.isin(draws, [0, 5, 17]).any()
    ids = np.flatnonzero(available)
    counts = np.array([np.count_nonzero(np.asarray(draws) == i) for i in ids])
    assert chi_square_pvalue(counts, law) > ALPHA
    # power: the same draws are refused against the law at twice the epsilon
    wrong = ExponentialMechanism(epsilon=2 * epsilon).probabilities(scores[available])
    assert chi_square_pvalue(counts, wrong) < ALPHA


def test_lazy_and_scan_rounds_agree_in_law_for_single_queries():
    """With measure="query", the scan chooser and the lazy chooser have the same law."""
    domain = Domain(["a"], [12])
    workload = AllIntervals(domain, "a")
    dataset = _data(domain, 80, seed=4)
    distribution = np.full(domain.size, 1 / domain.size)
    scan = _prepared(ScanSelection(), workload, dataset, 0.5, group_mode=False)
    lazy = _prepared(LazySelection(), workload, dataset, 0.5, group_mode=False)
    rng = np.random.default_rng(5)
    n = 6000
    a = np.bincount([_choose(scan, workload, distribution, 80.0, None, rng) for _ in range(n)],
                    minlength=workload.n_queries)
    b = np.bincount([_choose(lazy, workload, distribution, 80.0, None, rng) for _ in range(n)],
                    minlength=workload.n_queries)
    # two-sample chi-square on the pooled law (cells with a pooled count >= 10)
    keep = (a + b) >= 10
    pooled = (a + b)[keep] / (2 * n)
    assert chi_square_pvalue(b[keep], pooled / pooled.sum()) > ALPHA


def test_fast_mwem_on_marginals_matches_mwem_accuracy():
    domain = Domain([f"x{i}" for i in range(6)], [2] * 6)
    dataset = _data(domain, 2000, seed=6)
    workload = Marginals.all_kway(domain, 2)
    errors = {}
    for selection in ("exponential", "lazy"):
        runs = [mwem(dataset, workload, epsilon=2.0, rounds=10, selection=selection,
                     rng=np.random.default_rng(seed)) for seed in range(3)]
        errors[selection] = np.mean([
            workload_error(dataset.histogram(), r.histogram, workload)["mean_group_l1"] for r in runs])
    assert errors["lazy"] < 2 * errors["exponential"] + 0.02
    assert errors["lazy"] < 0.15


def test_fast_mwem_charges_bounded_range_rounds():
    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 100, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    accountant = Accountant(epsilon=1.0)
    result = mwem(dataset, workload, epsilon=1.0, rounds=4, selection="lazy",
                  rng=np.random.default_rng(9), accountant=accountant)
    selects = [e for e in accountant.ledger if "select (lazy)" in e.label]
    assert len(selects) == 4 and all(isinstance(e.event, BoundedRange) for e in selects)
    assert len(result.selected) == 4 and len(set(result.selected)) == 4


def test_an_uncertified_index_is_refused_before_the_charge():
    pytest.importorskip("faiss")
    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 100, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="no certified gap"):
        mwem(dataset, workload, epsilon=1.0, rounds=2, selection="lazy",
             index="faiss:HNSW8", accountant=accountant)
    assert accountant.ledger == ()


def test_a_mismatched_oracle_is_refused_before_the_charge():
    from fastmwem.indices import make_index

    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 100, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    wrong = make_index("flat", np.ones((29, 16)))
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="29 keys"):
        mwem(dataset, workload, epsilon=1.0, rounds=2, selection="lazy", index=wrong,
             accountant=accountant)
    assert accountant.ledger == ()


def test_an_uncertified_index_runs_with_the_opt_in_and_the_ledger_says_no_guarantee():
    pytest.importorskip("faiss")
    from fastmwem.mechanisms import Uncertified
    from fastmwem.mechanisms.lazy import UncertifiedOracleWarning

    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 100, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    accountant = Accountant(epsilon=1.0)
    with pytest.warns(UncertifiedOracleWarning):
        result = mwem(dataset, workload, epsilon=1.0, rounds=3, selection="lazy",
                      index="faiss:HNSW8", allow_uncertified=True, accountant=accountant,
                      rng=np.random.default_rng(9))
    selects = [e.event for e in accountant.ledger if "select (lazy)" in e.label]
    assert len(selects) == 3 and all(isinstance(e, Uncertified) for e in selects)
    assert not any(e.exact_guarantee for e in selects)
    assert len(result.selected) == 3


def test_the_opt_in_over_an_exact_oracle_keeps_the_exact_record():
    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 100, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    accountant = Accountant(epsilon=1.0)
    mwem(dataset, workload, epsilon=1.0, rounds=2, selection="lazy", index="flat",
         allow_uncertified=True, accountant=accountant, rng=np.random.default_rng(9))
    selects = [e.event for e in accountant.ledger if "select (lazy)" in e.label]
    assert len(selects) == 2 and all(type(e) is BoundedRange for e in selects)


@pytest.mark.parametrize("options, error, message", [
    ({"selection": "exponential", "allow_uncertified": True}, ValueError, "allow_uncertified"),
    ({"selection": "lazy", "allow_uncertified": 1}, TypeError, "allow_uncertified"),
])
def test_a_misplaced_or_malformed_opt_in_is_refused_before_the_charge(options, error, message):
    domain = Domain(["a", "b"], [4, 4])
    dataset = _data(domain, 100, seed=7)
    workload = RandomCountingQueries(domain, 30, rng=np.random.default_rng(8))
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(error, match=message):
        mwem(dataset, workload, epsilon=1.0, rounds=2, accountant=accountant, **options)
    assert accountant.ledger == ()


def test_lazy_rounds_read_the_group_offsets_once_not_per_round():
    # Default offsets are an array of m + 1 entries built per access (3 ms at m = 10**6): a
    # round that read them twice spent a fifth of its time there.
    class Counted(RandomCountingQueries):
        reads = 0

        @property
        def group_offsets(self):
            Counted.reads += 1
            return np.arange(self.n_queries + 1)

    domain = Domain(["a", "b"], [4, 4])
    workload = Counted(domain, 40, rng=np.random.default_rng(3))
    dataset = _data(domain, 60, seed=1)
    chooser = _prepared(LazySelection(index="flat"), workload, dataset, 0.5, group_mode=False)
    Counted.reads = 0
    rng = np.random.default_rng(4)
    available = np.ones(workload.n_queries, dtype=bool)
    for _ in range(5):
        choice = _choose(chooser, workload, np.full(domain.size, 1 / 16), 60.0, available, rng)
        available[choice] = False
    assert Counted.reads == 0


def test_one_lazy_selection_rebuilds_its_oracle_for_another_workload():
    domain = Domain(["a", "b"], [4, 4])
    selection = LazySelection(index="flat")
    first = RandomCountingQueries(domain, 20, rng=np.random.default_rng(1))
    second = RandomCountingQueries(domain, 20, rng=np.random.default_rng(2))
    a = selection._oracle(first)
    b = selection._oracle(second)
    assert a is not b
    v = np.arange(16.0)
    np.testing.assert_allclose(b.score(np.arange(20), v), second.answer(v))


def test_an_approximate_index_name_is_refused_before_it_is_built(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the index was built")

    monkeypatch.setattr("fastmwem.release.selection.oracles.workload_oracle", never)
    for name in ("hnswlib", "faiss:HNSW32", "faiss:IVF16,Flat"):
        with pytest.raises(ValueError, match="no certified gap"):
            LazySelection(index=name)
    LazySelection(index="faiss:Flat")  # exact: accepted by name


def test_a_release_builds_its_index_once(monkeypatch):
    """mwem_with_defaults checks, plans and runs several configurations of one selection."""
    from fastmwem.release.selection import oracles as _oracles
    from tests.release._auto import run_with_defaults

    built = []
    real = _oracles.workload_oracle

    def counted(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_oracles, "workload_oracle", counted)
    domain = Domain(["a", "b"], [4, 4])
    workload = RandomCountingQueries(domain, 50, rng=np.random.default_rng(3))
    dataset = _data(domain, 200, seed=4)
    run_with_defaults(dataset, workload, epsilon=1.0, rounds=4, rng=np.random.default_rng(5),
              selection="lazy", index="flat")
    assert len(built) == 1
