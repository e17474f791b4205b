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
