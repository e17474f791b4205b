"""End-to-end empirical-epsilon audit of MWEM, slow tier."""

import importlib

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.mechanisms import Laplace
from fastmwem.release import mwem
from fastmwem.testing import clopper_pearson_epsilon_lower_bound

# MWEM's measurements are built in fastmwem.release._privacy (the package re-exports the
# function mwem under the module's own name, so modules are looked up by name).
privacy_module = importlib.import_module("fastmwem.release._privacy")

EPSILON = 2.0
THRESHOLDS = np.array([9.0, 10.5, 12.0])  # fixed in advance: buckets of the first measured cell


def outcome(result):
    """A discrete summary of the release: both selections and a bucket of one measurement."""
    first, second = result.selected
    bucket = int(np.searchsorted(THRESHOLDS, result.measurements[0][0]))
    return (first * 2 + second) * 4 + bucket


def counts(dataset, workload, runs, seed):
    rng = np.random.default_rng(seed)
    out = np.zeros(16, dtype=np.int64)
    for _ in range(runs):
        result = mwem(dataset, workload, epsilon=EPSILON, rounds=2, rng=rng, reuse_passes=1,
                      exclude_measured=False)
        out[outcome(result)] += 1
    return out


def neighbours():
    domain = Domain(["a", "b"], [2, 2])
    base = [[0, 0]] * 10 + [[1, 1]] * 5
    d = Dataset(np.array(base), domain)
    d_prime = Dataset(np.array(base + [[0, 0]]), domain)
    from fastmwem.workloads import Marginals

    return d, d_prime, Marginals.all_kway(domain, 1)


def audit(runs, seed):
    d, d_prime, workload = neighbours()
    a = counts(d, workload, runs, seed)
    b = counts(d_prime, workload, runs, seed + 1)
    alpha = 0.01 / (2 * 16)  # 99% overall, Bonferroni over outcomes and both directions
    return clopper_pearson_epsilon_lower_bound(a, b, runs, runs, alpha)


@pytest.mark.slow
def test_mwem_empirical_epsilon_is_below_the_claim():
    bound = audit(runs=20_000, seed=10)
    assert bound <= EPSILON


@pytest.mark.slow
def test_audit_detects_mwem_without_measurement_noise(monkeypatch):
    class AlmostNoNoise(Laplace):
        @property
        def scale(self):
            return 1e-6

    monkeypatch.setattr(privacy_module, "Laplace", AlmostNoNoise)
    bound = audit(runs=3_000, seed=20)
    assert bound > EPSILON
