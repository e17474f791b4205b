"""Compiled reuse passes: the same multiplicative-weights steps as the per-query update."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from fastmwem import mwem
from fastmwem.data import Dataset, Domain
from fastmwem.models import passes as _passes
from fastmwem.models.state import MWState, clipped_targets
from fastmwem.workloads import RandomCountingQueries


def _setup(seed=0, n_measured=30):
    domain = Domain([f"x{i}" for i in range(6)], [2] * 6)
    workload = RandomCountingQueries(domain, 200, rng=np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    queries = rng.choice(workload.n_queries, size=n_measured, replace=False)
    # measured counts, some outside [0, total] so that the clipping matters
    measured = rng.uniform(-50, 1100, size=n_measured)
    start = rng.dirichlet(np.ones(domain.size))
    return domain, workload, queries, measured, start


def _slow(domain, workload, queries, measured, start, passes):
    state = MWState(domain, start.copy(), 1000.0)
    for _ in range(passes):
        for q, value in zip(queries, measured):
            state.update_query(workload, int(q), float(value))
    return state.distribution


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
def test_fit_queries_equals_the_per_query_updates(backend, monkeypatch):
    if backend == "numpy":
        monkeypatch.setattr(_passes, "_kernel", lambda: None)
    elif _passes._kernel() is None:
        pytest.skip("numba is not installed (pip install 'fastmwem[numba]')")
    domain, workload, queries, measured, start = _setup()
    expected = _slow(domain, workload, queries, measured, start, passes=7)
    p = start.copy()
    rows = np.stack([workload.row(int(q)) for q in queries])
    targets = clipped_targets(measured, 1.0, True, 1000.0)
    done = _passes.fit_queries(p, rows, targets, 1.0, 7, 0.0)
    assert done == 7
    np.testing.assert_allclose(p, expected, rtol=1e-10, atol=1e-15)
    assert abs(p.sum() - 1) < 1e-12


def test_fit_queries_stops_at_the_tolerance():
    domain, workload, queries, _, start = _setup(n_measured=5)
    rows = np.stack([workload.row(int(q)) for q in queries])
    # consistent measurements (answers of a real distribution), which the passes converge to
    measured = 1000.0 * rows @ np.random.default_rng(7).dirichlet(np.ones(domain.size))
    targets = clipped_targets(measured, 1.0, True, 1000.0)
    p = start.copy()
    done = _passes.fit_queries(p, rows, targets, 1.0, 500, 1e-6)
    assert 1 < done < 500
    # one more pass moves it by less than the tolerance (it had converged to that level)
    before = p.copy()
    _passes.fit_queries(p, rows, targets, 1.0, 1, 0.0)
    assert np.abs(p - before).sum() < 1e-6


def test_single_query_mwem_is_unchanged_by_the_compiled_passes(monkeypatch):
    """The run with compiled passes equals the run through the per-query updates."""
    domain = Domain([f"x{i}" for i in range(5)], [2] * 5)
    workload = RandomCountingQueries(domain, 300, rng=np.random.default_rng(3))
    rng = np.random.default_rng(4)
    dataset = Dataset(rng.integers(0, 2, size=(500, 5)), domain)
    options = dict(epsilon=1.0, rounds=12, reuse_passes=5, total=500, progress=False)
    fast = mwem(dataset, workload, rng=np.random.default_rng(9), **options)
    monkeypatch.setattr(sys.modules["fastmwem.release.mwem.rounds"], "MAX_PASS_ROWS_CELLS", 0)
    slow = mwem(dataset, workload, rng=np.random.default_rng(9), **options)
    assert fast.selected == slow.selected
    np.testing.assert_allclose(fast.histogram, slow.histogram, rtol=1e-8, atol=1e-9)


def _dense_loop(p, rows, targets, s, passes, tolerance, scratch):
    """The compiled loop before it summed answers over nonzero cells only."""
    n_rows, n_cells = rows.shape
    for done in range(1, passes + 1):
        for j in range(n_cells):
            scratch[j] = p[j]
        for i in range(n_rows):
            current = 0.0
            for j in range(n_cells):
                current += rows[i, j] * p[j]
            step = (targets[i] - current) / (2.0 * s * s)
            unit = np.exp(step)  # the factor of a cell with q(x) = 1, the common case
            mass = 0.0
            for j in range(n_cells):
                value = rows[i, j]
                if value == 1.0:
                    p[j] *= unit
                elif value != 0.0:
                    p[j] *= np.exp(step * value)
                mass += p[j]
            for j in range(n_cells):
                p[j] /= mass
        if tolerance > 0:
            moved = 0.0
            for j in range(n_cells):
                moved += abs(p[j] - scratch[j])
            if moved < tolerance:
                return done
    return passes


def test_the_compiled_passes_sum_the_answers_of_the_dense_loop_bit_for_bit():
    """The passes read the rows by their nonzero cells (the answer <q, p> summed over those,
    the factors applied to those); they must give the dense loop's bits, for 0/1 rows and for
    rows with other values and rows of zeros."""
    if _passes._kernel() is None:
        pytest.skip("numba is not installed (pip install 'fastmwem[numba]')")
    from numba import njit

    dense = njit(_dense_loop)
    rng = np.random.default_rng(12)
    for case in range(12):
        cells, n_rows = int(rng.integers(2, 300)), int(rng.integers(1, 40))
        rows = (rng.random((n_rows, cells)) < rng.uniform(0.05, 0.95)).astype(np.float64)
        if case % 3 == 1:  # other values than 1, and a row of zeros
            rows *= rng.choice([1.0, 0.5, -1.0, 2.0], size=rows.shape)
            rows[0] = 0.0
        s = float(np.abs(rows).max()) or 1.0
        start = rng.dirichlet(np.full(cells, 0.3))
        targets = np.clip(rows @ rng.dirichlet(np.ones(cells)) + rng.normal(size=n_rows) * 0.05,
                          -s, s)
        tolerance = 0.0 if case % 2 else 1e-6
        want, got = start.copy(), start.copy()
        done_want = dense(want, rows, targets, s, 9, tolerance, np.empty(cells))
        done_got = _passes.fit_queries(got, rows, targets, s, 9, tolerance)
        assert done_got == done_want
        assert got.tobytes() == want.tobytes()


def test_sparse_rows_added_one_at_a_time_hold_the_rows():
    rows, sparse = [], _passes.SparseRows()
    rng = np.random.default_rng(3)
    for i in range(300):
        row = (rng.random(30) < 0.5) * rng.choice([1.0, -0.5, 2.0], size=30)
        if i % 3 == 0:  # a counting query
            row = (row != 0.0).astype(np.float64)
        if i % 7 == 0:
            row[:] = 0.0
        rows.append(row)
        sparse.add(row)
        assert len(sparse) == len(rows)
        np.testing.assert_array_equal(sparse.dense(30), np.stack(rows))
    cells, starts, values, ones, binary = sparse.arrays()
    assert cells.dtype == np.int32 and starts[-1] == cells.size == values.size
    dense = np.stack(rows)
    bits = (ones[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    np.testing.assert_array_equal(bits.reshape(len(rows), -1)[:, :30], dense == 1.0)
    np.testing.assert_array_equal(binary, np.all((dense == 0.0) | (dense == 1.0), axis=1))


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
def test_sparse_and_dense_rows_fit_alike(backend, monkeypatch):
    if backend == "numpy":
        monkeypatch.setattr(_passes, "_kernel", lambda: None)
    elif _passes._kernel() is None:
        pytest.skip("numba is not installed (pip install 'fastmwem[numba]')")
    domain, workload, queries, measured, start = _setup(seed=4)
    rows = np.stack([workload.row(int(q)) for q in queries])
    targets = clipped_targets(measured, 1.0, True, 1000.0)
    dense, sparse = start.copy(), start.copy()
    _passes.fit_queries(dense, rows, targets, 1.0, 6, 0.0)
    _passes.fit_queries(sparse, _passes.SparseRows.of(rows), targets, 1.0, 6, 0.0)
    assert sparse.tobytes() == dense.tobytes()
