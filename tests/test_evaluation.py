"""Non-private evaluation: errors from answers, relative entropy from records."""

import numpy as np
import pytest

from fastmwem.data import Domain
from fastmwem.evaluation import (
    answer_error,
    relative_entropy,
    relative_entropy_of_records,
    workload_error,
)
from fastmwem.workloads import Marginals

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])


def test_answer_error_is_workload_error_on_answers():
    rng = np.random.default_rng(0)
    w = Marginals.all_kway(DOMAIN, 2)
    true, synthetic = rng.random(DOMAIN.size), rng.random(DOMAIN.size)
    expected = workload_error(true, synthetic, w)
    got = answer_error(w.answer(true / true.sum()), w.answer(synthetic / synthetic.sum()), w)
    assert got == pytest.approx(expected)
    with pytest.raises(ValueError, match="answers must have shape"):
        answer_error(np.zeros(3), np.zeros(3), w)


def test_relative_entropy_of_records_equals_the_histogram_one():
    rng = np.random.default_rng(1)
    records = rng.integers(0, [2, 3, 2], size=(500, 3))
    synthetic = rng.random(DOMAIN.size) + 0.1
    synthetic /= synthetic.sum()
    counts = np.bincount(np.ravel_multi_index(records.T, DOMAIN.shape), minlength=DOMAIN.size)

    def log_probability(rows):
        return np.log(synthetic[np.ravel_multi_index(rows.T, DOMAIN.shape)])

    assert relative_entropy_of_records(records, log_probability) == pytest.approx(
        relative_entropy(counts.astype(float), synthetic))
    assert relative_entropy_of_records(records, lambda rows: np.full(len(rows), -np.inf)) == np.inf


def test_record_counts_answer_like_the_histogram_and_refuse_huge_dense_domains():
    from types import SimpleNamespace

    from fastmwem.evaluation import RecordCounts
    from fastmwem.workloads import RandomCountingQueries

    domain = Domain(["a", "b", "c"], [2, 3, 4])
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, k, 200) for k in domain.shape], axis=1)
    histogram = np.bincount(np.ravel_multi_index(tuple(codes.T), domain.shape),
                            minlength=domain.size).astype(float)
    for workload in (Marginals.all_kway(domain, 2), RandomCountingQueries(domain, 7, rng=1)):
        counts = RecordCounts(workload)
        counts.add(codes[:120])
        counts.add(codes[120:])  # block by block
        np.testing.assert_allclose(counts.answers(), workload.answer(histogram) / 200)
    # a workload without marginal structure (no group_attributes) on a domain past the limit
    wide = SimpleNamespace(domain=Domain([f"x{i}" for i in range(30)], [2] * 30), n_groups=3)
    with pytest.raises(ValueError, match="dense limit"):
        RecordCounts(wide)
