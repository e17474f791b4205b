"""The lazy mechanism's tail ids: the same accepted sequence as a one-by-one pass over the draws.

``_distinct_ids`` accepts, batch by batch, each drawn id not forbidden and not accepted before,
in draw order (a uniform ordered sample without replacement). It used to do so in a Python loop
over the draws (milliseconds for the thousand tail ids of a flat law); it now does it in array
operations, or with numba against a hash set, and must accept exactly the same ids from the same
generator either way.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.mechanisms import _lazy_draws
from fastmwem.mechanisms._lazy_draws import _distinct_ids


def _one_by_one(generator: np.random.Generator, n: int, forbidden: np.ndarray,
                t: int) -> np.ndarray:
    chosen: dict[int, None] = {}
    while len(chosen) < t:
        need = t - len(chosen)
        draw = generator.integers(0, n, size=need + need // 2 + 16, dtype=np.int64)
        if forbidden.size:
            pos = np.minimum(np.searchsorted(forbidden, draw), forbidden.size - 1)
            draw = draw[forbidden[pos] != draw]
        for x in draw.tolist():
            chosen.setdefault(x)
            if len(chosen) == t:
                break
    return np.fromiter(chosen, dtype=np.int64, count=t)


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Each test runs with the compiled acceptance (numba) and with the array version."""
    if request.param == "numpy":
        monkeypatch.setattr(_lazy_draws, "_kernels", None)
    elif _lazy_draws._tail_kernels() is None:
        pytest.skip("numba is not installed")
    return request.param


@pytest.mark.parametrize("n, n_forbidden, t", [(10**6, 1000, 1500), (50, 5, 17), (200, 0, 90),
                                               (1000, 400, 99), (7, 0, 1)])
def test_tail_ids_are_the_one_by_one_pass(n, n_forbidden, t, path):
    for seed in range(5):
        setup = np.random.default_rng(seed)
        forbidden = np.sort(setup.choice(n, size=n_forbidden, replace=False)).astype(np.int64)
        got = _distinct_ids(np.random.default_rng(100 + seed), n, forbidden, t)
        expected = _one_by_one(np.random.default_rng(100 + seed), n, forbidden, t)
        np.testing.assert_array_equal(got, expected)
        assert np.unique(got).size == t and not np.isin(got, forbidden).any()


def test_many_repeats_in_a_small_range(path):
    # Half the range: batches full of repeats, several batches.
    n, t = 64, 31
    got = _distinct_ids(np.random.default_rng(9), n, np.empty(0, dtype=np.int64), t)
    np.testing.assert_array_equal(
        got, _one_by_one(np.random.default_rng(9), n, np.empty(0, dtype=np.int64), t))
