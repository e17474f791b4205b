"""Matched records: values moved until the records' marginals are what the model says."""

import itertools

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.models import matching as _matching
from fastmwem.models.matching import match_marginals, match_records, scored_sets
from fastmwem.release import FactoredState, mwem
from fastmwem.workloads import Marginals

from .test_release_sampling import DOMAIN, fitted_state


def scored_sum(codes, shape, sets, marginal) -> float:
    """``sum |count - n * fraction|`` over ``sets``, computed directly."""
    total = 0.0
    for s in sets:
        sizes = [shape[a] for a in s]
        cells = np.ravel_multi_index(tuple(codes[:, a] for a in s), sizes)
        counts = np.bincount(cells, minlength=int(np.prod(sizes)))
        total += np.abs(counts - len(codes) * marginal(s).reshape(-1)).sum()
    return total


def random_marginals(shape, seed):
    """The marginals of a random joint law over ``shape``."""
    joint = np.random.default_rng(seed).dirichlet(np.full(int(np.prod(shape)), 0.5))
    joint = joint.reshape(shape)

    def marginal(axes):
        return joint.sum(axis=tuple(a for a in range(len(shape)) if a not in axes))

    return marginal


def test_scored_sets_are_distinct_sorted_and_smallest_first_within_the_budget():
    shape = (2, 3, 50, 4)
    sets = [(1, 0), (0, 1), (2, 3), (3,), (0, 1, 3), ()]
    assert scored_sets(sets, shape) == [(3,), (0, 1), (0, 1, 3), (2, 3)]
    assert scored_sets(sets, shape, max_cells=34) == [(3,), (0, 1), (0, 1, 3)]
    assert scored_sets(sets, shape, max_cells=33) == [(3,), (0, 1)]
    assert scored_sets(sets, shape, max_cells=3) == []


@pytest.mark.parametrize("seed", range(3))
def test_matching_lowers_the_scored_sum_and_keeps_codes_in_the_domain(seed):
    shape = (3, 7, 2, 12, 5)
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k, 400) for k in shape], axis=1)
    marginal = random_marginals(shape, seed)
    sets = [s for s in itertools.combinations(range(5), 3)]
    before = scored_sum(codes, shape, sets, marginal)
    moved = match_marginals(codes, shape, sets, marginal, rng)
    after = scored_sum(codes, shape, sets, marginal)
    assert moved > 0
    assert after < 0.8 * before
    assert np.all((codes >= 0) & (codes < np.array(shape)))


def test_each_pass_never_raises_the_scored_sum():
    shape = (4, 9, 3)
    sets = [(0, 1), (1, 2), (0, 2)]
    marginal = random_marginals(shape, 11)
    rng = np.random.default_rng(11)
    codes = np.stack([rng.integers(0, k, 300) for k in shape], axis=1)
    sums = [scored_sum(codes, shape, sets, marginal)]
    for _ in range(4):
        match_marginals(codes, shape, sets, marginal, rng, passes=1)
        sums.append(scored_sum(codes, shape, sets, marginal))
    assert all(b <= a + 1e-9 for a, b in zip(sums, sums[1:]))
    assert sums[-1] < sums[0]


def test_one_way_sets_are_matched_exactly():
    """With integer targets on single attributes, any over-full value can give a record to an
    under-full one, so the search ends on the targets themselves."""
    shape = (5, 8)
    targets = [np.array([10, 20, 30, 0, 40]), np.array([5, 5, 10, 10, 20, 20, 15, 15])]

    def marginal(axes):
        return targets[axes[0]] / 100.0

    rng = np.random.default_rng(3)
    codes = np.stack([rng.integers(0, k, 100) for k in shape], axis=1)
    match_marginals(codes, shape, [(0,), (1,)], marginal, rng, passes=10)
    for a in range(2):
        assert np.bincount(codes[:, a], minlength=shape[a]).tolist() == targets[a].tolist()


def test_matching_is_reproducible_from_the_rng():
    shape = (3, 6, 4)
    marginal = random_marginals(shape, 5)
    start = np.stack([np.random.default_rng(5).integers(0, k, 200) for k in shape], axis=1)
    runs = []
    for _ in range(2):
        codes = start.copy()
        match_marginals(codes, shape, [(0, 1, 2)], marginal, np.random.default_rng(9))
        runs.append(codes)
    assert np.array_equal(*runs)


def test_bad_arguments_are_refused():
    marginal = random_marginals((2, 2), 0)
    with pytest.raises(ValueError, match="int64"):
        match_marginals(np.zeros((3, 2), dtype=np.int32), (2, 2), [(0, 1)], marginal,
                        np.random.default_rng(0))
    with pytest.raises(ValueError, match="passes"):
        match_marginals(np.zeros((3, 2), dtype=np.int64), (2, 2), [(0, 1)], marginal,
                        np.random.default_rng(0), passes=-1)
    for sets in ([(1, 0)], [(0, 0)], [(0, 2)], [()]):
        with pytest.raises(ValueError, match="ascending"):
            match_marginals(np.zeros((3, 2), dtype=np.int64), (2, 2), sets, marginal,
                            np.random.default_rng(0))
    with pytest.raises(ValueError, match="columns"):
        match_marginals(np.zeros((3, 3), dtype=np.int64), (2, 2), [(0, 1)], marginal,
                        np.random.default_rng(0))
    empty = np.zeros((0, 2), dtype=np.int64)
    assert match_marginals(empty, (2, 2), [(0, 1)], marginal, np.random.default_rng(0)) == 0


def test_without_numba_the_records_stay_as_drawn_with_a_warning(monkeypatch):
    monkeypatch.setattr(_matching, "_compiled_loop", lambda: None)
    codes = np.zeros((4, 2), dtype=np.int64)
    with pytest.warns(UserWarning, match="needs numba"):
        assert match_records(codes, (2, 2), [(0, 1)], random_marginals((2, 2), 0),
                             np.random.default_rng(0)) == 0
    assert not codes.any()


def workload_error(state, frame, sets) -> float:
    codes = frame.to_numpy()
    axes = [tuple(DOMAIN.attributes.index(a) for a in s) for s in sets]
    return scored_sum(codes, DOMAIN.shape, axes, state.marginal)


def test_matched_factored_records_answer_the_workload_closer_than_systematic_ones():
    state = fitted_state(6)
    triples = list(itertools.combinations(DOMAIN.attributes, 3))
    axes = [tuple(DOMAIN.attributes.index(a) for a in s) for s in triples]
    errors = {}
    for name, match in (("systematic", ()), ("matched", axes)):
        frame = state.sample(3000, np.random.default_rng(7), match=match)
        errors[name] = workload_error(state, frame, triples)
    assert errors["matched"] < 0.7 * errors["systematic"]


def test_matched_is_the_default_and_helps_a_dense_model_too():
    """A dense systematic draw rounds each cell, but a marginal cell sums many of them."""
    domain = Domain(["a", "b", "c", "d", "e", "f"], [3, 4, 2, 5, 3, 4])
    rng = np.random.default_rng(12)
    data = Dataset(np.stack([rng.integers(0, k, 3000) for k in domain.shape], axis=1), domain)
    w = Marginals.all_kway(domain, 2)
    result = mwem(data, w, epsilon=2.0, rounds=5, rng=0)
    truth = result.answer()
    errors = {}
    for method in ("systematic", "matched"):
        frame = result.sample(rng=4, decode=False, sampling=method)
        records = Dataset(frame.to_numpy(), domain)
        errors[method] = np.abs(w.answer(records.histogram()) - truth).sum()
    default = result.sample(rng=4, decode=False)
    assert np.abs(w.answer(Dataset(default.to_numpy(), domain).histogram()) - truth).sum() \
        == errors["matched"]
    assert errors["matched"] < errors["systematic"]


def test_factored_state_records_decode_like_before():
    state = FactoredState(DOMAIN, 10.0)
    frame = state.sample(5, np.random.default_rng(0), match=[(0, 1)])
    assert list(frame.columns) == list(DOMAIN.attributes)
    assert len(frame) == 5


def test_memory_for_matching_counts_scored_and_screening_cells():
    shape = (2, 3, 4)
    # scored: the triple (24 cells); screening: its three pairs (6 + 8 + 12)
    assert _matching.match_bytes([(0, 1, 2)], shape) == 16 * (24 + 26)
    # a pair screens itself: counted once as scored, once as screening
    assert _matching.match_bytes([(0, 1)], shape) == 16 * 12


def test_dense_marginals_equal_direct_sums_whatever_the_windows():
    shape = (3, 2, 4, 5, 2, 3)
    joint = np.random.default_rng(13).random(shape)
    sets = [(0, 1, 2), (2, 3, 5), (0, 4), (1, 3, 4, 5), (0, 1, 2, 3, 4, 5)]
    for window_cells in (1, 30, 200, 10**6):
        marginal = _matching.dense_marginals(joint, sets, window_cells=window_cells)
        for s in sets + [(2, 3), (0,)]:
            direct = joint.sum(axis=tuple(a for a in range(6) if a not in s)) / joint.sum()
            assert np.allclose(marginal(s), direct)


def test_windows_cover_every_set_within_their_cells():
    shape = [2] * 12
    sets = list(itertools.combinations(range(12), 3))
    windows = _matching._windows(sets, shape, 2**8)
    assert all(2 ** len(w) <= 2**8 for w in windows)
    assert all(any(set(s) <= set(w) for w in windows) for s in sets)
    # a set larger than the window is its own window
    assert _matching._windows([(0, 1, 2, 3)], shape, 4) == [(0, 1, 2, 3)]
