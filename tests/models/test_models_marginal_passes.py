"""Compiled reuse passes over measured marginals (a dense histogram, or clique by clique on a
junction tree): bit for bit the plain group steps."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fastmwem import mwem
from fastmwem.data import Dataset, Domain
from fastmwem.models import marginal_passes
from fastmwem.models.factored import FactoredState
from fastmwem.models.state import MWState, mw_group_step
from fastmwem.release.mwem import rounds as _rounds
from fastmwem.workloads import Concatenate, Marginals
from fastmwem.workloads import marginals as _marginals


def _random_layouts(seed):
    """A domain with sizes 1 to 5 and marginals on random axes, the last axis in some."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=int(rng.integers(3, 8))).tolist()
    domain = Domain([f"a{i}" for i in range(len(sizes))], sizes)
    sets = {tuple(sorted(rng.choice(len(sizes), size=int(rng.integers(1, 4)), replace=False)))
            for _ in range(8)}
    sets.add((len(sizes) - 1,))
    sets.add((0,))
    attributes = [[domain.attributes[i] for i in axes] for axes in sorted(sets)]
    return domain, Marginals(domain, attributes), rng


@pytest.mark.parametrize("seed", range(12))
def test_sweep_equals_multiply_then_bincount(seed):
    domain, workload, rng = _random_layouts(seed)
    sweep = marginal_passes._kernels()[0]
    p0 = rng.dirichlet(np.ones(domain.size))
    for g in range(workload.n_groups):
        before = (g + 3) % workload.n_groups
        size = int(workload.group_sizes()[g])
        log_factors = rng.normal(size=int(workload.group_sizes()[before]))
        expected = p0.copy()
        workload.multiply_group(expected, before, log_factors)
        p, out = p0.copy(), np.zeros(size)
        run = int(np.prod(domain.shape[max(workload.axes[g]) + 1:]))
        sweep(p, workload.compact_index(before), np.exp(log_factors),
              workload.compact_index(g), out, run)
        assert np.array_equal(p, expected)
        assert np.array_equal(out, workload.answer_group(expected, g))
        only = np.zeros(size)
        sweep(p, workload.compact_index(before), np.empty(0), workload.compact_index(g), only,
              run)
        assert np.array_equal(only, out)


def test_compact_index_is_the_cell_index_in_fewer_bytes(monkeypatch):
    domain = Domain(["a", "b", "c", "d"], [3, 100, 2, 700])
    workload = Marginals(domain, [["a", "c"], ["b", "d"], ["a", "b", "c"], ["b", "c", "d"]])
    small, medium, large = (workload.compact_index(g) for g in (0, 2, 3))
    assert small.dtype == np.uint8 and medium.dtype == np.uint16
    assert large is None  # 140,000 cells
    assert np.array_equal(small, workload._cell_index(0))
    assert np.array_equal(medium, workload._cell_index(2))
    # the cache holds what fits; past that there is no index (the plain steps run instead)
    monkeypatch.setattr(_marginals, "_COMPACT_CACHE_BYTES", 3 * domain.size)
    crowded = Marginals(domain, [["b", "c"], ["a", "c"], ["a", "b"]])
    assert crowded.compact_index(0).dtype == np.uint8
    assert crowded.compact_index(1) is not None  # 1 + 1 bytes a cell
    assert crowded.compact_index(2) is None  # 1 + 1 + 2 bytes a cell
    monkeypatch.setattr(_marginals, "_INDEX_DOMAIN_CELLS", domain.size - 1)
    assert Marginals(domain, [["a"]]).compact_index(0) is None


def _plain(p, workload, groups, measured, steps, total, passes, tolerance):
    for done in range(1, passes + 1):
        before = p.copy()
        for g, values, step in zip(groups, measured, steps):
            mw_group_step(p, workload, g, values, total, step)
        if tolerance > 0 and float(np.abs(p - before).sum()) < tolerance:
            return done
    return passes


def _noisy_groups(workload, rng, count, total, std):
    """``count`` random groups (repeats allowed) and their noisy counts on a random law."""
    groups = rng.choice(workload.n_groups, size=count).tolist()
    true = rng.dirichlet(np.ones(workload.domain.size))
    measured = [total * workload.answer_group(true, g)
                + rng.normal(0, std, size=int(workload.group_sizes()[g])) for g in groups]
    return groups, measured


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_marginals_equals_the_plain_steps(seed, weighted):
    domain, workload, rng = _random_layouts(seed)
    total = 500.0
    groups, measured = _noisy_groups(workload, rng, 7, total, 20.0)
    steps = rng.uniform(0.2, 3.0, size=len(groups)).tolist() if weighted else [1.0] * 7
    start = rng.dirichlet(np.ones(domain.size))
    for passes, tolerance in [(1, 0.0), (5, 0.0), (200, 0.02)]:
        expected = start.copy()
        ran = _plain(expected, workload, groups, measured, steps, total, passes, tolerance)
        state = MWState(domain, start, total)
        state.distribution = start.copy()  # exactly the start, not renormalised
        seen = []
        done = marginal_passes.fit_marginals(state, workload, groups, measured, steps, passes,
                                              tolerance, seen.append)
        assert done == ran and seen == [1] * ran
        assert np.array_equal(state.distribution, expected)
    assert 1 < ran < 200  # the tolerance stopped the passes


def test_fit_marginals_declines_without_numba_or_index(monkeypatch):
    domain, workload, _ = _random_layouts(0)
    state = MWState.uniform(domain, 10.0)
    measured = [np.ones(int(workload.group_sizes()[0]))]
    assert marginal_passes.fit_marginals(state, workload, [0], measured, [1.0], 3, 0.0) == 3

    class Other(Marginals):
        pass

    other = Other(domain, workload.attribute_sets)
    assert marginal_passes.fit_marginals(state, other, [0], measured, [1.0], 3, 0.0) is None
    mixed = Concatenate([Marginals(domain, [domain.attributes[:1]]), other, workload])
    ones = [np.ones(domain.shape[0]), measured[0]]
    last = 1 + workload.n_groups  # group 0 of the last part
    assert marginal_passes.fit_marginals(state, mixed, [0, last], ones, [1.0] * 2, 3,
                                          0.0) == 3
    assert marginal_passes.fit_marginals(state, mixed, [0, 1], ones, [1.0] * 2, 3,
                                          0.0) is None
    monkeypatch.setattr(_marginals, "_INDEX_DOMAIN_CELLS", 1)
    fresh = Marginals(domain, workload.attribute_sets)
    assert marginal_passes.fit_marginals(state, fresh, [0], measured, [1.0], 3, 0.0) is None
    monkeypatch.setattr(marginal_passes, "_kernels", lambda: None)
    assert marginal_passes.fit_marginals(state, workload, [0], measured, [1.0], 3, 0.0) is None


def _table(seed):
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(7)], [3, 2, 4, 2, 3, 2, 5])
    # correlated columns, so that the measurements move the distribution
    base = rng.integers(0, 2, size=(700, 1))
    codes = (base + rng.integers(0, 2, size=(700, 7))) % np.array(domain.shape)
    return Dataset(codes, domain), Marginals.all_kway(domain, 2)


@pytest.mark.parametrize(("passes_name", "model"), [("fit_marginals", "dense"),
                                                    ("fit_clique_marginals", "junction-tree"),
                                                    ("fit_clique_marginals", "product")])
@pytest.mark.parametrize(("seed", "options"), [
    (0, {"privacy": "pure", "rounds": 8}),
    (1, {"privacy": "pure", "rounds": 6, "reuse_tolerance": 0.0, "reuse_passes": 4}),
    (2, {"privacy": "zcdp", "delta": 1e-9, "rounds": 8, "reuse_tolerance": 1e-3}),
    (3, {"privacy": "zcdp", "delta": 1e-9, "rounds": None}),  # adaptive: weighted steps
    (4, {"privacy": "pure", "rounds": 5, "noise_test": 0.05}),
])
def test_mwem_is_bit_for_bit_unchanged_by_the_compiled_passes(monkeypatch, seed, options,
                                                              passes_name, model):
    dataset, workload = _table(seed)
    calls = []
    fit = getattr(marginal_passes, passes_name)

    def counting(state, workload, groups, measured, steps, passes, *args):
        done = fit(state, workload, groups, measured, steps, passes, *args)
        calls.append((passes, done))
        return done

    monkeypatch.setattr(_rounds, passes_name, counting)
    fast = mwem(dataset, workload, epsilon=2.0, rng=seed, progress=False, model=model,
                **options)
    assert any(passes > 0 for passes, _ in calls)
    assert all(done is not None for passes, done in calls if passes > 0)  # they were compiled
    monkeypatch.setattr(marginal_passes, "_kernels", lambda: None)  # numba missing
    calls.clear()
    plain = mwem(dataset, workload, epsilon=2.0, rng=seed, progress=False, model=model,
                 **options)
    assert calls and all(done is None for _, done in calls)
    assert fast.selected == plain.selected
    assert np.array_equal(fast.answer(workload), plain.answer(workload))
    if model == "dense":
        assert np.array_equal(fast.histogram, plain.histogram)


def _factored_problem(seed, ordered=True, weighted=True):
    """A junction tree that has absorbed random groups, and noisy measurements of them: in the
    passes' order (by clique), or as drawn (a clique's groups then come apart, A B A)."""
    domain, workload, rng = _random_layouts(seed)
    total = 400.0
    groups, measured = _noisy_groups(workload, rng, 8, total, 15.0)
    state = FactoredState(domain, total)
    for g, values in zip(groups, measured):  # absorb them, and move the tables off uniform
        state.update_group(workload, g, values)
    order = state.pass_order(workload, groups) if ordered else range(len(groups))
    steps = rng.uniform(0.2, 3.0, size=len(groups)).tolist() if weighted else [1.0] * 8
    return (state, workload, [groups[i] for i in order], [measured[i] for i in order], steps)


def _tables(state):
    state.tree.calibrate()
    return {c: k.table.copy() for c, k in state.tree.cliques.items()}


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("ordered", "weighted"), [(True, True), (False, False), (False, True)])
def test_fit_clique_marginals_equals_the_plain_steps_of_a_junction_tree(seed, ordered,
                                                                        weighted):
    state, workload, groups, measured, steps = _factored_problem(seed, ordered, weighted)
    assert len(state.tree.cliques) > 1
    for passes, tolerance in [(1, 0.0), (4, 0.0), (300, 0.01)]:
        plain, fast = copy.deepcopy(state), copy.deepcopy(state)
        ran = passes
        for done in range(1, passes + 1):
            checkpoint = plain.checkpoint() if tolerance > 0 else None  # as the reuse passes
            for g, values, step in zip(groups, measured, steps):
                if step == 1.0:  # the update's own default path
                    plain.update_group(workload, g, values)
                else:
                    plain.update_group(workload, g, values, step=step)
            if tolerance > 0 and plain.moved(checkpoint) < tolerance:
                ran = done
                break
        seen = []
        done = marginal_passes.fit_clique_marginals(fast, workload, groups, measured, steps,
                                                     passes, tolerance, seen.append)
        assert done == ran and seen == [1] * ran
        expected, got = _tables(plain), _tables(fast)
        assert expected.keys() == got.keys()
        assert all(np.array_equal(expected[c], got[c]) for c in expected)
    assert 1 < ran < 300  # the tolerance stopped the passes


def _untouched(state, before, structure):
    after = _tables(state)
    return (state._structure == structure and before.keys() == after.keys()
            and all(np.array_equal(before[c], after[c]) for c in before))


def test_fit_clique_marginals_declines_without_numba_or_a_compact_index(monkeypatch):
    state, workload, groups, measured, steps = _factored_problem(0)
    before, structure = _tables(state), state._structure
    monkeypatch.setattr(marginal_passes, "_kernels", lambda: None)
    assert marginal_passes.fit_clique_marginals(state, workload, groups, measured, steps, 2,
                                                0.0) is None
    assert _untouched(state, before, structure)
    monkeypatch.undo()
    monkeypatch.setattr(_marginals, "_INDEX_DOMAIN_CELLS", 1)  # no clique has an index
    fresh = Marginals(workload.domain, workload.attribute_sets)
    assert marginal_passes.fit_clique_marginals(state, fresh, groups, measured, steps, 2,
                                                0.0) is None
    assert _untouched(state, before, structure)


@pytest.mark.parametrize("seed", range(6))
def test_fit_clique_marginals_declines_groups_no_clique_holds_yet(seed):
    # Absorbing a later group could merge an earlier group's clique under the sweeps: the
    # caller absorbs them first (pass_order), else nothing is done, not even an absorption.
    _, workload, groups, measured, steps = _factored_problem(seed)
    state = FactoredState(workload.domain, 400.0)
    before, structure = _tables(state), state._structure
    assert not all(state.holds(workload, g) for g in groups)  # some group is not held yet
    assert marginal_passes.fit_clique_marginals(state, workload, groups, measured, steps, 2,
                                                0.0) is None
    assert _untouched(state, before, structure)
