"""The contract every :class:`~fastmwem.release.SyntheticState` meets (dense and factored).

A new state passes this suite or does not ship. Each check runs on every implementation,
fitted the same way to the same noisy measurements.
"""

import itertools

import numpy as np
import pytest

from fastmwem.data import Domain
from fastmwem.release import FactoredState, MWState, SyntheticState
from fastmwem.workloads import Marginals

DOMAIN = Domain(["a", "b", "c", "d", "e"], [2, 3, 2, 4, 3])
SETS = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "e")]
TOTAL = 500.0

STATES = {
    "dense": lambda: MWState.uniform(DOMAIN, TOTAL),
    "junction-tree": lambda: FactoredState(DOMAIN, TOTAL, max_clique_cells=64),
    # disjoint factors merge whole: the measured pairs chain every attribute into one factor
    "product": lambda: FactoredState(DOMAIN, TOTAL, max_clique_cells=256, product=True),
}


def measurements(workload, seed=0):
    """Answers (fractions) of a random law, the stand-in for noisy measurements."""
    law = np.random.default_rng(seed).dirichlet(np.full(DOMAIN.size, 0.4))
    return workload.answer(law)


@pytest.fixture(params=sorted(STATES))
def state(request) -> SyntheticState:
    s = STATES[request.param]()
    w = Marginals(DOMAIN, SETS)
    answers = measurements(w)
    for g in range(w.n_groups):
        s.update_group(w, g, answers[w.group_queries(g)] * TOTAL)
    return s


def offsets(workload) -> np.ndarray:
    return np.asarray(workload.group_offsets)


def test_meets_the_protocol_and_keeps_its_domain_and_total(state):
    assert isinstance(state, SyntheticState)
    assert state.domain == DOMAIN and state.total == TOTAL
    assert state.kind in ("dense", "junction-tree", "product")


def test_answers_agree_across_answer_answer_group_and_answer_groups(state):
    w = Marginals.all_kway(DOMAIN, 2)
    every = state.answer(w)
    assert every.shape == (w.n_queries,)
    cut = offsets(w)
    for g in range(w.n_groups):
        part = state.answer_group(w, g)
        np.testing.assert_allclose(part, every[cut[g]:cut[g + 1]], atol=1e-12)
        assert part.sum() == pytest.approx(1.0)  # a marginal of fractions
    chosen = np.array([1, 4, 7])
    np.testing.assert_allclose(state.answer_groups(w, chosen),
                               np.concatenate([every[cut[g]:cut[g + 1]] for g in chosen]),
                               atol=1e-12)


def test_a_group_update_moves_its_answers_towards_the_measurement(state):
    w = Marginals(DOMAIN, [("b", "d")])
    target = measurements(w, seed=3)
    before = np.abs(state.answer_group(w, 0) - target).sum()
    assert state.measurable(w, np.array([0]))[0]  # every state here has room for the pair
    state.update_group(w, 0, target * TOTAL)
    after = np.abs(state.answer_group(w, 0) - target).sum()
    assert after < before


def test_a_query_update_moves_that_answer_towards_the_measurement(state):
    w = Marginals(DOMAIN, [("a", "b")])
    answer = state.answer(w)[2]
    target = min(answer + 0.2, 1.0)
    state.update_query(w, 2, target * TOTAL)
    assert abs(state.answer(w)[2] - target) < abs(answer - target)


def test_checkpoint_and_moved(state):
    w = Marginals(DOMAIN, [("a", "b")])
    mark = state.checkpoint()
    assert state.moved(mark) == pytest.approx(0.0, abs=1e-12)
    mark = state.checkpoint()
    state.update_group(w, 0, measurements(w, seed=5) * TOTAL)
    assert state.moved(mark) > 1e-6


def test_measurable_and_pass_order_have_the_shapes_asked_for(state):
    w = Marginals.all_kway(DOMAIN, 2)
    groups = np.arange(w.n_groups)
    ok = np.asarray(state.measurable(w, groups))
    assert ok.shape == groups.shape and ok.dtype == bool
    order = state.pass_order(w, [0, 3, 5, 8])
    assert sorted(order) == [0, 1, 2, 3]


@pytest.mark.parametrize("systematic", [True, False])
def test_records_are_in_the_domain_and_reproducible(state, systematic):
    frames = [state.sample(301, np.random.default_rng(7), systematic=systematic)
              for _ in range(2)]
    assert frames[0].equals(frames[1])
    frame = frames[0]
    assert list(frame.columns) == list(DOMAIN.attributes) and len(frame) == 301
    codes = frame.to_numpy()
    assert np.all((codes >= 0) & (codes < np.array(DOMAIN.shape)))


def test_systematic_records_sit_near_each_one_way_expectation(state):
    """Every attribute's count within 5 of what the state expects (a dense draw rounds cells,
    so a marginal over many cells may be off by a few), and closer overall than i.i.d. records
    (about 14 off per value here)."""
    n = 1000
    w = Marginals.all_kway(DOMAIN, 1)
    expected, cut = state.answer(w) * n, offsets(w)
    off = {}
    for systematic in (True, False):
        codes = state.sample(n, np.random.default_rng(8), systematic=systematic).to_numpy()
        off[systematic] = [np.abs(np.bincount(codes[:, a], minlength=DOMAIN.shape[a])
                                  - expected[cut[a]:cut[a + 1]]) for a in range(len(DOMAIN))]
    assert max(d.max() for d in off[True]) <= 5
    assert sum(d.sum() for d in off[True]) < 0.5 * sum(d.sum() for d in off[False])


def test_matched_records_answer_the_matched_sets_at_least_as_well(state):
    n = 800
    triples = list(itertools.combinations(range(len(DOMAIN)), 3))
    w = Marginals(DOMAIN, [tuple(DOMAIN.attributes[a] for a in t) for t in triples])
    expected = state.answer(w) * n
    errors = {}
    for name, match in (("systematic", ()), ("matched", triples)):
        codes = state.sample(n, np.random.default_rng(9), match=match).to_numpy()
        counts = np.concatenate([
            np.bincount(np.ravel_multi_index(tuple(codes[:, a] for a in t),
                                             [DOMAIN.shape[a] for a in t]),
                        minlength=int(np.prod([DOMAIN.shape[a] for a in t])))
            for t in triples])
        errors[name] = np.abs(counts - expected).sum()
    assert errors["matched"] < errors["systematic"]
