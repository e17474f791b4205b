"""The first-round noise test: its law under no signal, its power, and MWEM's noise_test option."""

import numpy as np
import pytest
from scipy import stats

from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, MWState, mwem
from fastmwem.release.mwem.rounds import noise_threshold, synthetic_answers, within_noise
from fastmwem.workloads import Marginals


def uniform_table(n=500, d=7, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset(rng.integers(0, 2, (n, d)), Domain([f"c{i}" for i in range(d)], [2] * d))


def correlated_table(n=3000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    latent = rng.random(n) < 0.3
    cols = [(rng.random(n) < np.where(latent, 0.9, 0.1)).astype(np.int64) for _ in range(d)]
    return Dataset(np.stack(cols, axis=1), Domain([f"x{i}" for i in range(d)], [2] * d))


@pytest.mark.parametrize("cells", [1, 8, 64])
def test_threshold_is_the_gamma_quantile(cells):
    assert noise_threshold(cells, 3.0, 0.01) == pytest.approx(
        stats.gamma.ppf(0.99, cells, scale=3.0), rel=1e-9)


@pytest.mark.parametrize("cells", [1, 8, 27])
def test_pure_noise_is_flagged_as_signal_at_rate_alpha(cells):
    # Under no signal the test says "signal" with probability alpha = 0.05 exactly. With 4000
    # trials, a two-sided binomial test at level 1e-4 keeps false alarms rare; the power check
    # below shows that the same test separates a real signal.
    rng = np.random.default_rng(cells)
    trials, alpha, scale = 4000, 0.05, 2.0
    synthetic = rng.random(cells) * 100
    flagged = sum(not within_noise(synthetic + rng.laplace(0, scale, cells), synthetic, scale,
                                   alpha) for _ in range(trials))
    assert stats.binomtest(flagged, trials, alpha).pvalue > 1e-4
    shifted = synthetic + 6 * scale  # a signal of six noise scales per cell
    power = sum(not within_noise(shifted + rng.laplace(0, scale, cells), synthetic, scale,
                                 alpha) for _ in range(400))
    assert power > 300


def test_synthetic_answers_of_a_group_and_of_one_query():
    ds = correlated_table(d=3)
    w = Marginals.all_kway(ds.domain, 2)
    state = MWState.uniform(ds.domain, 800.0)
    group = w.group_queries(1)
    np.testing.assert_allclose(synthetic_answers(state, w, group, w.group_offsets),
                               np.full(4, 200.0))
    one = slice(group.start + 2, group.start + 3)
    np.testing.assert_allclose(synthetic_answers(state, w, one, w.group_offsets), [200.0])


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan")])
def test_noise_test_must_be_a_probability(bad):
    with pytest.raises(ValueError, match="noise_test"):
        MWEMConfig(epsilon=1.0, noise_test=bad)


def test_noise_test_keeps_the_start_on_a_table_without_structure():
    # Uniform records, 500 of them: at epsilon 1 with 9 rounds each measurement is mostly noise.
    ds = uniform_table()
    w = Marginals.all_kway(ds.domain, 3)
    for seed in range(3):
        result = mwem(ds, w, epsilon=1.0, rounds=9, rng=np.random.default_rng(seed),
                      noise_test=0.01)
        assert result.updates_skipped
        np.testing.assert_allclose(result.histogram, result.total / ds.domain.size)
        assert len(result.measurements) == 9  # the rounds still ran and were released
        assert result.report()["updates_skipped"] is True


def test_noise_test_lets_a_structured_table_fit():
    ds = correlated_table()
    w = Marginals.all_kway(ds.domain, 3)
    plain = mwem(ds, w, epsilon=1.0, rounds=5, rng=np.random.default_rng(4))
    tested = mwem(ds, w, epsilon=1.0, rounds=5, rng=np.random.default_rng(4), noise_test=0.01)
    assert not tested.updates_skipped and not plain.updates_skipped
    np.testing.assert_array_equal(plain.histogram, tested.histogram)  # same draws, same fit
