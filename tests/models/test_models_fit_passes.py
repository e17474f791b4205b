"""The dense fit over measured marginals (fastmwem.models.fit_passes) against the fit that
answers and expands group by group, with and without the compiled sweeps; and the junction-tree
fit's clique-by-clique trie against the same group by group."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

import fastmwem.models.fit as fit_module
import fastmwem.models.fit_passes as passes
from fastmwem.data import Domain
from fastmwem.models import MWState
from fastmwem.models.fit import FitMeasurement, fit
from fastmwem.models.fit_passes import DenseMarginals, MarginalTrie
from fastmwem.workloads import Concatenate, Marginals, RandomCountingQueries, RangeQueries

TOTAL = 5000.0
# Sizes 1 to 4, so that merged axes, single-cell axes and long chains all occur.
DOMAIN = Domain([f"x{i}" for i in range(7)], [3, 2, 4, 1, 3, 2, 4])
# Agreement with the group-by-group fit: its sums are associated differently, so the iterates
# differ by rounding, which a thousand steps keep below this (relative, per cell and per loss).
RTOL = 1e-9


def _law(domain: Domain, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(domain.size, 0.7))


def _noisy(workload, groups, seed: int, stds) -> list[FitMeasurement]:
    rng = np.random.default_rng(seed)
    answers = workload.answer(_law(workload.domain, seed)) * TOTAL
    return [FitMeasurement.of_group(workload, g, answers[workload.group_queries(g)]
                                    + rng.normal(0, std, int(workload.group_sizes()[g])), std)
            for g, std in zip(groups, stds)]


def _three_way():
    w = Marginals(DOMAIN, list(itertools.combinations(DOMAIN.attributes, 3))[::4])
    return w, _noisy(w, range(w.n_groups), 1, [5.0] * w.n_groups)


def _repeated():
    # One group measured three times (two of them the same std), one measured on part of its
    # queries only, and a 1-way marginal.
    w = Marginals(DOMAIN, [("x0", "x2", "x6"), ("x1", "x4"), ("x5",), ("x2", "x3", "x4")])
    measured = _noisy(w, [0, 0, 1, 2, 0, 3], 2, [2.0, 8.0, 3.0, 1.0, 2.0, 6.0])
    part = measured[2]
    measured[2] = FitMeasurement(slice(part.queries.start + 1, part.queries.stop - 2),
                                 part.values[1:-2], part.std)
    return w, measured


def _concatenated():
    # The closure an adaptive run measures: 3-way marginals, and the 1-way ones appended.
    w = Concatenate([Marginals(DOMAIN, [("x0", "x1", "x2"), ("x2", "x5", "x6"),
                                        ("x1", "x4", "x6")]),
                     Marginals(DOMAIN, [[a] for a in DOMAIN.attributes])])
    return w, _noisy(w, [0, 1, 2, 3, 5, 9, 1], 3, [4.0, 4.0, 2.0, 1.0, 1.0, 3.0, 9.0])


def _ranges():
    # Range queries have a marginal structure but are not its cells: answered from the
    # marginal by the workload, transposed through it.
    ranges = RangeQueries(DOMAIN, ["x2", "x6"], np.array([[0, 1], [1, 0], [2, 2]]),
                          np.array([[1, 3], [3, 2], [3, 3]]))
    w = Concatenate([Marginals(DOMAIN, [("x0", "x2"), ("x4", "x5", "x6")]), ranges])
    return w, _noisy(w, range(w.n_groups), 4, [3.0, 3.0, 1.0, 2.0, 2.0])


CASES = {"3-way": _three_way, "repeated": _repeated, "concatenate": _concatenated,
         "ranges": _ranges}


def _fit(monkeypatch, workload, measured, *, trie: bool, compiled: bool):
    monkeypatch.setattr(fit_module, "_MARGINAL_TRIE", trie)
    monkeypatch.setattr(passes, "COMPILED_CELLS", 0 if compiled else 2**62)
    state = MWState.uniform(DOMAIN, TOTAL)
    report = fit(state, workload, measured, tolerance=1e-12, max_iterations=400)
    return report, state.distribution.copy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_trie_fit_takes_the_steps_of_the_group_by_group_fit(case, monkeypatch):
    workload, measured = CASES[case]()
    plain, p_plain = _fit(monkeypatch, workload, measured, trie=False, compiled=False)
    fast, p_fast = _fit(monkeypatch, workload, measured, trie=True, compiled=False)
    assert plain.iterations > 50  # enough steps for rounding to compound
    assert fast.iterations == plain.iterations and fast.converged == plain.converged
    np.testing.assert_allclose(fast.objectives, plain.objectives, rtol=RTOL, atol=0)
    np.testing.assert_allclose(p_fast, p_plain, rtol=RTOL, atol=0)
    # ... and the fit moved far from the uniform start.
    assert np.abs(p_plain - 1.0 / DOMAIN.size).sum() > 0.1


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_compiled_sweeps_give_the_numpy_results_bit_for_bit(case, monkeypatch):
    workload, measured = CASES[case]()
    numpy_run, p_numpy = _fit(monkeypatch, workload, measured, trie=True, compiled=False)
    compiled_run, p_compiled = _fit(monkeypatch, workload, measured, trie=True, compiled=True)
    assert compiled_run == numpy_run
    np.testing.assert_array_equal(p_compiled, p_numpy)


def test_the_trie_is_used_only_when_every_measured_group_has_a_marginal_structure():
    state = MWState.uniform(DOMAIN, TOTAL)
    for case in CASES.values():
        workload, measured = case()
        terms = fit_module._prepare(workload, measured, TOTAL).terms
        assert isinstance(fit_module._dense(state, workload, terms), DenseMarginals)
    counting = RandomCountingQueries(DOMAIN, 5, rng=np.random.default_rng(0))
    mixed = Concatenate([Marginals(DOMAIN, [("x0", "x1")]), counting])
    for workload, groups in ((counting, [0, 3]), (mixed, [0, 2])):
        terms = fit_module._prepare(workload, _noisy(workload, groups, 5, [1.0, 1.0]),
                                    TOTAL).terms
        assert isinstance(fit_module._dense(state, workload, terms), fit_module._Dense)


def test_a_workload_without_marginal_structure_fits_as_before(monkeypatch):
    counting = RandomCountingQueries(DOMAIN, 6, rng=np.random.default_rng(1))
    w = Concatenate([Marginals(DOMAIN, [("x0", "x6")]), counting])
    measured = _noisy(w, range(w.n_groups), 6, [2.0] * w.n_groups)
    with_trie, p_with = _fit(monkeypatch, w, measured, trie=True, compiled=True)
    without, p_without = _fit(monkeypatch, w, measured, trie=False, compiled=False)
    assert with_trie == without
    np.testing.assert_array_equal(p_with, p_without)


def _reference_marginal(p: np.ndarray, shape, axes) -> np.ndarray:
    other = tuple(i for i in range(len(shape)) if i not in axes)
    return p.reshape(shape).sum(axis=other).reshape(-1)


def _reference_expand(shape, axes_list, tables) -> np.ndarray:
    out = np.zeros(shape)
    for axes, table in zip(axes_list, tables):
        out = out + table.reshape([shape[i] if i in axes else 1 for i in range(len(shape))])
    return out.reshape(-1)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4, 3), (5, 1, 4, 2, 3), (2,) * 9])
def test_the_trie_computes_marginals_and_their_transpose(shape):
    rng = np.random.default_rng(len(shape))
    sets = [c for k in range(1, min(3, len(shape)) + 1)
            for c in itertools.combinations(range(len(shape)), k)]
    for _ in range(15):
        # Repeats included: a set given twice shares its marginal and adds its tables.
        chosen = [sets[i] for i in rng.choice(len(sets), int(rng.integers(1, 9)))]
        trie = MarginalTrie(shape, chosen)
        p = rng.random(int(np.prod(shape)))
        found = trie.marginals(p)
        for axes, got in zip(chosen, found):
            np.testing.assert_allclose(got, _reference_marginal(p, shape, axes), rtol=1e-13)
        # A workspace changes where the partial sums are held, not what they are.
        workspace = np.full(p.size, np.nan)
        for got, want in zip(trie.marginals(p, workspace), found):
            np.testing.assert_array_equal(got, want)
        tables = [rng.normal(size=int(np.prod([shape[a] for a in axes]))) for axes in chosen]
        expanded = trie.expand(tables)
        np.testing.assert_allclose(expanded, _reference_expand(shape, chosen, tables),
                                   rtol=1e-12, atol=1e-12)
        out = np.full(p.size, np.nan)
        written = trie.expand(tables, out=out, workspace=workspace)
        assert np.shares_memory(written, out)
        np.testing.assert_array_equal(out, expanded)


def test_a_group_with_unsorted_or_no_axes_is_left_to_the_group_by_group_fit():
    class Odd(Marginals):
        def group_attributes(self, group):
            return (2, 0) if group == 0 else ()

    state = MWState.uniform(DOMAIN, TOTAL)
    w = Odd(DOMAIN, [("x0", "x2"), ("x1",)])
    assert DenseMarginals.build(state, w, [0]) is None
    assert DenseMarginals.build(state, w, [1]) is None
    assert DenseMarginals.build(state, Marginals(DOMAIN, [("x0", "x2")]), [0]) is not None


def test_the_compiled_sweeps_clip_and_floor_as_numpy_does(monkeypatch):
    monkeypatch.setattr(passes, "COMPILED_CELLS", 0)
    exponent, normalise = passes._kernels(1)
    assert exponent is not passes._exponent_numpy  # numba is installed here
    rng = np.random.default_rng(7)
    gradient = np.concatenate([rng.normal(0, 1e3, 500), [0.0, -0.0, 1e300, -1e300]])
    saved = np.concatenate([rng.dirichlet(np.ones(500)), [1e-320, 0.0, 5e-324, 0.5]])
    for eta in (1e-6, 0.3, 1e3):
        shift = float(gradient.min()) * -eta
        got, want = np.empty_like(gradient), np.empty_like(gradient)
        exponent(gradient, -eta, shift, got)
        passes._exponent_numpy(gradient, -eta, shift, want)
        np.testing.assert_array_equal(got, want)
        assert want.min() == -64.0  # the clip is reached
        factors = np.exp(want)
        total = float(np.einsum("i,i->", saved, factors))
        results = []
        for kernel in (normalise, passes._normalise_numpy):
            p, difference = np.empty_like(saved), np.empty_like(saved)
            kernel(saved, factors, total, p, difference)
            results.append((p, difference))
        np.testing.assert_array_equal(results[0][0], results[1][0])
        np.testing.assert_array_equal(results[0][1], results[1][1])
        assert results[1][0].min() == passes.FLOOR  # the floor is reached


def test_without_numba_the_numpy_sweeps_are_used(monkeypatch):
    monkeypatch.setattr(passes, "COMPILED_CELLS", 0)
    monkeypatch.setattr(passes, "_compiled", False)  # as after numba failed to import
    assert passes._kernels(2**20) == (passes._exponent_numpy, passes._normalise_numpy)


def test_the_trie_fit_holds_four_histograms_besides_the_state_as_the_plain_fit_does():
    # MWEM's memory estimate counts four copies for a fit (saved point, gradient, factors,
    # difference): the trie's partial sums go into the factors' array while it is free.
    domain = Domain([f"y{i}" for i in range(8)], [4] * 8)
    w = Marginals(domain, list(itertools.combinations(domain.attributes, 3))[::7]
                  + [("y0",), ("y5", "y7")])
    measured = _noisy(w, range(w.n_groups), 8, [1.0] * w.n_groups)
    state = MWState.uniform(domain, TOTAL)
    fit(state, w, measured, max_iterations=1)  # the workload's caches, built once
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        report = fit(state, w, measured, max_iterations=20)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert report.iterations == 20
    assert peak <= 4.3 * state.distribution.nbytes


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_junction_tree_fit_answers_and_expands_clique_by_clique_as_group_by_group(case):
    # The factored fit reads each clique's measured marginals along one trie of its table:
    # the same answers and gradient as summing and broadcasting group by group.
    from fastmwem.models import FactoredState
    from fastmwem.models.tables import expand

    workload, measured = CASES[case]()
    state = FactoredState(DOMAIN, TOTAL)
    fit(state, workload, measured, tolerance=0.0, max_iterations=15)  # away from uniform
    problem = fit_module._prepare(workload, measured, state.total)
    model = fit_module._Factored(state, workload, problem.terms)
    # Cliques holding several measured groups (the shared sums) occur in these cases.
    assert len(set(model.cliques)) < len(problem.terms) or case in ("repeated", "ranges")
    answers = model.answers()
    for term, axes, got in zip(problem.terms, model.axes, answers):
        want = workload.answer_on_marginal(term.group, state.marginal(axes))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    coefficients = problem.coefficients(answers)
    gradient = model.gradient(coefficients)
    tree = state.tree
    for cid in set(model.cliques):
        clique = tree.cliques[cid]
        want = np.zeros(clique.table.shape)
        for c, axes, at, (sub, local) in zip(coefficients, model.axes, model.cliques,
                                             model.subs):
            if at == cid:
                table = passes.sub_transpose(sub, local, c).reshape(
                    [DOMAIN.shape[a] for a in axes])
                want = want + expand(table, axes, clique.axes)
        np.testing.assert_allclose(gradient[cid], want, rtol=1e-12, atol=1e-15)
