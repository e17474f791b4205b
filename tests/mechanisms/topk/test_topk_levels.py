"""The per-level sequence counts against brute-force enumeration (deterministic, exact), and the
window of counts they are built from."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastmwem.mechanisms.topk import _levels
from fastmwem.mechanisms.topk._levels import (
    SortedCounts,
    default_level_cap,
    kth_largest,
    level_log_masses,
    level_row,
    sequence_in_cell,
)


def _brute(counts, k):
    """{(error, first position of that error): number of sequences} over sorted positions."""
    desc = sorted(counts, reverse=True)
    table: dict[tuple[int, int], int] = {}
    for seq in itertools.permutations(range(len(counts)), k):
        gaps = [desc[i] - desc[s] for i, s in enumerate(seq)]
        e = max(gaps)
        key = (e, gaps.index(e))
        table[key] = table.get(key, 0) + 1
    return table


CASES = [([5, 3, 3, 1, 0], 3), ([4, 4, 4, 4], 2), ([0, 0, 0], 3), ([9, 1, 7, 7, 2, 2, 0], 4),
         ([10**15 + 3, 10**15, 10**15 + 1, 10**15 + 3], 2), ([1], 1),
         ([2**63 - 1, 2**63 - 1, 2**63 - 3, 5], 2)]


@pytest.mark.parametrize("counts,k", CASES)
def test_topk_level_counts_match_enumeration(counts, k):
    sc = SortedCounts(np.array(counts, dtype=np.int64), k)
    brute = _brute(counts, k)
    levels, log_masses = level_log_masses(sc)
    expected = {}
    for (lev, _), n in brute.items():
        expected[lev] = expected.get(lev, 0) + n
    # exactly the levels holding a sequence are listed, in increasing order
    assert levels.tolist() == sorted(expected)
    for e, lm in zip(levels.tolist(), log_masses):
        assert np.exp(lm) == pytest.approx(expected[e], rel=1e-12, abs=0)
    for e in levels.tolist():
        _, _, row = level_row(sc, e)
        for p in range(k):
            assert np.exp(row[p]) == pytest.approx(brute.get((e, p), 0), rel=1e-12, abs=0)


def test_topk_random_counts_match_enumeration():
    rng = np.random.default_rng(41)
    for _ in range(30):
        d = int(rng.integers(1, 7))
        k = int(rng.integers(1, d + 1))
        counts = rng.integers(0, 6, size=d).tolist()
        test_topk_level_counts_match_enumeration(counts, k)


def test_topk_cell_sampler_stays_in_its_cell():
    counts = [9, 1, 7, 7, 2, 2, 0]
    sc = SortedCounts(np.array(counts, dtype=np.int64), 4)
    rng = np.random.default_rng(3)
    for e in range(sc.span + 1):
        t_prev, t_cur, row = level_row(sc, e)
        for p in np.flatnonzero(np.isfinite(row)):
            for _ in range(20):
                seq = sequence_in_cell(t_prev, t_cur, int(p), rng)
                gaps = sc.top - sc.desc_values(seq)
                assert len(set(seq.tolist())) == 4
                assert gaps.max() == e and int(np.argmax(gaps == e)) == p
                items = sc.items(seq)
                assert np.array_equal(sc.top - np.asarray(counts)[items], gaps)


def test_topk_default_cap_is_capped_by_the_range():
    assert default_level_cap(5, 2, 5, 1e-6, 1e-10) == 5
    cap = default_level_cap(10_000, 3, 10**9 - 10**5, 0.5, 1e-10)
    assert 0 < cap < 10**9 - 10**5


def _logsumexp(row):
    m = np.max(row)
    return m if not np.isfinite(m) else m + np.log(np.sum(np.exp(row - m)))


def _count_vectors(rng, d):
    return {
        "ties": rng.integers(0, 6, d),
        "heavy": np.rint(rng.lognormal(3.0, 2.0, d)),
        "sparse wide": rng.choice([0, 700, 1500, 1501, 4000, 9000, 10**6], size=d),
        "distinct": rng.permutation(d) * 3,
        "near 2^62": rng.integers(0, 10**5, d) + 2**62,
        "equal": np.full(d, 17),
    }


@pytest.mark.parametrize("kind", ["ties", "heavy", "sparse wide", "distinct", "near 2^62",
                                  "equal"])
def test_topk_level_pass_agrees_with_the_rows(kind):
    # The level pass (log-ratios of prefix products) against the per-level rows (sums of logs),
    # two independent formulas, at sizes brute force cannot reach, for several depths; levels
    # left out of the pass must have no sequence.
    rng = np.random.default_rng(12)
    counts = _count_vectors(rng, 600)[kind].astype(np.int64)
    for k, depth in [(1, None), (7, 40), (25, 3000), (60, None)]:
        sc = SortedCounts(counts, k, depth)
        levels, log_masses = level_log_masses(sc)
        assert levels[0] == 0 and np.all(np.diff(levels) > 0) and levels[-1] <= sc.depth
        check = np.unique(np.concatenate((levels, rng.integers(0, sc.depth + 1, 200))))
        listed = dict(zip(levels.tolist(), log_masses.tolist()))
        for e in check.tolist():
            ref = _logsumexp(level_row(sc, e)[2])
            if e in listed:
                assert listed[e] == pytest.approx(ref, rel=1e-12, abs=1e-9)
            else:
                assert ref == -np.inf


@pytest.mark.parametrize("kind", ["ties", "heavy", "sparse wide", "distinct"])
def test_topk_window_is_the_top_of_the_full_table(kind, monkeypatch):
    # A window cut at depth L gives the levels <= L of the full table, also when the level pass
    # works one level at a time (and jumps over empty stretches).
    rng = np.random.default_rng(13)
    counts = _count_vectors(rng, 500)[kind].astype(np.int64)
    full_levels, full_masses = level_log_masses(SortedCounts(counts, 9))
    for depth in [0, 1, 30, 1000]:
        sc = SortedCounts(counts, 9, depth)
        assert sc.n == int(np.sum(counts >= max(counts.min(), np.sort(counts)[-9] - depth)))
        keep = full_levels <= sc.depth
        for chunk in [None, 1]:
            if chunk is not None:
                monkeypatch.setattr(_levels, "_CHUNK_EVENTS", chunk)
            levels, masses = level_log_masses(sc)
            assert np.array_equal(levels, full_levels[keep])
            np.testing.assert_allclose(masses, full_masses[keep], rtol=1e-12)
            monkeypatch.undo()


@pytest.mark.parametrize("kind", ["ties", "heavy", "sparse wide", "distinct", "equal"])
@pytest.mark.parametrize("chunk", [None, 7])
def test_topk_positions_map_to_items_of_the_right_counts(kind, chunk, monkeypatch):
    if chunk is not None:
        monkeypatch.setattr(_levels, "_CHUNK_ITEMS", chunk)
    rng = np.random.default_rng(14)
    counts = _count_vectors(rng, 300)[kind].astype(np.int64)
    sc = SortedCounts(counts, 5, 50)
    positions = rng.permutation(sc.n)[: min(sc.n, 40)]
    items = sc.items(positions)
    assert len(set(items.tolist())) == items.size
    assert np.array_equal(counts[items], sc.desc_values(positions))
    assert np.array_equal(sc.desc_values(np.arange(sc.n)),
                          np.sort(counts[counts >= sc.floor])[::-1])
    # all positions at once: a bijection onto the items of the window
    every = sc.items(np.arange(sc.n))
    assert np.array_equal(np.sort(every), np.flatnonzero(counts >= sc.floor))


def test_topk_kth_largest_matches_a_full_partition():
    rng = np.random.default_rng(15)
    d = 5 * _levels._SAMPLE
    layouts = {
        "heavy": np.rint(rng.lognormal(3.0, 2.0, d)),
        "ties": rng.integers(0, 3, d),
        "equal": np.zeros(d),
        # the large counts avoid the sample's stride: the guess fails and all are partitioned
        "off stride": np.where(np.arange(d) % (d // _levels._SAMPLE) == 1, 10**6, 1),
        "huge": rng.integers(0, 2**62, d),
    }
    for values in layouts.values():
        counts = values.astype(np.int64)
        for k in [1, 2, 500, 3000, d // 2, d]:
            assert kth_largest(counts, k) == np.sort(counts)[d - k]


def test_topk_window_memory_does_not_grow_with_the_distinct_counts():
    # The tabulated structure holds at most depth + k distinct values whatever the counts, and
    # the per-item copy is only of the counts within reach of the k-th largest.
    rng = np.random.default_rng(16)
    d, k, depth = 200_000, 100, 2_000
    for counts in [rng.permutation(d).astype(np.int64) * 7,            # all distinct
                   np.rint(rng.lognormal(3.0, 2.0, d)).astype(np.int64),
                   rng.integers(0, 4, d).astype(np.int64)]:            # four values
        sc = SortedCounts(counts, k, depth)
        assert sc.vals.size <= depth + k
        assert sc.vals.nbytes + sc.starts.nbytes <= 16 * (depth + k + 1)
