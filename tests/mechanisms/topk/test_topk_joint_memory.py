"""Memory of the joint samplers: bounded by a constant per item, whatever the counts look like.

The working memory used to be about 41 bytes per item (a copy of the counts, their negation, the
sort permutation, the sorted counts and their reverse) on every input, and sizable tables could
follow the number of distinct counts. ``tracemalloc`` sees numpy's allocations, so the peak of a
call is measured exactly (the caller's counts are not part of it).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from fastmwem.mechanisms.topk import JointTopK, PNFJointTopK, PrunedJointTopK
from fastmwem.mechanisms.topk._levels import SortedCounts

D = 1_000_000
# Per item: the one copy of the counts within reach of the k-th (8 bytes) and a mask (1 byte),
# with room to spare; plus the fixed chunks of the level pass and of the position lookup.
BYTES_PER_ITEM = 12
FIXED_BYTES = 16 << 20


def _counts(kind: str) -> np.ndarray:
    rng = np.random.default_rng(31)
    if kind == "log-normal":
        return np.rint(rng.lognormal(3.0, 2.0, D)).astype(np.int64)
    if kind == "all distinct":
        return rng.permutation(D).astype(np.int64)
    if kind == "all distinct, wide":
        return rng.permutation(D).astype(np.int64) * 1_000
    if kind == "all equal":
        return np.full(D, 12, dtype=np.int64)
    if kind == "five values":
        return rng.integers(0, 5, D).astype(np.int64)
    return rng.integers(0, 2_000, D).astype(np.int64)  # "dense band": every item in reach


def _peak(call, *args, **kwargs) -> int:
    tracemalloc.start()
    try:
        call(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


KINDS = ["log-normal", "all distinct", "all distinct, wide", "all equal", "five values",
         "dense band"]


@pytest.mark.parametrize("cls", [JointTopK, PNFJointTopK, PrunedJointTopK])
def test_topk_joint_peak_memory_is_bounded_per_item_for_every_count_shape(cls):
    mech = cls(100, 1.0)
    peaks = {}
    for kind in KINDS:
        counts = _counts(kind)
        peaks[kind] = _peak(mech.select, counts, rng=np.random.default_rng(2))
    assert max(peaks.values()) <= BYTES_PER_ITEM * D + FIXED_BYTES, peaks


def test_topk_joint_tables_follow_the_reach_not_the_distinct_counts():
    # Many distinct counts (a permutation) or five: the tabulated values stay within depth + k,
    # and the counts out of reach of the k-th largest are never copied.
    k, depth = 100, 2_000
    for kind in KINDS:
        counts = _counts(kind)
        sc = SortedCounts(counts, k, depth)
        assert sc.vals.size <= depth + k
        assert sc.n == int(np.sum(counts >= sc.floor))
        assert sc.vals.nbytes + sc.starts.nbytes <= 16 * (depth + k + 1)
    wide = _counts("all distinct, wide")
    peak = _peak(SortedCounts, wide, k, depth)
    assert peak <= 2 * D + FIXED_BYTES  # a mask and the sample, no copy of all the counts
