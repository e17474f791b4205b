"""Private schema drafting: the quantile and category mechanisms, the budget, the specs."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import softmax

from fastmwem.accounting import Accountant, BudgetExceededError
from fastmwem.data import Categorical, Integer, Numeric, Schema
from fastmwem.data.schema import draft as draft_module
from fastmwem.data.schema.draft import (
    UndeclaredCategoriesError,
    draft_schema,
    plan_columns,
    private_cuts,
    private_quantile,
    quantile_utilities,
    stability_threshold,
    stable_categories,
)
from fastmwem.mechanisms.discrete import discrete_laplace_pmf
from fastmwem.testing import chi_square_pvalue

ALPHA = 1e-4

# Few records with ties, a grid reaching below and above them, so that the law has plateaus.
VALUES = np.sort(np.array([1.0, 2.0, 2.0, 2.0, 3.5, 4.0, 4.0, 7.0, 9.0, 9.5]))
GRID = np.array([-3.0, 0.0, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0, 9.0, 12.0, 20.0])


def _exact_law(values, grid, q, epsilon):
    """The exponential mechanism's law, from utilities counted one grid point at a time."""
    t = q * len(values)
    utility = []
    for g in grid:
        below = sum(1 for v in values if v < g)
        upto = sum(1 for v in values if v <= g)
        utility.append(-max(below - t, t - upto, 0.0))
    return softmax(np.array(utility) * epsilon / 2)


def _draws(epsilon, n, seed, q=0.3):
    rng = np.random.default_rng(seed)
    picks = [private_quantile(VALUES, GRID, q, epsilon, rng) for _ in range(n)]
    return np.bincount(picks, minlength=GRID.size)


def test_quantile_utilities_are_minus_the_distance_to_the_tied_ranks():
    u = quantile_utilities(VALUES, GRID, 0.3)  # t = 3
    # 2.0 has ranks [1, 4]: holds t; 1.5 has rank 1; 3.0 has rank 4; -3 has rank 0
    assert u[GRID.tolist().index(2.0)] == 0.0
    assert u[GRID.tolist().index(1.5)] == -2.0 and u[GRID.tolist().index(3.0)] == -1.0
    assert u[0] == -3.0 and u[-1] == -7.0


@pytest.mark.parametrize("q, epsilon", [(0.3, 1.0), (0.5, 0.4), (0.9, 2.0)])
def test_private_quantile_follows_the_exponential_mechanism_law(q, epsilon):
    law = _exact_law(VALUES, GRID, q, epsilon)
    np.testing.assert_allclose(law, softmax(quantile_utilities(VALUES, GRID, q) * epsilon / 2))
    counts = _draws(epsilon, 20_000, seed=int(q * 100), q=q)
    assert chi_square_pvalue(counts, law) > ALPHA


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_wrong_epsilon_fails_the_law_test(factor):
    # power: the same test rejects draws made at twice (or half) the epsilon of the law
    law = _exact_law(VALUES, GRID, 0.3, 1.0)
    counts = _draws(factor * 1.0, 3_000, seed=7)
    assert chi_square_pvalue(counts, law) < ALPHA


def test_private_cuts_find_the_quantiles_at_a_large_epsilon():
    rng = np.random.default_rng(0)
    values = rng.normal(50, 10, 20_000)
    grid = np.linspace(0, 100, 1001)
    cuts = private_cuts(values, grid, 8, 50.0, rng)
    want = np.quantile(values, np.arange(1, 8) / 8)
    assert np.all(np.diff(cuts) >= 0) and np.isin(cuts, grid).all()
    np.testing.assert_allclose(cuts, want, atol=0.25)


def test_the_outermost_cuts_stay_near_the_records_on_a_wide_grid():
    # below the records every grid point ties; the search near the released cuts keeps the
    # lowest cut at the records instead of anywhere among 10**4 integers
    rng = np.random.default_rng(1)
    values = rng.poisson(3, 20_000).astype(float)
    grid = draft_module.INTEGER_GRID
    cuts = private_cuts(values, grid, 16, 0.025, rng)
    assert cuts.min() >= -4 and cuts.max() <= 12


def test_the_threshold_bounds_the_release_of_a_single_record():
    for eps, delta in [(1.0, 1e-3), (0.3, 1e-9), (0.01, 1e-6)]:
        from fastmwem.mechanisms import Geometric

        scale = Geometric(epsilon=eps).scale
        t = stability_threshold(scale, delta)
        r = math.exp(-1 / float(scale))
        tail = r ** (t - 1) / (1 + r)  # P[Z >= t - 1]
        assert tail <= delta
        assert r ** (t - 2) / (1 + r) > delta / 2  # and it is not much higher than it needs


def test_stable_categories_keep_a_label_with_the_law_of_the_noisy_count():
    # 4,000 labels, each held by 9 records: each is kept independently with P[9 + Z >= T]
    eps, delta = 1.0, 1e-3
    values = pd.Series(np.repeat([f"v{i}" for i in range(4000)], 9))
    kept = stable_categories(values, eps, delta, np.random.default_rng(5), max_categories=10**6)
    from fastmwem.mechanisms import Geometric

    scale = Geometric(epsilon=eps).scale
    t = stability_threshold(scale, delta)
    support = np.arange(-200, 201)
    p = discrete_laplace_pmf(scale, support)[support >= t - 9].sum()
    assert stats.binomtest(len(kept), 4000, p).pvalue > ALPHA


def test_stable_categories_drop_rare_labels_and_invalid_ones():
    values = pd.Series(["a"] * 500 + ["b"] * 400 + ["rare"] + [""] * 600 + [None] * 50)
    kept = stable_categories(values, 1.0, 1e-9, np.random.default_rng(0))
    assert kept == ["a", "b"]  # "" is not a label; "rare" is below the threshold


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 5000
    x = rng.normal(50, 10, n)
    return pd.DataFrame({
        "x": np.where(rng.random(n) < 0.1, np.nan, x),
        "k": pd.array(np.where(rng.random(n) < 0.05, None, rng.poisson(3, n)), dtype="Int64"),
        "n": rng.integers(0, 5, n),
        "c": np.where(rng.random(n) < 0.5, "left", "right"),
        "b": rng.random(n) < 0.3,
        "t": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D"),
    })


def test_kinds_and_missing_flags_come_from_the_dtypes(table):
    plans = {p.name: p for p in plan_columns(table)}
    assert {n: p.kind for n, p in plans.items()} == {
        "x": "numeric", "k": "integer", "n": "integer", "c": "categorical", "b": "bool",
        "t": "datetime"}
    assert {n: p.missing for n, p in plans.items()} == {
        "x": True, "k": True, "n": False, "c": True, "b": False, "t": True}
    assert {n: p.learns for n, p in plans.items()} == {
        "x": "cuts", "k": "cuts", "n": "cuts", "c": "categories", "b": None, "t": "cuts"}


def test_the_drafted_schema_encodes_the_table_and_charges_every_column(table):
    acc = Accountant(epsilon=2, delta=1e-6)
    schema = draft_schema(table, epsilon=1.0, delta=1e-6, rng=0, accountant=acc)
    ds = schema.encode(table)
    assert len(ds) == len(table)
    assert isinstance(schema["x"], Numeric) and schema["x"].missing
    assert isinstance(schema["k"], Integer) and schema["k"].missing and schema["k"].edges
    assert isinstance(schema["n"], Integer) and not schema["n"].missing
    assert schema["c"] == Categorical("c", ["left", "right"], other="other", missing=True)
    assert schema["b"] == Categorical("b", [False, True])
    labels = [e.label for e in acc.ledger]
    # four number columns at 4 levels each, one text column; nothing for the boolean
    assert sum("quantile cuts" in lab for lab in labels) == 16
    assert [lab for lab in labels if "categories" in lab] == ["draft 'c': categories (stability histogram)"]
    assert not any("'b'" in lab for lab in labels)
    spent = acc.spent()
    assert Fraction(0.99) < spent.epsilon <= 1 and Fraction(9, 10**7) < spent.delta <= Fraction(1, 10**6)
    # the datetime column is cut in seconds over the default days 1900..2100
    lo, hi = (pd.Timestamp(0) + pd.Timedelta(seconds=e) for e in (schema["t"].lower, schema["t"].upper))
    assert pd.Timestamp("2019-06-01") < lo and hi < pd.Timestamp("2021-06-01")


def test_the_draft_learns_the_quantiles(table):
    schema = draft_schema(table[["x"]], epsilon=20.0, rng=1, bins=4)
    inner = np.array(schema["x"].edges[1:-1])
    want = np.nanquantile(table["x"], [0.25, 0.5, 0.75])
    np.testing.assert_allclose(inner, want, rtol=0.02)


def test_pure_dp_refuses_text_columns_before_any_charge(table, monkeypatch):
    monkeypatch.setattr(draft_module, "private_cuts", _unreachable)
    acc = Accountant(epsilon=1)
    with pytest.raises(UndeclaredCategoriesError, match=r"columns \['c'\] hold text") as info:
        draft_schema(table, epsilon=1.0, accountant=acc)
    assert info.value.columns == ("c",)
    assert acc.ledger == ()
    # declared categories cost nothing and need no delta
    schema = draft_schema(table[["c", "b"]], epsilon=1.0, accountant=acc,
                          categories={"c": ["left", "right"]})
    assert schema["c"].categories == ("left", "right") and acc.ledger == ()


def _unreachable(*args, **kwargs):
    raise AssertionError("the data was read")


def test_a_refused_charge_spends_nothing_and_reads_nothing(table, monkeypatch):
    monkeypatch.setattr(draft_module, "private_cuts", _unreachable)
    monkeypatch.setattr(draft_module, "stable_categories", _unreachable)
    acc = Accountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        draft_schema(table, epsilon=1.0, delta=1e-6, accountant=acc)
    assert acc.ledger == ()


def test_a_zcdp_budget_charges_bounded_range_levels(table):
    acc = Accountant(rho=0.01)
    schema = draft_schema(table[["x", "n"]], rho=0.01, rng=2, accountant=acc)
    assert isinstance(schema["x"], Numeric)
    assert len(acc.ledger) == 8 and Fraction(99, 10**4) < acc.spent().rho <= Fraction(1, 100)
    with pytest.raises(UndeclaredCategoriesError):
        draft_schema(table[["c"]], rho=0.01)


def test_bounds_give_the_grid(table):
    plans = {p.name: p for p in plan_columns(table, bounds={"n": (0, 4), "x": (0, 100)})}
    np.testing.assert_array_equal(plans["n"].grid, np.arange(-0.5, 4.75, 0.25))
    assert plans["x"].grid[0] == 0 and plans["x"].grid[-1] == 100
    schema = draft_schema(table[["n"]], epsilon=5.0, rng=0, bounds={"n": (0, 4)})
    assert schema["n"].edges == (0, 1, 2, 3, 4, 5)  # every value its own bin, none outside


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(epsilon=1.0, bounds={"nope": (0, 1)}), ValueError, r"bounds= names columns .*'nope'"),
    (dict(epsilon=1.0, bounds={"x": (1, 0)}), ValueError, "lower < upper"),
    (dict(epsilon=1.0, bounds={"c": (0, 1)}), ValueError, "not numbers"),
    (dict(epsilon=1.0, bins=1), ValueError, "bins must be >= 2"),
    (dict(epsilon=1.0, rho=0.1), ValueError, "not both"),
    (dict(), ValueError, "needs a budget"),
    (dict(epsilon=1.0, delta=2.0), ValueError, "delta must lie in"),
    (dict(epsilon=1.0, delta=1e-6, missing={"n": "yes"}), TypeError, "True or False"),
])
def test_bad_arguments_are_refused_before_any_charge(table, kwargs, error, message):
    acc = Accountant(epsilon=10, delta=1e-3)
    with pytest.raises(error, match=message):
        draft_schema(table, accountant=acc, **kwargs)
    assert acc.ledger == ()


def test_a_column_declared_without_gaps_that_has_them_is_refused_by_name(table):
    acc = Accountant(epsilon=10, delta=1e-3)
    with pytest.raises(ValueError, match=r"column 'x' has missing values") as info:
        draft_schema(table, epsilon=1.0, delta=1e-6, accountant=acc, missing={"x": False})
    assert str(int(table["x"].isna().sum())) not in str(info.value)
    assert acc.ledger == ()


def test_a_text_column_without_a_stable_label_encodes_as_other(table):
    # every label is below the threshold at this epsilon: the spec still encodes every cell
    schema = draft_schema(table[["c"]].iloc[:50], epsilon=0.01, delta=1e-9, rng=0)
    assert schema["c"] == Categorical("c", ["other"], other="other", missing=True)
    assert schema.encode(table[["c"]].iloc[:50]).histogram().tolist() == [50, 0]


def test_the_drafted_schema_survives_json(table, tmp_path):
    schema = draft_schema(table, epsilon=1.0, delta=1e-6, rng=4)
    schema.to_json(tmp_path / "s.json")
    assert Schema.from_json(tmp_path / "s.json") == schema
