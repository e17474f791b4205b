"""The factored state: the same law as a dense one, exact inference, structure and sampling."""

import itertools

import numpy as np
import pytest
from scipy import stats

from fastmwem.data import Domain
from fastmwem.models.junction import JunctionTree
from fastmwem.models.tables import product_sum
from fastmwem.release import FactoredState, MWState, SyntheticState
from fastmwem.workloads import AllIntervals, Concatenate, Marginals, RangeQueries

DOMAIN = Domain(["a", "b", "c", "d", "e", "f"], [2, 3, 2, 4, 3, 2])
SETS = [("a", "b"), ("b", "c"), ("d", "e"), ("a", "e"), ("c", "f"), ("b", "d", "f"),
        ("a", "c", "e")]


def dense_joint(state: FactoredState) -> np.ndarray:
    """The joint law of a factored state over every cell, from its cliques and separators."""
    tree = state.tree
    tree.calibrate()
    shape = DOMAIN.shape
    joint = np.ones(shape)
    for order in tree.components():
        parent = tree._bfs(order[0])[1]
        for v in order:
            clique = tree.cliques[v]
            view = [shape[a] if a in clique.axes else 1 for a in range(len(shape))]
            joint = joint * clique.table.reshape(view)
            if parent[v] is not None:
                sep = tree._separator(parent[v], v)
                other = tuple(i for i, a in enumerate(clique.axes) if a not in sep)
                view = [shape[a] if a in sep else 1 for a in range(len(shape))]
                joint = joint / clique.table.sum(axis=other).reshape(view)
    return joint.reshape(-1)


def noisy_measurements(workload, seed=0, total=1000.0):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(DOMAIN.size)) * total
    answers = workload.answer(truth)
    return [answers[workload.group_queries(g)] + rng.laplace(0, 20, workload.group_sizes()[g])
            for g in range(workload.n_groups)]


@pytest.mark.parametrize("product", [False, True])
def test_factored_updates_equal_the_dense_state(product):
    """Each update multiplies the joint by a function of one clique: the dense rule exactly."""
    w = Marginals(DOMAIN, SETS)
    measured = noisy_measurements(w)
    dense = MWState.uniform(DOMAIN, 1000.0)
    factored = FactoredState(DOMAIN, 1000.0, max_clique_cells=DOMAIN.size, product=product)
    for _ in range(3):
        for g in range(w.n_groups):
            dense.update_group(w, g, measured[g])
            factored.update_group(w, g, measured[g])
    np.testing.assert_allclose(dense_joint(factored), dense.distribution, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(factored.answer(w), dense.answer(w), rtol=1e-9, atol=1e-15)
    assert factored.kind == ("product" if product else "junction-tree")


def test_marginals_by_inference_equal_the_joint():
    w = Marginals(DOMAIN, SETS[:5])
    state = FactoredState(DOMAIN, 100.0)
    for g, values in enumerate(noisy_measurements(w, seed=1)):
        state.update_group(w, g, values)
    joint = dense_joint(state).reshape(DOMAIN.shape)
    for k in (1, 2, 3, 4):
        for axes in itertools.combinations(range(len(DOMAIN)), k):
            other = tuple(a for a in range(len(DOMAIN)) if a not in axes)
            np.testing.assert_allclose(state.marginal(axes), joint.sum(axis=other), atol=1e-12)


def test_query_updates_equal_the_dense_state():
    """Marginal cells measured one by one (measure='query'), and 1-D ranges."""
    w = Concatenate([Marginals(DOMAIN, [("a", "d"), ("d", "f")]),
                     RangeQueries(DOMAIN, "e", lower=[0, 1], upper=[1, 2]),
                     AllIntervals(DOMAIN, "b")])
    rng = np.random.default_rng(2)
    dense, factored = MWState.uniform(DOMAIN, 50.0), FactoredState(DOMAIN, 50.0)
    offsets = w.group_offsets
    for q in rng.integers(0, w.n_queries, 40):
        value = float(rng.uniform(0, 40))
        dense.update_query(w, int(q), value, offsets=offsets)
        factored.update_query(w, int(q), value)
    np.testing.assert_allclose(dense_joint(factored), dense.distribution, rtol=1e-9)
    np.testing.assert_allclose(factored.answer(w), dense.answer(w), rtol=1e-9, atol=1e-15)


def test_both_states_meet_the_protocol():
    assert isinstance(MWState.uniform(DOMAIN, 1.0), SyntheticState)
    assert isinstance(FactoredState(DOMAIN, 1.0), SyntheticState)


def test_absorbing_keeps_the_distribution_and_the_junction_tree_property():
    w = Marginals(DOMAIN, SETS)
    state = FactoredState(DOMAIN, 10.0)
    for g, values in enumerate(noisy_measurements(w, seed=3)):
        before = dense_joint(state)
        cid = state._clique_for(w.group_attributes(g))
        np.testing.assert_allclose(dense_joint(state), before, rtol=1e-12, atol=1e-15)
        assert set(w.group_attributes(g)) <= set(state.tree.cliques[cid].axes)
        state.update_group(w, g, values)
        assert_junction_tree(state.tree)


def assert_junction_tree(tree: JunctionTree) -> None:
    """Every attribute's cliques are connected, the graph is a forest, no clique is redundant."""
    edges = sum(len(c.neighbours) for c in tree.cliques.values()) // 2
    assert edges == len(tree.cliques) - len(tree.components())
    for a in range(len(tree.shape)):
        holding = {v for v, c in tree.cliques.items() if a in c.axes}
        start = next(iter(holding))
        seen, stack = {start}, [start]
        while stack:
            for u in tree.cliques[stack.pop()].neighbours & holding - seen:
                seen.add(u)
                stack.append(u)
        assert seen == holding
    for c in tree.cliques.values():
        assert not any(set(c.axes) <= set(tree.cliques[u].axes) for u in c.neighbours)


def test_product_model_merges_whole_factors():
    w = Marginals(DOMAIN, [("a", "b"), ("b", "c")])
    state = FactoredState(DOMAIN, 10.0, product=True)
    for g in range(w.n_groups):
        state.update_group(w, g, np.full(w.group_sizes()[g], 1.0))
    assert ("a", "b", "c") in state.cliques
    assert all(not c.neighbours for c in state.tree.cliques.values())


def test_structure_depends_on_the_measured_attributes_only():
    """Plans and cliques are public: the same groups give the same structure whatever the data."""
    w = Marginals(DOMAIN, SETS)
    states = [FactoredState(DOMAIN, 10.0, max_clique_cells=30) for _ in range(2)]
    for seed, state in enumerate(states):
        for g, values in enumerate(noisy_measurements(w, seed=seed)):
            if state.measurable(w, [g])[0]:
                state.update_group(w, g, values)
    assert states[0].cliques == states[1].cliques
    masks = [s.measurable(w, np.arange(w.n_groups)) for s in states]
    np.testing.assert_array_equal(masks[0], masks[1])


def test_cap_leaves_out_groups_and_refuses_their_update():
    w = Marginals(DOMAIN, [("d", "e"), ("b", "d", "e")])
    state = FactoredState(DOMAIN, 10.0, max_clique_cells=12)
    np.testing.assert_array_equal(state.measurable(w, [0, 1]), [True, False])
    with pytest.raises(ValueError, match="needs a clique of 36 cells, above max_clique_cells"):
        state.update_group(w, 1, np.ones(36))
    with pytest.raises(ValueError, match="max_clique_cells"):
        FactoredState(DOMAIN, 10.0, max_clique_cells=3)  # below the largest attribute


def test_workload_without_marginal_structure_is_refused():
    from fastmwem.workloads import RandomCountingQueries

    w = RandomCountingQueries(DOMAIN, 3, rng=0)
    with pytest.raises(TypeError, match="marginal structure"):
        FactoredState(DOMAIN, 10.0).answer(w)


def test_log_probability_matches_the_joint():
    w = Marginals(DOMAIN, SETS)
    state = FactoredState(DOMAIN, 10.0)
    for g, values in enumerate(noisy_measurements(w, seed=4)):
        state.update_group(w, g, values)
    codes = np.array(list(itertools.product(*[range(n) for n in DOMAIN.shape])))
    np.testing.assert_allclose(state.log_probability(codes), np.log(dense_joint(state)),
                               rtol=1e-9)


def test_samples_follow_the_model():
    """Chi-square goodness of fit of 20,000 independent records to the model's law, alpha = 0.001.

    Power check: the same records fail against the uniform law (p < 1e-12). (Systematic
    records are tested in test_release_sampling.py: they are not multinomial.)
    """
    w = Marginals(DOMAIN, SETS)
    state = FactoredState(DOMAIN, 10.0)
    for g, values in enumerate(noisy_measurements(w, seed=5)):
        state.update_group(w, g, values)
    frame = state.sample(20_000, np.random.default_rng(6), systematic=False)
    assert list(frame.columns) == list(DOMAIN.attributes)
    cells = np.ravel_multi_index(tuple(frame[a].to_numpy() for a in DOMAIN.attributes),
                                 DOMAIN.shape)
    observed = np.bincount(cells, minlength=DOMAIN.size)
    law = dense_joint(state)
    assert stats.chisquare(observed, law * 20_000).pvalue > 1e-3
    assert stats.chisquare(observed, np.full(DOMAIN.size, 20_000 / DOMAIN.size)).pvalue < 1e-12


def test_sampling_a_zero_mass_separator_row_stays_in_range():
    tree = JunctionTree((2, 3))
    plan = tree.plan((0, 1))
    tree.absorb(plan)
    cid = tree.covering((0, 1))
    tree.cliques[cid].table[...] = [[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]
    for systematic in (True, False):
        codes = tree.sample(1000, np.random.default_rng(0), systematic=systematic)
        assert codes[:, 0].max() == 0 and codes[:, 1].max() <= 1


def test_never_builds_the_domain():
    big = Domain([f"x{i}" for i in range(60)], [10] * 60)  # 10**60 cells
    w = Marginals(big, [("x0", "x1"), ("x1", "x2", "x59")])
    state = FactoredState(big, 100.0)
    for g in range(w.n_groups):
        state.update_group(w, g, np.full(w.group_sizes()[g], 1.0))
    assert state.model_cells < 10_000
    assert state.answer(w).size == w.n_queries
    assert state.sample(10, np.random.default_rng(0)).shape == (10, 60)


def test_product_sum_beyond_einsum_labels():
    rng = np.random.default_rng(0)
    factors = [((i, i + 1), rng.random((2, 2))) for i in range(60)]  # 61 labels: no einsum
    # A chain of 2 x 2 tables summed over its inner axes is a matrix product.
    np.testing.assert_allclose(product_sum(factors, (0, 60)),
                               np.linalg.multi_dot([t for _, t in factors]), rtol=1e-9)
    np.testing.assert_allclose(product_sum(factors[:20], (0, 20)),
                               np.linalg.multi_dot([t for _, t in factors[:20]]), rtol=1e-9)
