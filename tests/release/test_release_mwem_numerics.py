"""MWEM numerics: tiny epsilons, huge noisy measurements, bounded update steps, early stopping."""

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, MWState, mwem
from fastmwem.workloads import Marginals, MatrixWorkload, Parities

DOMAIN = Domain([f"x{i}" for i in range(6)], [2] * 6)


def uniform_records(n=500, seed=0):
    return Dataset(np.random.default_rng(seed).integers(0, 2, (n, len(DOMAIN))), DOMAIN)


def assert_valid(result):
    assert np.all(np.isfinite(result.histogram)) and np.all(result.histogram >= 0)
    assert np.isclose(result.distribution.sum(), 1.0)
    assert 1.0 <= result.total <= 2.0**53


# Before the fix 12 or 13 of these 30 seeds ended with "log_factors must be finite" at each
# epsilon (after the whole budget was charged).
@pytest.mark.parametrize("epsilon", [1e-2, 1e-3, 1e-6])
@pytest.mark.parametrize("seed", range(30))
def test_small_epsilon_never_fails_after_the_charge(epsilon, seed):
    ds = uniform_records()
    result = mwem(ds, Marginals.all_kway(DOMAIN, 3), epsilon=epsilon, rounds=6, rng=seed)
    assert_valid(result)


@pytest.mark.parametrize("options", [
    {"measure": "query"},
    {"init": "noisy-histogram"},
    {"output": "average"},
    {"selection": "permute-and-flip"},
])
@pytest.mark.parametrize("epsilon", [1e-3, 1e-6])
def test_small_epsilon_with_other_options(options, epsilon):
    for seed in range(5):
        assert_valid(mwem(uniform_records(), Marginals.all_kway(DOMAIN, 2), epsilon=epsilon,
                          rounds=4, rng=seed, **options))


def test_parities_at_tiny_epsilon():
    """Signed queries: measurements are clipped to [-n, n], not [0, n]."""
    w = Parities.all_kway(DOMAIN, 2)
    for seed in range(10):
        assert_valid(mwem(uniform_records(), w, epsilon=1e-6, rounds=5, rng=seed))


@pytest.mark.parametrize("measured", [1e300, -1e300, 1e15, -1e15])
def test_group_update_stays_finite_for_huge_measurements(measured):
    w = Marginals.all_kway(DOMAIN, 2)
    state = MWState.uniform(DOMAIN, 100.0)
    values = np.full(w.group_sizes()[0], measured)
    values[0] = -measured
    for _ in range(50):
        state.update_group(w, 0, values)
    assert np.all(np.isfinite(state.distribution)) and np.isclose(state.distribution.sum(), 1)


def test_measurements_are_clipped_to_what_a_histogram_can_answer():
    """A measurement beyond the total acts as the total itself (the feasible maximum)."""
    w = Marginals.all_kway(DOMAIN, 1)
    huge, clipped = MWState.uniform(DOMAIN, 100.0), MWState.uniform(DOMAIN, 100.0)
    huge.update_group(w, 0, np.array([1e9, -1e9]))
    clipped.update_group(w, 0, np.array([100.0, 0.0]))
    np.testing.assert_array_equal(huge.distribution, clipped.distribution)


def test_large_steps_are_split_into_equal_sub_steps():
    """A group of 4000 queries sharing cell 0: its exponent (about 1000) overflows one exp."""
    rng = np.random.default_rng(3)
    matrix = (rng.random((4000, DOMAIN.size)) < 0.5).astype(float)
    matrix[:, 0] = 1.0
    w = MatrixWorkload(DOMAIN, matrix, groups=[0, 4000])
    start = rng.random(DOMAIN.size)
    state = MWState(DOMAIN, start, 10.0)
    measured = np.full(4000, 10.0)  # every query measured at the total
    p = start / start.sum()
    exponent = matrix.T @ ((1.0 - matrix @ p) / 2)
    assert exponent.max() > 800  # exp() of it is inf in float64
    expected = p * np.exp(exponent - exponent.max())
    state.update_group(w, 0, measured)
    np.testing.assert_allclose(state.distribution, expected / expected.sum(), rtol=1e-9,
                               atol=1e-300)


def test_updates_scale_queries_to_unit_sensitivity():
    """Doubling every query (and its measurement) leaves the update unchanged."""
    w1 = MatrixWorkload(DOMAIN, Marginals.all_kway(DOMAIN, 1).dense())
    w2 = MatrixWorkload(DOMAIN, 2 * w1.dense())
    a, b = MWState.uniform(DOMAIN, 50.0), MWState.uniform(DOMAIN, 50.0)
    a.update_query(w1, 3, 40.0)
    b.update_query(w2, 3, 80.0)
    np.testing.assert_allclose(a.distribution, b.distribution, rtol=1e-14)


def test_noisy_histogram_start_is_clipped_to_the_total():
    noisy = np.full(DOMAIN.size, 1e307)
    noisy[0] = 1e308
    state = MWState.from_noisy_histogram(DOMAIN, noisy, 50.0, 0.1)
    assert np.all(np.isfinite(state.distribution))
    assert np.isclose(state.distribution.sum(), 1)


# -- early stopping of the reuse passes ---------------------------------------------------------
def test_reuse_passes_stop_once_the_distribution_stops_moving():
    """With a tolerance no pass can beat, every round runs exactly one pass."""
    ds, w = uniform_records(), Marginals.all_kway(DOMAIN, 2)
    stopped = mwem(ds, w, epsilon=1.0, rounds=5, rng=4, reuse_passes=30, reuse_tolerance=10.0)
    one = mwem(ds, w, epsilon=1.0, rounds=5, rng=4, reuse_passes=1, reuse_tolerance=0.0)
    np.testing.assert_array_equal(stopped.histogram, one.histogram)
    full = mwem(ds, w, epsilon=1.0, rounds=5, rng=4, reuse_passes=30, reuse_tolerance=0.0)
    assert not np.array_equal(full.histogram, one.histogram)


def test_reuse_tolerance_stops_non_partition_workloads_too():
    ds, w = uniform_records(), Parities.all_kway(DOMAIN, 2)
    stopped = mwem(ds, w, epsilon=1.0, rounds=4, rng=1, reuse_passes=30, reuse_tolerance=10.0)
    one = mwem(ds, w, epsilon=1.0, rounds=4, rng=1, reuse_passes=1, reuse_tolerance=0.0)
    np.testing.assert_array_equal(stopped.histogram, one.histogram)


@pytest.mark.parametrize("value, error", [
    (-1e-3, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
    ("0.1", TypeError), (True, TypeError),
])
def test_reuse_tolerance_is_validated(value, error):
    with pytest.raises(error, match="reuse_tolerance"):
        MWEMConfig(epsilon=1.0, reuse_tolerance=value)


def test_reuse_passes_are_bounded():
    """A million passes per round used to run with no end in sight."""
    with pytest.raises(ValueError, match="reuse_passes must be <= 1000"):
        MWEMConfig(epsilon=1.0, reuse_passes=1_000_000)
    MWEMConfig(epsilon=1.0, reuse_passes=1000)
