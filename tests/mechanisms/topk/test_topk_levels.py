"""The per-level sequence counts against brute-force enumeration (deterministic, exact)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastmwem.mechanisms.topk._levels import (
    SortedCounts,
    default_level_cap,
    error_levels,
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
         ([10**15 + 3, 10**15, 10**15 + 1, 10**15 + 3], 2), ([1], 1)]


@pytest.mark.parametrize("counts,k", CASES)
def test_topk_level_counts_match_enumeration(counts, k):
    sc = SortedCounts(np.array(counts, dtype=np.int64), k)
    brute = _brute(counts, k)
    masses = np.exp(level_log_masses(sc, np.arange(sc.span + 1)))
    for e in range(sc.span + 1):
        expected = sum(n for (lev, _), n in brute.items() if lev == e)
        assert masses[e] == pytest.approx(expected, rel=1e-12, abs=0)
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
                gaps = sc.top - sc.desc[seq]
                assert len(set(seq.tolist())) == 4
                assert gaps.max() == e and int(np.argmax(gaps == e)) == p


def test_topk_default_cap_is_capped_by_the_range():
    sc = SortedCounts(np.array([5, 3, 3, 1, 0], dtype=np.int64), 2)
    assert default_level_cap(sc, 1e-6, 1e-10) == sc.span
    big = SortedCounts(np.arange(0, 10**9, 10**5, dtype=np.int64), 3)
    cap = default_level_cap(big, 0.5, 1e-10)
    assert 0 < cap < big.span


def test_topk_sparse_levels_agree_with_the_dense_table():
    # Few distinct counts over a wide range: only differences of counts can carry sequences.
    rng = np.random.default_rng(8)
    counts = rng.choice([0, 700, 1500, 1501, 4000, 9000], size=40)
    sc = SortedCounts(counts.astype(np.int64), 5)
    sparse = error_levels(sc, sc.span)
    assert sparse.size < (sc.span + 1) // 2
    dense = level_log_masses(sc, np.arange(sc.span + 1))
    assert np.all(np.isneginf(np.delete(dense, sparse)))
    np.testing.assert_allclose(level_log_masses(sc, sparse), dense[sparse], rtol=1e-12)
    # The input of the sparse exact-law cases in test_topk_joint_law.py takes this path.
    small = SortedCounts(np.array([0, 100, 100, 300, 130, 230], dtype=np.int64), 2)
    assert error_levels(small, small.span).size < 20
    assert error_levels(small, 150).size < 20
