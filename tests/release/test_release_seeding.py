"""A seeded MWEM run, or one on the caller's generator, warns, and its report says it is not
private (without holding the seed); only randomness from the operating system is private."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain, PrivacyLeakWarning
from fastmwem.mechanisms.seeding import CallerRNGWarning, SeededRunWarning
from fastmwem.random import secure_rng
from fastmwem.release import mwem, mwem_with_defaults, pmw_offline
from fastmwem.workloads import Marginals

SEED = 918273645


@pytest.fixture(scope="module")
def problem():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rng = np.random.default_rng(1)
    records = np.column_stack([rng.integers(0, s, 500) for s in domain.shape])
    dataset = Dataset(records, domain)
    return dataset, Marginals.all_kway(domain, 2)


def _budget(release):
    return dict(epsilon=1.0, rounds=2, **({"delta": 1e-6} if release is pmw_offline else {}))


@pytest.mark.parametrize("release", [mwem, mwem_with_defaults, pmw_offline])
def test_integer_seed_warns_and_marks_the_result_not_private(problem, release):
    dataset, workload = problem
    with pytest.warns(PrivacyLeakWarning, match="integer seed") as record:
        result = release(dataset, workload, **_budget(release), rng=SEED)
    assert [w.category for w in record] == [SeededRunWarning]
    assert record[0].filename == __file__
    assert result.seeded is True
    report = result.report()
    assert report["private"] is False
    assert report["not_private_because"] == ["seeded"]
    assert str(SEED) not in json.dumps(report)
    assert str(SEED) not in str(record[0].message)


@pytest.mark.parametrize("release", [mwem, mwem_with_defaults, pmw_offline])
@pytest.mark.parametrize("rng", [None, "secure"])
def test_os_entropy_is_private_and_silent(problem, release, rng):
    dataset, workload = problem
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        result = release(dataset, workload, **_budget(release),
                         rng=secure_rng() if rng == "secure" else None)
    assert result.seeded is False and result.rng_provenance == ()
    assert result.report()["private"] is True
    assert result.report()["not_private_because"] == []


def _chacha_with_a_known_key():
    from randomgen import ChaCha

    return np.random.Generator(ChaCha(key=np.arange(4, dtype=np.uint64), counter=0, rounds=20))


@pytest.mark.parametrize("release", [mwem, mwem_with_defaults, pmw_offline])
@pytest.mark.parametrize("make", [lambda: np.random.default_rng(SEED), _chacha_with_a_known_key],
                         ids=["pcg64", "chacha"])
def test_a_callers_generator_warns_once_and_is_not_private(problem, release, make):
    dataset, workload = problem
    with pytest.warns(CallerRNGWarning, match="Generator the caller made") as record:
        result = release(dataset, workload, **_budget(release), rng=make())
    assert [w.category for w in record] == [CallerRNGWarning]  # inner runs: silent
    assert record[0].filename == __file__
    assert result.seeded is False and result.rng_provenance == ("caller_rng",)
    report = result.report()
    assert report["private"] is False and report["not_private_because"] == ["caller_rng"]


def test_seeded_result_is_otherwise_the_same_run(problem):
    dataset, workload = problem
    with pytest.warns(SeededRunWarning):
        seeded = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=4)
    plain = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(seeded.histogram, plain.histogram)
    assert seeded.selected == plain.selected
    assert seeded.ledger == plain.ledger
