"""RandomCountingQueries: reproducibility, density, bit packing, tiled products, validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fastmwem.data.domain import Domain
from fastmwem.workloads import RandomCountingQueries
from fastmwem.workloads import counting as counting_module


def test_reproducible_with_a_seed_and_seed_dependent() -> None:
    d = Domain(["a", "b"], [7, 9])
    a = RandomCountingQueries(d, 20, rng=3)
    b = RandomCountingQueries(d, 20, rng=3)
    c = RandomCountingQueries(d, 20, rng=4)
    np.testing.assert_array_equal(a.packed, b.packed)
    assert not np.array_equal(a.packed, c.packed)
    gen = np.random.default_rng(5)
    first = RandomCountingQueries(d, 5, rng=gen)
    second = RandomCountingQueries(d, 5, rng=gen)  # a shared Generator moves on
    assert not np.array_equal(first.packed, second.packed)


@pytest.mark.parametrize("density", [0.5, 0.1, 0.9])
def test_entries_are_bernoulli_density(density: float) -> None:
    # Two-sided binomial test at alpha = 1e-6; power: the same count must reject density +- 0.02.
    alpha = 1e-6
    d = Domain(["a", "b"], [50, 40])
    w = RandomCountingQueries(d, 200, rng=17, density=density)
    ones = int(w.dense().sum())
    trials = 200 * d.size
    assert stats.binomtest(ones, trials, density).pvalue > alpha
    for wrong in (density - 0.02, density + 0.02):
        assert stats.binomtest(ones, trials, wrong).pvalue < alpha


def test_padding_bits_are_zero_and_rows_have_domain_length() -> None:
    d = Domain(["a"], [13])  # 13 cells: 2 bytes per row, 3 padding bits
    w = RandomCountingQueries(d, 64, rng=1)
    assert w.packed.shape == (64, 2)
    assert np.all(w.packed[:, -1] & 0b00000111 == 0)
    assert w.row(0).shape == (13,)
    assert set(np.unique(w.dense())) <= {0.0, 1.0}


def test_tiles_cover_rows_and_columns_beyond_one_tile() -> None:
    # More cells than one column tile and more queries than one row tile.
    d = Domain(["a", "b"], [3, 8 * counting_module._COLS + 5])
    n = counting_module._ROWS + 7
    w = RandomCountingQueries(d, n, rng=2)
    h = np.random.default_rng(3).random(d.size)
    bits = np.unpackbits(w.packed, axis=1, count=d.size).astype(np.float64)
    np.testing.assert_allclose(w.answer(h), bits @ h, rtol=1e-11)
    weights = np.random.default_rng(4).normal(size=n)
    np.testing.assert_allclose(w.answer_transpose(weights), bits.T @ weights, rtol=1e-9, atol=1e-9)


def test_empty_query_has_zero_sensitivity() -> None:
    d = Domain(["a"], [2])
    w = RandomCountingQueries(d, 200, rng=0, density=0.05)
    empty = ~w.dense().any(axis=1)
    assert empty.any() and not empty.all()
    np.testing.assert_array_equal(w.group_sensitivity, np.where(empty, 0.0, 1.0))
    assert w.query_sensitivity == 1.0


def test_memory_limit_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting_module, "MAX_PACKED_BYTES", 1000)
    with pytest.raises(ValueError, match="MAX_PACKED_BYTES"):
        RandomCountingQueries(Domain(["a"], [8000]), 2, rng=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_queries": 0}, ValueError, "n_queries"),
        ({"n_queries": 2.0}, TypeError, "n_queries"),
        ({"n_queries": 2, "density": 0.0}, ValueError, "density"),
        ({"n_queries": 2, "density": 1.5}, ValueError, "density"),
        ({"n_queries": 2, "density": float("nan")}, ValueError, "density"),
        ({"n_queries": 2, "density": "0.5"}, TypeError, "density"),
        ({"n_queries": 2, "rng": 1.5}, TypeError, "rng"),
    ],
)
def test_bad_arguments_rejected(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        RandomCountingQueries(Domain(["a"], [4]), **kwargs)


def test_domain_must_be_a_domain() -> None:
    with pytest.raises(TypeError, match="domain"):
        RandomCountingQueries([4], 3, rng=0)


def test_density_one_is_all_ones() -> None:
    d = Domain(["a", "b"], [3, 3])
    w = RandomCountingQueries(d, 4, rng=0, density=1.0)
    np.testing.assert_array_equal(w.dense(), np.ones((4, 9)))
