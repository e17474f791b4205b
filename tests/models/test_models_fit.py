"""The weighted least-squares fit (fastmwem.models.fit) on dense and junction-tree states."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastmwem.data import Domain
from fastmwem.models import FactoredState, MWState
from fastmwem.models import fit as fit_module
from fastmwem.models.fit import FitMeasurement, FitReport, fit
from fastmwem.release.mwem.rounds import Measurement
from fastmwem.workloads import Marginals, RandomCountingQueries

SMALL = Domain(["a", "b", "c", "d"], [2, 3, 4, 3])
TOTAL = 1000.0

STATES = {
    "dense": lambda d, n: MWState.uniform(d, n),
    "junction-tree": lambda d, n: FactoredState(d, n),
    "product": lambda d, n: FactoredState(d, n, product=True),
}


def _law(domain: Domain, seed: int, alpha: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(domain.size, alpha))


def _exact(workload: Marginals, law: np.ndarray) -> list[FitMeasurement]:
    answers = workload.answer(law) * TOTAL
    return [FitMeasurement.of_group(workload, g, answers[workload.group_queries(g)])
            for g in range(workload.n_groups)]


def _joint(state) -> np.ndarray:
    """The state's distribution over every cell, in C order."""
    if isinstance(state, MWState):
        return state.distribution.copy()
    codes = np.stack(np.unravel_index(np.arange(state.domain.size), state.domain.shape), axis=1)
    return np.exp(state.log_probability(codes))


@pytest.mark.parametrize("kind", sorted(STATES))
def test_noiseless_marginals_are_reproduced_and_the_loss_never_rises(kind):
    w = Marginals.all_kway(SMALL, 2)
    measured = _exact(w, _law(SMALL, 0))
    state = STATES[kind](SMALL, TOTAL)
    report = fit(state, w, measured, tolerance=1e-12, max_iterations=5000)
    assert isinstance(report, FitReport) and report.converged
    history = np.array(report.objectives)
    assert history.size == report.iterations + 1
    assert history[0] > 1e3  # the uniform start is far from the measurements
    assert np.all(np.diff(history) <= 0)
    assert report.objective == history[-1] < 1e-9
    want = np.concatenate([m.values for m in measured])
    got = state.answer(w) * TOTAL
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * TOTAL * 1e-3)


@pytest.mark.parametrize("kind", sorted(STATES))
def test_the_precise_measurement_outweighs_the_noisy_one(kind):
    w = Marginals.all_kway(SMALL, 2)
    g = w.n_groups - 1  # marginal (c, d): 12 cells
    queries = w.group_queries(g)
    precise = w.answer(_law(SMALL, 1))[queries] * TOTAL
    rough = w.answer(_law(SMALL, 2))[queries] * TOTAL
    state = STATES[kind](SMALL, TOTAL)
    report = fit(state, w, [FitMeasurement(queries, precise, 1.0),
                            FitMeasurement(queries, rough, 10.0)], tolerance=1e-13)
    mean = (precise + rough / 100.0) / 1.01  # inverse-variance weighted
    got = state.answer_group(w, g) * TOTAL
    np.testing.assert_allclose(got, mean, rtol=1e-6)
    assert np.abs(got - precise).max() < np.abs(got - (precise + rough) / 2).max() / 10
    least = float(((mean - precise) ** 2).sum() + ((mean - rough) ** 2).sum() / 100.0)
    assert report.objective == pytest.approx(least, rel=1e-6)


def test_single_query_records_of_a_release_are_fitted_by_their_query_ids():
    # A release measuring single queries stores the query id as the record's group.
    d = Domain(["x", "y", "z"], [2, 3, 2])
    w = RandomCountingQueries(d, 40, rng=np.random.default_rng(3))
    law = _law(d, 4)
    answers = w.answer(law) * TOTAL
    chosen = [3, 17, 18, 25, 39, 0, 8]
    records = [Measurement(q, slice(q, q + 1), answers[q:q + 1], std=2.0) for q in chosen]
    state = MWState.uniform(d, TOTAL)
    report = fit(state, w, records, tolerance=0.0, max_iterations=20000)
    assert report.converged
    np.testing.assert_allclose(state.answer(w)[chosen] * TOTAL, answers[chosen], rtol=1e-6)


@pytest.mark.parametrize("kind", ["junction-tree", "product"])
def test_the_factored_fit_agrees_with_the_dense_fit(kind):
    d = Domain(["a", "b", "c", "d", "e"], [2, 3, 2, 3, 2])
    # A cycle: the junction tree triangulates it; the product state merges all into one factor.
    w = Marginals(d, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("a", "e"), ("c",)])
    rng = np.random.default_rng(5)
    answers = w.answer(_law(d, 6, alpha=5.0)) * TOTAL
    measured = [FitMeasurement.of_group(w, g, answers[w.group_queries(g)]
                                        + rng.normal(0, 3.0 + g, w.group_sizes()[g]), 3.0 + g)
                for g in range(w.n_groups)]
    dense, factored = MWState.uniform(d, TOTAL), STATES[kind](d, TOTAL)
    one = fit(dense, w, measured, tolerance=1e-12, max_iterations=5000)
    two = fit(factored, w, measured, tolerance=1e-12, max_iterations=5000)
    assert one.converged and two.converged
    assert two.objective == pytest.approx(one.objective, rel=1e-9)
    # The fitted joints agree to within 1e-7 in L1 (both are the same least-squares optimum).
    assert np.abs(_joint(factored) - _joint(dense)).sum() < 1e-7
    # ... which is not where either started: the noisy cycle is far from uniform.
    assert np.abs(_joint(dense) - 1.0 / d.size).sum() > 0.1


@pytest.mark.parametrize("kind", sorted(STATES))
def test_stops_at_max_iterations_unconverged(kind):
    w = Marginals.all_kway(SMALL, 2)
    measured = _exact(w, _law(SMALL, 7))
    state = STATES[kind](SMALL, TOTAL)
    report = fit(state, w, measured, tolerance=1e-12, max_iterations=3)
    assert report.iterations == 3 and not report.converged
    assert len(report.objectives) == 4 and report.objective == report.objectives[-1]
    before = _joint(state)
    none = fit(state, w, measured, max_iterations=0)
    assert none.iterations == 0 and not none.converged
    assert none.objective == pytest.approx(report.objective, rel=1e-12)
    np.testing.assert_allclose(_joint(state), before, rtol=1e-12)


@pytest.mark.parametrize("kind", sorted(STATES))
def test_a_state_already_at_the_optimum_stays_there(kind):
    # Two measurements of (a, b) whose mean is the uniform state's marginal: the loss is their
    # spread, which no distribution lowers, and the gradient vanishes (to rounding).
    w = Marginals.all_kway(SMALL, 2)
    q = w.group_queries(0)
    spread = np.array([1.0, -1.0, 2.0, -2.0, 3.0, -3.0])
    state = STATES[kind](SMALL, 1200.0)
    before = _joint(state)
    report = fit(state, w, [FitMeasurement(q, 200.0 + spread, 1.0),
                            FitMeasurement(q, 200.0 - spread, 1.0)], tolerance=0.0)
    assert report.converged and report.iterations <= 2
    assert report.objective == pytest.approx(2 * float((spread ** 2).sum()), rel=1e-9)
    np.testing.assert_allclose(_joint(state), before, rtol=1e-9)


def test_nothing_to_fit_changes_nothing():
    state = MWState.uniform(SMALL, TOTAL)
    before = state.distribution.copy()
    report = fit(state, Marginals.all_kway(SMALL, 2), [])
    assert report == FitReport(0, 0.0, True, (0.0,))
    np.testing.assert_array_equal(state.distribution, before)


def _bad_cases(w: Marginals):
    good = w.answer(_law(SMALL, 8))[w.group_queries(0)] * TOTAL
    q = w.group_queries(0)
    return {
        "negative std": ([FitMeasurement(q, good, -1.0)], "measurement 0: std must be"),
        "nan std": ([FitMeasurement(q, good, float("nan"))], "measurement 0: std must be"),
        "zero std": ([FitMeasurement(q, good, 0.0)], "std must be a finite number > 0"),
        "infinite std": ([FitMeasurement(q, good, float("inf"))], "std must be"),
        "too few values": ([FitMeasurement(q, good, 1.0), FitMeasurement(q, good[:-1], 1.0)],
                           r"measurement 1: values must be .* \(6\), got shape \(5,\)"),
        "2-d values": ([FitMeasurement(q, good.reshape(2, 3), 1.0)], "values must be a flat"),
        "nan value": ([FitMeasurement(q, np.where(good > 0, np.nan, good), 1.0)],
                      "values must be finite"),
        "two groups": ([FitMeasurement(slice(q.start, q.stop + 1), np.r_[good, 1.0], 1.0)],
                       "span more than one group"),
        "beyond the workload": ([FitMeasurement(slice(w.n_queries, w.n_queries + 1),
                                                np.ones(1), 1.0)], "queries must be a slice"),
        "strided": ([FitMeasurement(slice(0, 6, 2), good[:3], 1.0)], "queries must be a slice"),
    }


@pytest.mark.parametrize("case", sorted(_bad_cases(Marginals.all_kway(SMALL, 2))))
@pytest.mark.parametrize("kind", ["dense", "junction-tree"])
def test_bad_measurements_are_refused_before_the_state_changes(case, kind):
    w = Marginals.all_kway(SMALL, 2)
    measured, message = _bad_cases(w)[case]
    state = STATES[kind](SMALL, TOTAL)
    before = _joint(state)
    cliques = getattr(state, "cliques", None)
    with pytest.raises(ValueError, match=message) as caught:
        fit(state, w, measured)
    assert "nan" not in str(caught.value) or "std" in case  # never a measured value
    np.testing.assert_array_equal(_joint(state), before)
    assert getattr(state, "cliques", None) == cliques


@pytest.mark.parametrize("tolerance", [-1e-3, float("nan"), float("inf")])
def test_bad_tolerance_is_refused(tolerance):
    with pytest.raises(ValueError, match="tolerance must be"):
        fit(MWState.uniform(SMALL, TOTAL), Marginals.all_kway(SMALL, 2), [],
            tolerance=tolerance)


def test_a_group_above_the_clique_cap_is_refused_before_any_change():
    d = Domain([f"x{i}" for i in range(6)], [4] * 6)
    w = Marginals(d, [("x0", "x1"), ("x2", "x3", "x4", "x5")])
    state = FactoredState(d, TOTAL, max_clique_cells=64)
    answers = w.answer(_law(d, 9)) * TOTAL
    measured = [FitMeasurement.of_group(w, g, answers[w.group_queries(g)]) for g in range(2)]
    with pytest.raises(ValueError, match="group 1 would need a clique above max_clique_cells"):
        fit(state, w, measured)
    assert state.cliques == [(a,) for a in d.attributes]


def test_of_marginal_finds_the_group_by_its_axes():
    w = Marginals.all_kway(SMALL, 2)
    values = np.arange(12.0)
    m = FitMeasurement.of_marginal(w, (2, 3), values, 2.0)
    assert m.queries == w.group_queries(w.n_groups - 1) and m.std == 2.0
    with pytest.raises(ValueError, match="exactly one group"):
        FitMeasurement.of_marginal(w, (0, 1, 2), values)


def test_answers_of_every_measured_cell_are_fitted_on_a_larger_noisy_workload():
    # Many overlapping 3-way marginals, noisy: the fit's loss is at most the chi-square level
    # (the true law's loss), as the least-squares optimum cannot do worse than the truth.
    d = Domain([f"x{i}" for i in range(7)], [2, 3, 2, 2, 3, 2, 2])
    w = Marginals(d, list(itertools.combinations(d.attributes, 3))[::3])
    law = _law(d, 10, alpha=2.0)
    rng = np.random.default_rng(11)
    answers = w.answer(law) * TOTAL
    measured = [FitMeasurement.of_group(w, g, answers[w.group_queries(g)]
                                        + rng.normal(0, 4.0, w.group_sizes()[g]), 4.0)
                for g in range(w.n_groups)]
    truth = sum(float(((m.values - answers[m.queries]) ** 2).sum()) / 16.0 for m in measured)
    state = MWState.uniform(d, TOTAL)
    report = fit(state, w, measured, tolerance=1e-10)
    assert report.converged and report.objective <= truth


def _noisy(workload: Marginals, law: np.ndarray, seed: int) -> list[FitMeasurement]:
    rng = np.random.default_rng(seed)
    answers = workload.answer(law) * TOTAL
    noisy = answers + rng.normal(0.0, 5.0, answers.size)
    return [FitMeasurement.of_group(workload, g, noisy[workload.group_queries(g)], std=5.0)
            for g in range(workload.n_groups)]


@pytest.mark.parametrize("kind", sorted(STATES))
def test_the_line_search_doubles_its_step_only_after_clean_steps(kind, monkeypatch):
    """Doubling at every step wastes a trial on most steps of an unconverged fit; waiting for
    two steps accepted at their first trial saves most of them, and the loss still falls."""
    w = Marginals.all_kway(SMALL, 2)
    measured = _noisy(w, _law(SMALL, 3, alpha=0.3), seed=4)
    reports = {}
    for grow_after in (0, 2):
        monkeypatch.setattr(fit_module, "_GROW_AFTER", grow_after)
        state = STATES[kind](SMALL, TOTAL)
        reports[grow_after] = fit(state, w, measured, tolerance=0.0, max_iterations=200)
    every, clean = reports[0], reports[2]
    for report in (every, clean):
        assert report.iterations == 200 and report.trials >= report.iterations
        assert np.all(np.diff(report.objectives) <= 0)
    assert every.trials >= 1.8 * every.iterations
    assert clean.trials <= 1.5 * clean.iterations
    assert clean.objective <= every.objective * (1 + 1e-3)
