"""The warm-start index's parts: every search a true top k (against a brute force) along walks
with jumps, ties and adversarial queries; the proven bounds of each part checked key by key;
a full scan spread over rounds one part at a time; the k-th-score guess.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import numba_available
from fastmwem.indices._topk import update_norms
from fastmwem.indices._warm_parts import FloatCache, Part, Top
from fastmwem.indices._warm_rows import FloatRows, Int16Rows
from fastmwem.indices.warm import WarmStartIndex


def _exact(A: np.ndarray, offsets: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.multiply(np.asarray(A, dtype=np.float64), v[:-1]).sum(axis=1) + v[-1] * offsets


def _lp_keys(rng: np.random.Generator, m: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    A = rng.random((m, d), dtype=np.float32)
    b = A.astype(np.float64) @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05
    return A, -b


def _walk(rng: np.random.Generator, d: int, steps: int) -> list[np.ndarray]:
    """An MWU-like walk on the simplex with jumps, sign flips, scales and ties thrown in."""
    x = rng.dirichlet(np.ones(d))
    out = []
    for step in range(steps):
        x = x * np.exp(rng.normal(size=d) * 0.05)
        x /= x.sum()
        v = np.append(x, 1.0)
        if step % 17 == 16:  # a jump far from every reference
            v = np.append(rng.dirichlet(np.ones(d) * 0.2), 1.0)
        elif step % 23 == 22:  # a signed query at another scale
            v = rng.normal(size=d + 1) * 10.0 ** rng.integers(-3, 4)
        elif step % 29 == 28:  # only the offsets count: scores tie in bulk
            v = np.append(np.zeros(d), -1.0)
        out.append(v)
    return out


def _check(index: WarmStartIndex, A: np.ndarray, offsets: np.ndarray, v: np.ndarray,
           k: int) -> None:
    scores, ids = index.search(v[None, :], k)
    exact = _exact(A, offsets, v)
    np.testing.assert_array_equal(scores[0], np.sort(exact)[::-1][:k])  # a true top k
    np.testing.assert_array_equal(scores[0], index.score(ids[0], v))
    assert np.unique(ids[0]).size == k


def _check_bounds(index: WarmStartIndex, A: np.ndarray, offsets: np.ndarray,
                  v: np.ndarray) -> None:
    """Every part's proven bounds at ``v``, key by key: the keys outside its region score at
    most ``rest + w0``, the keys of its region outside ``S`` at most ``rest1 + w1``."""
    exact = _exact(A, offsets, v)
    state = index._state(v, 1)
    for q, part in enumerate(index._part_list):
        keys = np.arange(part.start, part.stop)
        outside = np.setdiff1d(keys, part.ids)
        if outside.size:
            assert exact[outside].max() <= part.rest + state.w0[q]
        unsorted = np.setdiff1d(part.ids, part.top_ids)
        if unsorted.size:
            assert exact[unsorted].max() <= part.rest1 + state.w1[q]
        assert np.isin(part.top_ids, part.ids).all()


@pytest.mark.parametrize("compact", [
    False, pytest.param(True, marks=pytest.mark.skipif(not numba_available(),
                                                       reason="numba is not installed"))])
def test_parts_give_a_true_top_k_along_any_walk(compact):
    rng = np.random.default_rng(11)
    m, d = 20 * 1024 + 37, 5
    A, offsets = _lp_keys(rng, m, d)
    A[100:160] = A[7]  # duplicate keys: exact ties at the top of some queries
    offsets[100:160] = offsets[7]
    index = WarmStartIndex(A, offsets, compact=compact, parts=3, brute_force_below=0)
    for step, v in enumerate(_walk(rng, d, 90)):
        k = int(rng.integers(1, 300))
        _check(index, A, offsets, v, k)
        if step % 9 == 0:
            _check_bounds(index, A, offsets, v)
    assert len(index._part_list) == 3
    assert index.rescans >= 5 and index.region_rescans >= 1  # the jumps: every part


@pytest.mark.skipif(not numba_available(), reason="numba is not installed")
def test_parts_of_16_bit_rows_are_whole_blocks_and_keep_their_regions_in_one_pass():
    # Parts of at least 64 blocks: a part's scan guesses its threshold from sampled blocks.
    rng = np.random.default_rng(12)
    m, d = 140 * 1024 + 5, 4
    A, offsets = _lp_keys(rng, m, d)
    index = WarmStartIndex(A, offsets, compact=True, parts=2)
    assert isinstance(index._main_rows(), Int16Rows)
    x = rng.dirichlet(np.ones(d))
    for _ in range(25):
        x = x * np.exp(rng.normal(size=d) * 0.03)
        x /= x.sum()
        _check(index, A, offsets, np.append(x, 1.0), 200)
    _check_bounds(index, A, offsets, np.append(x, 1.0))
    starts = [p.start for p in index._part_list]
    stops = [p.stop for p in index._part_list]
    assert starts[0] == 0 and stops[-1] == m and starts[1:] == stops[:-1]
    assert all(s % 1024 == 0 for s in starts)


def test_a_smooth_walk_scans_the_parts_one_at_a_time():
    # The MWU-like walk of the scalar LP: after the first search no search scans every part
    # (a full scan); the parts are scanned one at a time, ahead of need.
    rng = np.random.default_rng(13)
    m, d = 40000, 8
    A, offsets = _lp_keys(rng, m, d)
    index = WarmStartIndex(A, offsets, parts=4, compact=False)
    x = rng.dirichlet(np.ones(d))
    per_search = []
    for _ in range(150):
        x = x * np.exp(rng.normal(size=d) * 0.04)
        x /= x.sum()
        before = index.part_rescans
        _check(index, A, offsets, np.append(x, 1.0), 40)
        per_search.append(index.part_rescans - before)
    assert per_search[0] == 4 and index.rescans == 1
    assert max(per_search[1:]) == 1 and sum(per_search[1:]) >= 4


def test_a_jump_scans_every_part_and_stays_exact():
    rng = np.random.default_rng(14)
    m, d = 30000, 6
    A, offsets = _lp_keys(rng, m, d)
    index = WarmStartIndex(A, offsets, parts=5, compact=False)
    _check(index, A, offsets, np.append(rng.dirichlet(np.ones(d)), 1.0), 50)
    _check(index, A, offsets, np.append(np.eye(d)[0], 1.0), 50)  # a vertex: far away
    assert index.rescans == 2 and len(index._part_list) == 5


def test_parts_are_checked_and_shared_by_siblings():
    A, offsets = np.ones((10, 2)), np.zeros(10)
    with pytest.raises(ValueError, match="parts"):
        WarmStartIndex(A, offsets, parts=0)
    index = WarmStartIndex(A, offsets, parts=3)
    sibling = index.with_extra_rows(np.ones((1, 2)), np.zeros(1))
    assert sibling._parts == 3


def test_the_kth_score_is_the_same_whatever_the_guess():
    rng = np.random.default_rng(15)
    index = WarmStartIndex(np.ones((10, 2)), np.zeros(10))
    values = rng.normal(size=5000)
    for k in (1, 7, 400, 5000):
        want = np.sort(values)[::-1][k - 1]
        for guess in [(np.inf, 0.0), (want, 0.0), (want + 1.0, 0.1), (-np.inf, 0.0),
                      (want - 0.5, 3.0), (5.0, 0.0)]:
            index._last_kth = guess
            assert index._kth(values, k) == want


@pytest.mark.skipif(not numba_available(), reason="numba is not installed")
def test_16_bit_parts_and_takes():
    rng = np.random.default_rng(16)
    m, d = 5000, 3
    A, offsets = _lp_keys(rng, m, d)
    keys = np.hstack([A.astype(np.float64), offsets[:, None]])
    rows = Int16Rows.build(A, offsets, update_norms((0.0, 0.0, 0.0), keys), d + 1)
    assert rows is not None
    v = np.append(rng.dirichlet(np.ones(d)), 1.0)
    whole = rows.scan(v)[0]
    part = rows.part(2048, 4500)
    assert len(part) == 2452
    np.testing.assert_array_equal(part.scan(v)[0], whole[2048:4500])
    positions = np.array([4, 900, 1030, 1031, 4999])
    many = rows.take(positions)  # from blocks of 1,024 rows (compiled gather)
    np.testing.assert_array_equal(many.scan(v)[0], whole[positions])
    one = many.take(np.array([4, 0, 2]))  # from one block (numpy)
    np.testing.assert_array_equal(one.scan(v)[0], whole[positions[[4, 0, 2]]])
    with pytest.raises(ValueError, match="block"):
        rows.part(100, 2000)
    floats = FloatRows(A, offsets, update_norms((0.0, 0.0, 0.0), keys), d + 1)
    np.testing.assert_array_equal(floats.part(10, 20).rows, A[10:20])


def test_a_region_rescan_keeps_s_only_while_it_holds_the_margin():
    rng = np.random.default_rng(17)
    m, d = 12000, 4
    A, offsets = _lp_keys(rng, m, d)
    rows = FloatRows(A, offsets, update_norms((0.0, 0.0, 0.0), np.hstack(
        [A.astype(np.float64), offsets[:, None]])), d + 1)
    part = Part(0, m)
    v = np.append(rng.dirichlet(np.ones(d)), 1.0)
    part.scan_keys(rows, v, 4000, 800)
    top = part.top_ids.copy()
    exact = _exact(A, offsets, v)
    region_scores = exact[part.ids]
    best_out = np.sort(region_scores)[::-1][top.size]  # what a new S would leave out
    # far above every score: S holds the whole margin and is kept
    assert part.scan_region(v, 800, float(region_scores.max()) + 1.0) is False
    np.testing.assert_array_equal(part.top_ids, top)
    # between the best left out of a new S and the best outside the kept S: chosen again
    w = np.append(rng.dirichlet(np.ones(d)), 1.0)
    exact_w = _exact(A, offsets, w)
    outside = np.setdiff1d(part.ids, part.top_ids)
    kept = exact_w[outside].max()
    new = np.sort(exact_w[part.ids])[::-1][top.size]
    assert kept > new  # the queries differ enough to change the region's top
    assert part.scan_region(w, 800, float(kept + 1e-9)) is True
    assert exact_w[np.setdiff1d(part.ids, part.top_ids)].max() <= part.rest1 + 1e-6
    assert part.scan_region(v, 800, -np.inf) is True  # no bound yet: always chosen
    assert exact[np.setdiff1d(part.ids, part.top_ids)].max() <= part.rest1 + 1e-6
    assert best_out <= part.rest1 + 1e-6


def test_the_float_cache_gives_the_scores_bits_even_when_it_starts_over():
    rng = np.random.default_rng(18)
    m, d = 3000, 7
    A, offsets = _lp_keys(rng, m, d)
    index = WarmStartIndex(A, offsets)
    part = Part(0, m)
    rows = FloatRows(A, offsets, update_norms((0.0, 0.0, 0.0), np.hstack(
        [A.astype(np.float64), offsets[:, None]])), d + 1)
    part.scan_keys(rows, np.append(rng.dirichlet(np.ones(d)), 1.0), 1000, 300)
    cache = FloatCache(A, 250)  # smaller than S: starts over again and again
    top = Top([part], offsets, cache)
    for _ in range(12):
        v = rng.normal(size=d + 1)
        chosen = np.sort(rng.choice(top.ids.size, size=int(rng.integers(1, 250)),
                                    replace=False))
        np.testing.assert_array_equal(cache.exact(top, chosen, v),
                                      index.score(top.ids[chosen], v))
