"""A seeded MWEM run warns, and its report says it is not private (without holding the seed)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain, PrivacyLeakWarning
from fastmwem.mechanisms.seeding import SeededRunWarning
from fastmwem.release import mwem
from fastmwem.workloads import Marginals

SEED = 918273645


@pytest.fixture(scope="module")
def problem():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rng = np.random.default_rng(1)
    records = np.column_stack([rng.integers(0, s, 500) for s in domain.shape])
    dataset = Dataset(records, domain)
    return dataset, Marginals.all_kway(domain, 2)


def test_integer_seed_warns_and_marks_the_result_not_private(problem):
    dataset, workload = problem
    with pytest.warns(PrivacyLeakWarning, match="integer seed") as record:
        result = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=SEED)
    assert [w.category for w in record] == [SeededRunWarning]
    assert record[0].filename == __file__
    assert result.seeded is True
    report = result.report()
    assert report["private"] is False
    assert report["not_private_because"] == ["seeded"]
    assert str(SEED) not in json.dumps(report)
    assert str(SEED) not in str(record[0].message)


@pytest.mark.parametrize("rng", [None, "generator"])
def test_a_generator_or_os_entropy_is_private_and_silent(problem, rng):
    dataset, workload = problem
    generator = np.random.default_rng(SEED) if rng == "generator" else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        result = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=generator)
    assert result.seeded is False
    assert result.report()["private"] is True
    assert result.report()["not_private_because"] == []


def test_seeded_result_is_otherwise_the_same_run(problem):
    dataset, workload = problem
    with pytest.warns(SeededRunWarning):
        seeded = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=4)
    plain = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(seeded.histogram, plain.histogram)
    assert seeded.selected == plain.selected
    assert seeded.ledger == plain.ledger
