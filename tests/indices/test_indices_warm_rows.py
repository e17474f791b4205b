"""The warm-start index's 16-bit key rows: proven scan errors, full scans that keep the region in
one pass, and searches identical to the float rows' (and to a brute force) along query walks.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import numba_available
from fastmwem.indices._topk import update_norms
from fastmwem.indices._warm_rows import FloatRows, Int16Rows
from fastmwem.indices.warm import WarmStartIndex

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _rows(A: np.ndarray, offsets: np.ndarray) -> Int16Rows:
    keys = np.hstack([np.asarray(A, dtype=np.float64), offsets[:, None]])
    norms = update_norms((0.0, 0.0, 0.0), keys)
    rows = Int16Rows.build(A, offsets, norms, A.shape[1] + 1)
    assert rows is not None
    return rows


def _exact(A: np.ndarray, offsets: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.multiply(np.asarray(A, dtype=np.float64), v[:-1]).sum(axis=1) + v[-1] * offsets


def _keys(rng: np.random.Generator, kind: str, m: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == "lp":  # the scalar LP's keys: A in [0, 1) (float32), offsets -b
        A = rng.random((m, d), dtype=np.float32)
        return A, -(A @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05)
    if kind == "clipped":  # entries just below the top power of two round past 32767
        A = 1.0 - rng.random((m, d)) * 2.0**-17
        return A, -rng.random(m)
    if kind == "spread":  # rows of very different sizes, signed, float64
        A = rng.normal(size=(m, d)) * np.exp(rng.normal(size=(m, 1)) * 6)
        return A, rng.normal(size=m) * 1e-3
    raise ValueError(kind)


def _queries(rng: np.random.Generator, d: int) -> list[np.ndarray]:
    simplex = np.append(rng.dirichlet(np.ones(d)), 1.0)
    signed = rng.normal(size=d + 1)
    tiny = rng.normal(size=d + 1) * 1e-300  # entries below float32's range once scaled
    mixed = signed.copy()
    mixed[::3] *= 1e-40
    return [simplex, signed, tiny, mixed, np.zeros(d + 1), np.append(np.zeros(d), -3.0)]


@pytest.mark.parametrize("kind", ["lp", "clipped", "spread"])
def test_the_scan_error_bound_holds(kind):
    rng = np.random.default_rng(0)
    m, d = 5000, 9
    A, offsets = _keys(rng, kind, m, d)
    rows = _rows(A, offsets)
    assert 0.0 <= rows.unit <= 1.0
    for v in _queries(rng, d):
        approx, error = rows.scan(v)
        gap = np.abs(approx - _exact(A, offsets, v))
        assert np.all(gap <= error), (kind, float(gap.max()), error)


def test_a_full_scan_keeps_every_row_above_the_bound_it_reports():
    # Above 64 blocks the threshold is guessed from 16 sampled blocks; the region is whatever
    # reaches it, and every row left out must score at most the reported bound.
    rng = np.random.default_rng(1)
    m, d = 70 * 1024 + 37, 5
    A, offsets = _keys(rng, "lp", m, d)
    rows = _rows(A, offsets)
    v = np.append(rng.dirichlet(np.ones(d)), 1.0)
    approx, _ = rows.scan(v)
    positions, kept, rest, _, region = rows.best(v, 4000)
    assert 3000 < positions.size < 2 * 4000 + 4096
    np.testing.assert_array_equal(kept, approx[positions])
    outside = np.setdiff1d(np.arange(m), positions)
    assert approx[outside].max() <= rest
    np.testing.assert_array_equal(region.scan(v)[0], approx[positions])  # the copied rows


def test_a_full_buffer_leaves_rows_out_under_the_bound():
    rng = np.random.default_rng(2)
    m, d = 9000, 4
    A, offsets = _keys(rng, "lp", m, d)
    rows = _rows(A, offsets)
    v = np.append(rng.dirichlet(np.ones(d)), 1.0)
    approx, _ = rows.scan(v)
    y, scale, _ = rows._query(v)
    threshold = float(np.sort(approx)[-500])
    positions, _, region, rest = rows._kernels.select(rows.cols, m, y, scale, threshold, 100)
    assert positions.size == 100 and region.shape == (d + 1, 100)
    outside = np.setdiff1d(np.arange(m), positions)
    assert rest >= approx[outside].max() >= threshold  # the rows that did not fit count


@pytest.mark.parametrize("kind", ["lp", "spread"])
def test_compact_and_float_rows_give_the_same_searches(kind):
    # Along an MWU-like walk with jumps and arbitrary queries; enough rows for the sampled full
    # scan. The searches must agree bit for bit (the same exact scores, the same top k) and
    # with a brute force.
    rng = np.random.default_rng(3)
    m, d = 70 * 1024, 6
    A, offsets = _keys(rng, kind, m, d)
    compact = WarmStartIndex(A, offsets, compact=True)
    plain = WarmStartIndex(A, offsets, compact=False)
    assert isinstance(compact._main_rows(), Int16Rows)
    assert isinstance(plain._main_rows(), FloatRows)
    x = rng.dirichlet(np.ones(d))
    for step in range(60):
        x = x * np.exp(rng.normal(size=d) * 0.05)
        x /= x.sum()
        v = np.append(x, 1.0) if step % 10 else rng.normal(size=d + 1)
        k = int(rng.integers(1, 400))
        got = compact.search(v[None, :], k)
        np.testing.assert_array_equal(got[1], plain.search(v[None, :], k)[1])
        np.testing.assert_array_equal(got[0], plain.search(v[None, :], k)[0])
        truth = np.sort(_exact(A, offsets, v))[::-1][:k]
        np.testing.assert_allclose(got[0][0], truth, rtol=0, atol=1e-9)
    if kind == "lp":  # keys of one size: the cache runs at every level
        assert 2 <= compact.rescans < 30 and compact.region_rescans >= 1


def test_queries_beyond_the_compact_range_are_scored_exactly():
    rng = np.random.default_rng(4)
    m, d = 70 * 1024, 3
    A, offsets = _keys(rng, "lp", m, d)
    index = WarmStartIndex(A, offsets, compact=True)
    for v in (np.array([1e300, 1.0, 0.0, 1.0]), np.array([1e-300, 0.0, 0.0, 1e-300])):
        assert not index._main_rows().handles(v)
        scores, _ = index.search(v[None, :], 7)
        np.testing.assert_array_equal(scores[0], np.sort(_exact(A, offsets, v))[::-1][:7])


def test_compact_is_checked():
    with pytest.raises(TypeError, match="compact"):
        WarmStartIndex(np.ones((3, 2)), np.zeros(3), compact="yes")
