"""Systematic sampling: each record's law is the model's, and counts sit near expectation."""

import itertools

import numpy as np
import pytest
from scipy import stats

from fastmwem.data import Domain
from fastmwem.models.sampling import check_sampling, stratified_uniforms, systematic_counts
from fastmwem.release import FactoredState, MWState
from fastmwem.workloads import Marginals

DOMAIN = Domain(["a", "b", "c", "d", "e"], [2, 3, 2, 4, 3])
SETS = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "e"), ("b", "d")]


def fitted_state(seed: int) -> FactoredState:
    """A junction-tree state with several cliques, fitted to noisy marginals of a random law."""
    rng = np.random.default_rng(seed)
    w = Marginals(DOMAIN, SETS)
    truth = rng.dirichlet(np.full(DOMAIN.size, 0.3)) * 1000.0
    answers = w.answer(truth)
    state = FactoredState(DOMAIN, 1000.0, max_clique_cells=64)
    for _ in range(5):
        for g in range(w.n_groups):
            state.update_group(w, g, answers[w.group_queries(g)])
    return state


def joint_law(state: FactoredState) -> np.ndarray:
    codes = np.array(list(itertools.product(*[range(n) for n in DOMAIN.shape])))
    return np.exp(state.log_probability(codes))


def cells_of(frame) -> np.ndarray:
    return np.ravel_multi_index(tuple(frame[a].to_numpy() for a in DOMAIN.attributes),
                                DOMAIN.shape)


def test_systematic_counts_round_each_expectation_and_sum_to_n():
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 1000):
        p = rng.dirichlet(np.full(50, 0.5))
        counts = systematic_counts(p, n, rng)
        assert counts.sum() == n
        assert np.all(counts >= np.floor(n * p) - 1e-9) and np.all(counts <= np.ceil(n * p))


def test_systematic_counts_are_unbiased():
    """Mean of 4,000 draws within 5 standard errors of ``n p`` in every cell."""
    rng = np.random.default_rng(1)
    p = np.array([0.013, 0.2, 0.337, 0.05, 0.4])
    draws = np.array([systematic_counts(p, 10, rng) for _ in range(4000)])
    se = np.sqrt(draws.var(axis=0) / len(draws)) + 1e-3
    assert np.all(np.abs(draws.mean(axis=0) - 10 * p) < 5 * se)


def test_systematic_counts_refuse_a_distribution_without_mass():
    with pytest.raises(ValueError, match="no mass"):
        systematic_counts(np.zeros(3), 5, np.random.default_rng(0))


@pytest.mark.parametrize("within", [False, True])
def test_stratified_uniforms_are_spread_within_each_stratum(within):
    rng = np.random.default_rng(2)
    strata = rng.integers(0, 4, size=400)
    earlier = (rng.integers(0, 3, size=400),) if within else ()
    u = stratified_uniforms(strata, rng, earlier)
    assert np.all((u >= 0) & (u < 1))
    for s in range(4):
        values = u[strata == s]
        # any interval of length 1/4 holds a quarter of a stratum's values, give or take 2
        counts = np.bincount(np.floor(values * 4).astype(int), minlength=4)
        assert np.all(np.abs(counts - len(values) / 4) <= 2)


def test_sampling_method_names_are_checked():
    assert check_sampling("independent") == "independent"
    with pytest.raises(ValueError, match="sampling must be one of"):
        check_sampling("stratified")


def test_each_systematic_record_has_the_models_law():
    """Rows 0 and 29 of 3,000 systematic samples of 30 records: chi-square against the model's
    joint law, alpha = 0.001 each. Power check: the same draws fail against another fitted
    state's law (p < 1e-6)."""
    state = fitted_state(3)
    law = joint_law(state)
    other = joint_law(fitted_state(4))
    rng = np.random.default_rng(5)
    first, last = [], []
    for _ in range(3000):
        cells = cells_of(state.sample(30, rng))
        first.append(cells[0])
        last.append(cells[-1])
    for draws in (first, last):
        observed = np.bincount(draws, minlength=DOMAIN.size)
        keep = law > 0
        assert observed[~keep].sum() == 0
        expected = law[keep] / law[keep].sum() * len(draws)
        # cells with small expectations pooled so that chi-square applies
        assert stats.chisquare(*pooled(observed[keep], expected)).pvalue > 1e-3
        wrong = other[keep] / other[keep].sum() * len(draws)
        assert stats.chisquare(*pooled(observed[keep], wrong)).pvalue < 1e-6


def pooled(observed: np.ndarray, expected: np.ndarray, least: float = 5.0):
    small = expected < least
    obs, exp = observed[~small], expected[~small]
    if small.any():
        obs, exp = np.append(obs, observed[small].sum()), np.append(exp, expected[small].sum())
    scale = obs.sum() / exp.sum()
    return obs, exp * scale


def test_systematic_records_sit_closer_to_the_model_than_independent_ones():
    """Every clique's marginal from 5,000 systematic records is within 5 records of the model in
    every cell, and their joint L1 error is well below independent records'."""
    state = fitted_state(6)
    law = joint_law(state)
    n = 5000
    rng = np.random.default_rng(7)
    systematic = np.bincount(cells_of(state.sample(n, rng)), minlength=DOMAIN.size)
    independent = np.bincount(cells_of(state.sample(n, rng, systematic=False)),
                              minlength=DOMAIN.size)
    joint = law.reshape(DOMAIN.shape) * n
    counts = systematic.reshape(DOMAIN.shape)
    for clique in state.cliques:
        axes = tuple(DOMAIN.attributes.index(a) for a in clique)
        rest = tuple(a for a in range(len(DOMAIN)) if a not in axes)
        assert np.abs(counts.sum(axis=rest) - joint.sum(axis=rest)).max() <= 5
    assert np.abs(systematic - law * n).sum() < 0.5 * np.abs(independent - law * n).sum()


def test_dense_systematic_records_round_each_cell():
    state = MWState.uniform(DOMAIN, 100.0)
    rng = np.random.default_rng(8)
    state.distribution[:] = rng.dirichlet(np.ones(DOMAIN.size))
    counts = np.bincount(cells_of(state.sample(777, rng)), minlength=DOMAIN.size)
    expected = state.distribution / state.distribution.sum() * 777
    assert counts.sum() == 777
    assert np.all((counts >= np.floor(expected)) & (counts <= np.ceil(expected)))
