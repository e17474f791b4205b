"""fastmwem.Synthesizer: a raw DataFrame in, private synthetic records with its dtypes out."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastmwem
from fastmwem import Schema, Synthesizer
from fastmwem.data import Categorical, Integer, Numeric
from fastmwem.data.schema.draft import UndeclaredCategoriesError


def raw_table(n: int, seed: int = 0) -> pd.DataFrame:
    """Gaps, strings, integers (plain and nullable), floats, booleans and datetimes; x and y
    strongly correlated."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 10, n)
    return pd.DataFrame({
        "x": np.where(rng.random(n) < 0.1, np.nan, x),
        "y": 2 * x + rng.normal(0, 3, n),
        "k": pd.array(np.where(rng.random(n) < 0.05, None, rng.poisson(3, n)), dtype="Int64"),
        "n": rng.integers(0, 5, n),
        "c": np.where(rng.random(n) < 0.02, None,
                      rng.choice(np.array(["red", "green", "blue"]), n, p=[0.5, 0.3, 0.2])),
        "b": rng.random(n) < 0.3,
        "t": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D"),
    })


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return raw_table(20_000)


@pytest.fixture(scope="module")
def fitted(table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded run's warning
        synth = Synthesizer(epsilon=1, delta=1e-9, rng=11).fit(table)
    return synth, synth.sample(20_000)


def test_the_synthetic_table_keeps_columns_order_and_dtypes(table, fitted):
    _, out = fitted
    assert list(out.columns) == list(table.columns)
    assert out.dtypes.to_dict() == table.dtypes.to_dict()
    assert str(out["k"].dtype) == "Int64" and str(out["n"].dtype) == "int64"


def test_missing_rates_are_kept_within_noise(table, fitted):
    _, out = fitted
    for column in table.columns:
        assert abs(out[column].isna().mean() - table[column].isna().mean()) < 0.03, column
    assert out["k"].isna().any() and out["x"].isna().any()  # gaps reproduced, as pd.NA / NaN


def test_continuous_columns_have_many_values_and_keep_their_correlation(table, fitted):
    _, out = fitted
    assert out["x"].nunique() > 10_000 and out["y"].nunique() > 10_000
    assert table[["x", "y"]].corr().iloc[0, 1] > 0.98
    assert out[["x", "y"]].corr().iloc[0, 1] > 0.85
    # and the values lie where the data does
    assert abs(out["x"].median() - table["x"].median()) < 3
    assert out["t"].between(pd.Timestamp("2019-06-01"), pd.Timestamp("2021-06-01")).mean() > 0.99


def test_categories_and_booleans_come_back(table, fitted):
    _, out = fitted
    assert set(out["c"].dropna()) <= {"red", "green", "blue", "other"}
    shares = out["c"].value_counts(normalize=True)
    assert abs(shares["red"] - 0.49) < 0.05
    assert abs(out["b"].mean() - 0.3) < 0.05


def test_integers_are_drawn_among_the_integers_of_their_bin():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"w": rng.integers(0, 1000, 5000)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        uniform = Synthesizer(epsilon=5.0, rng=3, bins=8).fit(df).sample(5000)["w"]
        midpoint = Synthesizer(epsilon=5.0, rng=3, bins=8, numeric="midpoint").fit(df).sample(5000)["w"]
    assert uniform.dtype == np.int64 and uniform.nunique() > 500
    assert midpoint.nunique() <= 10


def test_the_report_holds_the_ledger_guarantee_choices_and_schema(fitted):
    synth, _ = fitted
    report = synth.report()
    assert report["private"] is False and report["not_private_because"] == ["seeded"]
    guarantee = report["guarantee"]
    assert guarantee["definition"] == "approx"
    assert 0.99 <= guarantee["epsilon"] <= 1 and guarantee["delta"] <= 1e-9
    labels = [e["label"] for e in report["ledger"]]
    assert labels[0].startswith("zCDP share") and "draft 'c': categories" in labels[1]
    zcdp = [e["label"] for e in report["zcdp_ledger"]]
    assert sum("quantile cuts" in lab for lab in zcdp) == 20  # x, y, k, n, t at 4 levels each
    assert any("record count" in lab for lab in zcdp)
    assert Schema.from_dict(report["schema"]) == synth.schema and report["schema_drafted"]
    assert report["choices"]["rounds"] >= 1
    # exact: nothing beyond the budget
    spent = synth.accountant.spent()
    assert spent.epsilon <= 1 and spent.delta <= Fraction(1, 10**9)
    assert synth.zcdp_accountant.spent().rho <= synth.zcdp_accountant.budget().rho


def test_sample_before_fit_and_a_second_fit_are_refused(table):
    synth = Synthesizer(epsilon=1)
    with pytest.raises(RuntimeError, match="fit the Synthesizer first"):
        synth.sample(3)
    with pytest.raises(RuntimeError, match="fit the Synthesizer first"):
        synth.report()
    small = table[["x", "n"]].iloc[:500]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = Synthesizer(epsilon=1, rng=0).fit(small)
        with pytest.raises(RuntimeError, match="spent its budget"):
            synth.fit(small)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(epsilon=0), ValueError, "epsilon"),
    (dict(epsilon=1, delta=1.5), ValueError, "delta must lie in"),
    (dict(epsilon=1, privacy="zcdp"), ValueError, "needs delta"),
    (dict(epsilon=1, privacy="renyi"), ValueError, "privacy must be"),
    (dict(epsilon=1, draft_fraction=1.0), ValueError, "draft_fraction"),
    (dict(epsilon=1, draft_fraction=0), ValueError, "draft_fraction"),
    (dict(epsilon=1, numeric="mean"), ValueError, "numeric must be"),
    (dict(epsilon=1, accountant=None), TypeError, r"sets \['accountant'\] itself"),
    (dict(epsilon=1, init="bogus"), ValueError, "init"),
    (dict(epsilon=1, rounds=0), ValueError, "rounds"),
    (dict(epsilon=1, schema="schema.json"), TypeError, "schema must be a Schema"),
    (dict(epsilon=1, rng=-1), ValueError, "non-negative"),
    (dict(epsilon=1, workload=3), TypeError, "workload"),
    (dict(epsilon=1, bins=1), ValueError, "bins must be >= 2"),
    (dict(epsilon=1, max_categories=2.5), TypeError, "max_categories must be an integer"),
])
def test_bad_arguments_are_refused_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        Synthesizer(**kwargs)


def test_bad_tables_and_declarations_are_refused_before_any_charge(table, monkeypatch):
    def unreachable(*args, **kwargs):
        raise AssertionError("the budget was reached")

    monkeypatch.setattr("fastmwem.synthesizer._Budget", unreachable)
    with pytest.raises(UndeclaredCategoriesError, match=r"\['c'\] hold text"):
        Synthesizer(epsilon=1).fit(table)
    with pytest.raises(ValueError, match="column 'x' has missing values"):
        Synthesizer(epsilon=1, delta=1e-9, missing={"x": False}).fit(table)
    with pytest.raises(ValueError, match="bounds= names columns"):
        Synthesizer(epsilon=1, delta=1e-9, bounds={"z": (0, 1)}).fit(table)
    with pytest.raises(ValueError, match="empty"):
        Synthesizer(epsilon=1).fit(table.iloc[:0])
    with pytest.raises(TypeError, match="DataFrame"):
        Synthesizer(epsilon=1).fit(table.to_numpy())
    with pytest.raises(ValueError, match="missing columns"):
        Synthesizer(epsilon=1, schema=Schema([Numeric("q", 0, 1, bins=2)])).fit(table)


def test_pure_dp_with_declared_categories_spends_epsilon_only(table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = Synthesizer(epsilon=1.0, rng=4, categories={"c": ["red", "green", "blue"]})
        out = synth.fit(table.iloc[:3000]).sample(100)
    assert synth.report()["guarantee"] == {"definition": "pure", "epsilon": 1.0}
    assert synth.zcdp_accountant is None
    assert set(out["c"].dropna()) <= {"red", "green", "blue", "other"}
    assert synth.schema["c"].missing  # text can hold None: a missing code either way


def test_a_given_schema_is_used_as_it_is(table):
    schema = Schema([Numeric("x", 0, 100, bins=10, clip=True, missing=True),
                     Integer("n", 0, 4), Categorical("b", [False, True])])
    df = table[["x", "n", "b"]].iloc[:2000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = Synthesizer(epsilon=1.0, delta=1e-9, rng=5, schema=schema)
        out = synth.fit_sample(df, 300)
    assert synth.schema is schema and not synth.report()["schema_drafted"]
    assert not any("draft" in e.label for e in synth.zcdp_accountant.ledger)
    assert len(out) == 300 and out.dtypes.to_dict() == df.dtypes.to_dict()


def test_the_synthesizer_is_exported_lazily():
    assert fastmwem.Synthesizer is Synthesizer and "Synthesizer" in fastmwem.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        fastmwem.Nope  # noqa: B018
