"""Fixed-rounds MWEM refines a noisy record count with its measured marginals (post-processing)."""

from __future__ import annotations

import numpy as np

from fastmwem.data import Dataset, Domain
from fastmwem.release import mwem
from fastmwem.workloads import Marginals


def _data(n: int = 2000) -> Dataset:
    rng = np.random.default_rng(0)
    domain = Domain(["a", "b", "c", "d", "e"], [2, 3, 2, 4, 3])  # 10 two-way marginals
    return Dataset(np.column_stack([rng.integers(0, k, n) for k in domain.shape]), domain)


def test_a_noisy_total_moves_towards_the_marginals_sums():
    ds = _data()
    w = Marginals.all_kway(ds.domain, 2)
    # a count released 30% too high, with the noise it had: ten marginals at epsilon 0.5 each
    # sum to about 2000 +- 10, so the refined count lands near the truth
    result = mwem(ds, w, epsilon=5.0, rounds=10, rng=np.random.default_rng(1), total=2600,
                  total_std=300.0)
    assert abs(result.total - 2000) < 30
    assert abs(result.histogram.sum() - result.total) < 1e-6 * result.total


def test_an_exact_total_is_kept():
    ds = _data()
    w = Marginals.all_kway(ds.domain, 2)
    result = mwem(ds, w, epsilon=5.0, rounds=10, rng=np.random.default_rng(1), total=2600)
    assert result.total == 2600


def test_a_count_released_inside_the_run_is_refined():
    ds = _data()
    w = Marginals.all_kway(ds.domain, 2)
    # epsilon 0.5 over 10 rounds: the count (1% of it) has Laplace scale 200, so alone it would
    # miss by more than 150 in about half the runs; the ten marginals' sums (std about 55
    # together) bring every one of five runs within 150
    errors = [abs(mwem(ds, w, epsilon=0.5, rounds=10, rng=np.random.default_rng(s)).total - 2000)
              for s in range(5)]
    assert max(errors) < 150


def test_the_estimate_is_an_inverse_variance_mean_and_never_overflows():
    from fastmwem.release.mwem.rounds import TotalEstimate

    est = TotalEstimate(1000.0, 10.0)  # weight 1/100
    # four cells of std 5: variance 100, the same weight as the count
    assert est.add(np.array([300.0, 300.0, 250.0, 250.0]), 5.0) == 1050.0
    for count, std in ((9e15, 1e-150), (1000.0, 1e-200), (1000.0, 0.0)):
        est = TotalEstimate(count, std)
        value = est.add(np.full(8, count / 8 + 1.0), 1e-160)
        assert np.isfinite(value) and abs(value - count) <= 8.0
