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
