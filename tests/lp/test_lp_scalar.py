"""Scalar-private LPs, S1/S2 (docs/lp.md, Tests 1, 2, 3, 7 and 10).

Statistical tests state their level: each chi-square test rejects a correct law with probability
``ALPHA``; each power check shows the same counts reject a law that is slightly off.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.lp import WarmStartIndex, scalar_alpha, scalar_feasibility
from fastmwem.lp.oracles import scalar_oracle
from fastmwem.lp.scalar import ScalarRows, objective_rows, run_primal, scalar_selector
from fastmwem.mechanisms import ExponentialMechanism
from fastmwem.testing import chi_square_pvalue
from tests.lp._problems import draw_counts, simplex_lp

ALPHA = 1e-3
EPS0, SENS = 1.0, 0.01


def _small_problem(seed: int = 0, m: int = 50, d: int = 5):
    rng = np.random.default_rng(seed)
    A, b, _ = simplex_lp(rng, m, d)
    x = rng.dirichlet(np.ones(d) * 3)
    return A, b, x, rng


def _law(rows: ScalarRows, x: np.ndarray, epsilon: float = EPS0) -> np.ndarray:
    return ExponentialMechanism(epsilon=epsilon, sensitivity=SENS).probabilities(rows.scores(x))


def _check_law(select, rows, x, draws, seed):
    counts = draw_counts(select, x, rows.m + rows.E.shape[0], draws, seed)
    law = _law(rows, x)
    p_value = chi_square_pvalue(counts, law)
    assert p_value > ALPHA, f"p = {p_value:.2e}"
    # power: the same counts reject the law of a mechanism 25% off in epsilon
    assert chi_square_pvalue(counts, _law(rows, x, 1.25 * EPS0)) < ALPHA


def _lazy(spec: str, A: np.ndarray, b: np.ndarray):
    """The lazy selection over ``spec`` (the warm index with its cache on from the start)."""
    rows = objective_rows(A, b, None, None)
    oracle = (WarmStartIndex(A, -b, brute_force_below=0, region=20) if spec == "warm"
              else scalar_oracle(A, b, spec))
    return scalar_selector(rows, epsilon0=EPS0, sensitivity=SENS, selection="lazy",
                           oracle=oracle), rows


@pytest.mark.parametrize("spec", ["flat", "warm"])
def test_lazy_selection_has_the_exponential_mechanism_law(spec):
    """docs/lp.md Test 1 (m = 50, k = 8): the lazy selection over an exact oracle is the EM."""
    A, b, x, _ = _small_problem()
    _check_law(*_lazy(spec, A, b), x, 8_000, seed=1)


def test_lazy_selection_with_the_objective_row_has_the_law():
    A, b, x, rng = _small_problem(1)
    c = rng.random(A.shape[1])
    rows = objective_rows(A, b, c, 0.45)
    for oracle in (scalar_oracle(A, b, "warm"), scalar_oracle(A, b, "flat", objective=c)):
        select = scalar_selector(rows, epsilon0=EPS0, sensitivity=SENS, selection="lazy",
                                 oracle=oracle, target=0.45)
        _check_law(select, rows, x, 5_000, seed=2)


def test_warm_cache_keeps_the_law_between_drifting_queries():
    """Queries alternate between two nearby iterates and a far one, so searches reuse the
    cache, rescan the region and rescan everything; each query's draws follow its own EM law."""
    A, b, x, rng = _small_problem(2, m=300)
    near = x * np.exp(rng.normal(size=x.size) * 0.02)
    queries = [x, near / near.sum(), rng.dirichlet(np.ones(x.size))]
    rows = objective_rows(A, b, None, None)
    oracle = WarmStartIndex(A, -b, brute_force_below=0, region=60)
    select = scalar_selector(rows, epsilon0=EPS0, sensitivity=SENS, selection="lazy",
                             oracle=oracle)
    generator = np.random.default_rng(3)
    counts = np.zeros((3, rows.m), dtype=np.int64)
    for _ in range(2000):
        for q, query in enumerate(queries):
            counts[q, select(query, generator)] += 1
    assert oracle.rescans > 100  # the far query forces full rescans throughout
    for q, query in enumerate(queries):
        assert chi_square_pvalue(counts[q], _law(rows, query)) > ALPHA / 3
        assert chi_square_pvalue(counts[q], _law(rows, query, 1.25 * EPS0)) < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["flat", "warm"])
def test_lazy_selection_law_many_draws(spec):
    A, b, x, _ = _small_problem(4)
    _check_law(*_lazy(spec, A, b), x, 200_000, seed=5)


def _argmax(rows: ScalarRows):
    return lambda x, g: int(np.argmax(rows.scores(x)))


def test_non_private_convergence_bound():
    """docs/lp.md Test 2: with the exact argmax (epsilon0 = infinity) the average iterate's
    largest violation is at most 2 width sqrt(ln d / T), and shrinks with T."""
    rng = np.random.default_rng(6)
    A, b, _ = simplex_lp(rng, 2000, 50)
    rows = objective_rows(A, b, None, None)
    width = 1 + b.max()
    worst = {}
    for rounds in (100, 1000):
        x, _ = run_primal(rows, _argmax(rows), rounds=rounds, width=width, generator=rng)
        worst[rounds] = float((A @ x - b).max())
        assert worst[rounds] <= 2 * width * np.sqrt(np.log(50) / rounds)
        assert abs(x.sum() - 1) < 1e-12 and x.min() >= 0
    assert worst[1000] < worst[100]
    assert worst[100] < 0.05  # far inside the bound (a reference run measured 0.011)


def test_neighbours_share_iterates_and_scores_move_by_at_most_the_sensitivity():
    """docs/lp.md Test 7 (S1): given the same history the iterates do not depend on b, so every
    score moves by at most |b - b'|_inf."""
    rng = np.random.default_rng(7)
    A, b, _ = simplex_lp(rng, 200, 8)
    history = rng.integers(0, 200, size=60)
    for _ in range(20):
        b2 = b + rng.uniform(-SENS, SENS, size=b.size) * rng.choice([0.0, 1.0], size=b.size)
        b2[rng.integers(200)] = b[0] - SENS  # extremes too
        b2 = np.clip(b2, b - SENS, b + SENS)
        iterates = []
        for bb in (b, b2):
            rows = objective_rows(A, bb, None, None)
            steps = iter(history)
            xs = []

            def replay(x, g, xs=xs, steps=steps):
                xs.append(x)
                return int(next(steps))
            run_primal(rows, replay, rounds=60, width=2.0, generator=rng)
            iterates.append(xs)
        for x1, x2 in zip(*iterates):
            np.testing.assert_allclose(x1, x2, rtol=1e-12, atol=1e-15)
            diff = (A @ x1 - b) - (A @ x1 - b2)
            assert np.abs(diff).max() <= SENS * (1 + 1e-12)


def test_sign_wrapper_gives_the_same_solution_and_law():
    """docs/lp.md Test 10: rows given as A_lb x >= b_lb run as (-A_lb, -b_lb): the same run
    seed for seed, and the round law is the EM on the violations b_lb - A_lb x."""
    rng = np.random.default_rng(8)
    A, b, _ = simplex_lp(rng, 60, 5)
    A_ge, b_ge = -A, -b  # the same feasible set stated as A_ge x >= b_ge
    kw = dict(epsilon=2.0, delta=1e-6, sensitivity=SENS, width=2.0, rounds=40)
    as_le = scalar_feasibility(A, b, rng=9, **kw)
    as_ge = scalar_feasibility(None, None, A_lb=A_ge, b_lb=b_ge, rng=9, **kw)
    np.testing.assert_array_equal(as_le.x, as_ge.x)
    assert [r.selected for r in as_le.trace] == [r.selected for r in as_ge.trace]
    x = rng.dirichlet(np.ones(5))
    rows = objective_rows(-A_ge, -b_ge, None, None)
    law = ExponentialMechanism(epsilon=EPS0, sensitivity=SENS).probabilities(b_ge - A_ge @ x)
    select = scalar_selector(rows, epsilon0=EPS0, sensitivity=SENS, selection="exponential")
    counts = draw_counts(select, x, 60, 10_000, seed=10)
    assert chi_square_pvalue(counts, law) > ALPHA


def test_alpha_formula():
    # the regret term is 0.084 at T = 1000 (width 0.672 on an m = 2000, d = 50 instance), and with
    # epsilon0 = 50, sensitivity 0.01 the whole bound is 0.091 (m = 2000)
    assert 2 * 0.672 * np.sqrt(np.log(50) / 1000) == pytest.approx(0.084, abs=1e-3)
    assert scalar_alpha(0.672, 50, 2000, 1000, 0.01, 50.0, 0.05) == pytest.approx(0.091, abs=1e-3)


@pytest.mark.slow
def test_private_utility_over_200_seeds():
    """docs/lp.md Test 3: over 200 seeds, the fraction of runs whose largest violation exceeds the
    alpha of s.1 is at most beta (binomial test at level 1e-3 against beta = 0.05)."""
    from scipy import stats

    rng = np.random.default_rng(11)
    A, b, _ = simplex_lp(rng, 300, 10)
    width, beta, rounds = 1 + float(b.max()), 0.05, 100
    over = 0
    worst = []
    for seed in range(200):
        res = scalar_feasibility(A, b, epsilon=5.0, delta=1e-6, sensitivity=1e-3, width=width,
                                 rounds=rounds, rng=seed)
        alpha = scalar_alpha(width, 10, 300, rounds, 1e-3, res.setup["epsilon0"], beta)
        worst.append(res.max_violation)
        over += res.max_violation > alpha
    assert stats.binomtest(over, 200, beta, alternative="greater").pvalue > 1e-3
    assert np.quantile(worst, 0.95) < 0.1  # and the runs are useful, not just within alpha
