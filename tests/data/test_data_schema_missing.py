"""Declared missing values (``missing=True``) and integer bins (``Integer(edges=...)``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Categorical, Integer, Numeric, Schema
from fastmwem.data.sources import open_source


@pytest.fixture
def schema() -> Schema:
    return Schema([
        Categorical("c", ["a", "b"], missing=True),
        Numeric("x", 0, 1, bins=2, missing=True),
        Integer("k", 0, 3, missing=True),
        Integer("w", edges=[0, 10, 100], clip=True, missing=True),
        Numeric("t", 0, 2e9, bins=4, missing=True),
    ])


@pytest.fixture
def gappy() -> pd.DataFrame:
    return pd.DataFrame({
        "c": ["a", None, pd.NA, "b"],
        "x": [0.5, np.nan, 1.0, None],
        "k": pd.array([1, None, 3, 0], dtype="Int64"),
        "w": [5, 150, None, 10],
        "t": pd.to_datetime(["2020-01-01", None, "1999-05-05", pd.NaT]),
    })


def test_every_kind_of_gap_gets_the_last_code(schema, gappy):
    ds = schema.encode(gappy)
    assert schema.domain.shape == (3, 3, 5, 3, 5)
    np.testing.assert_array_equal(ds.records, [[0, 1, 1, 0, 3],
                                               [2, 2, 4, 1, 4],
                                               [2, 1, 3, 2, 1],
                                               [1, 2, 0, 1, 4]])


def test_the_missing_code_decodes_to_the_columns_missing_value(schema, gappy):
    out = schema.decode(schema.encode(gappy))
    assert out["c"].isna().tolist() == [False, True, True, False]
    assert out["x"].isna().tolist() == [False, True, False, True]
    assert str(out["k"].dtype) == "Int64" and out["k"].isna().tolist() == [False, True, False, False]
    assert out["k"].dropna().tolist() == [1, 3, 0]
    assert str(out["w"].dtype) == "Int64" and out["w"].isna().tolist() == [False, False, True, False]
    # the gaps decode where they were; every other cell lies in its own bin
    assert schema.encode(out.assign(t=out["t"])).records.tolist() == schema.encode(gappy).records.tolist()


def test_an_integer_column_without_gaps_decodes_to_int64():
    s = Schema([Integer("k", 0, 3), Integer("w", edges=[0, 5, 9])])
    out = s.decode(np.array([[0, 1], [3, 0]]))
    assert out.dtypes.tolist() == [np.dtype("int64"), np.dtype("int64")]


def test_json_round_trip_keeps_missing_and_integer_edges(schema, tmp_path):
    path = tmp_path / "s.json"
    schema.to_json(path)
    raw = json.loads(path.read_text())
    assert raw["columns"][3] == {"name": "w", "type": "integer", "edges": [0, 10, 100],
                                 "clip": True, "missing": True}
    assert all(c["missing"] is True for c in raw["columns"])
    assert Schema.from_json(path) == schema
    plain = Schema([Categorical("c", ["a"]), Integer("k", 0, 1)]).to_dict()
    assert all("missing" not in c for c in plain["columns"])  # unchanged when not declared


def test_json_refuses_a_bad_missing_flag_and_an_integer_without_bounds():
    with pytest.raises(ValueError, match=r"missing of 'k' must be True or False"):
        Schema.from_dict({"columns": [{"name": "k", "type": "integer", "lower": 0, "upper": 1,
                                       "missing": "yes"}]})
    with pytest.raises(ValueError, match=r"missing keys \['upper'\] \(or give 'edges'\)"):
        Schema.from_dict({"columns": [{"name": "k", "type": "integer", "lower": 0}]})


def test_undeclared_gaps_name_the_column_and_the_flag_only():
    s = Schema([Numeric("x", 0, 1, bins=2), Integer("k", 0, 3), Categorical("c", ["a"])])
    df = pd.DataFrame({"x": [np.nan] * 3 + [0.5], "k": [1, 2, 3, None], "c": ["a", "a", None, "a"]})
    with pytest.raises(ValueError) as info:
        s.encode(df)
    msg = str(info.value)
    for name in ("x", "k", "c"):
        assert f"column {name!r} has missing values" in msg
    assert "missing=True" in msg and '"missing": true' in msg
    for private in ("3 missing", "first rows", "[0, 1, 2]", "rows are"):
        assert private not in msg


def test_integer_bins_encode_by_half_open_edges():
    spec = Integer("w", edges=[-5, 0, 1, 10])
    assert (spec.lower, spec.upper, spec.size) == (-5, 9, 3)
    s = Schema([spec])
    assert s.encode(pd.DataFrame({"w": [-5, -1, 0, 1, 9]})).records[:, 0].tolist() == [0, 0, 1, 2, 2]
    with pytest.raises(ValueError, match=r"values outside -5..9"):
        s.encode(pd.DataFrame({"w": [10]}))
    assert s.decode(np.array([[0], [1], [2]]))["w"].tolist() == [-3, 0, 5]


def test_integer_bins_decode_uniformly_among_their_integers():
    s = Schema([Integer("w", edges=[0, 4, 5])])
    codes = np.zeros((40_000, 1), dtype=np.int64)
    codes[::2] = 1
    out = s.decode(codes, numeric="uniform", rng=np.random.default_rng(3))["w"].to_numpy()
    assert set(out[::2]) == {4}
    counts = np.bincount(out[1::2], minlength=4)
    assert counts.size == 4 and counts.min() > 4700  # each of 0..3 about 5,000 times


@pytest.mark.parametrize("kwargs, message", [
    (dict(edges=[0, 0]), "strictly increasing"),
    (dict(edges=[1.5, 3]), "must be an integer"),
    (dict(edges=[0]), "at least 2"),
    (dict(edges=[0, 5], lower=1), r"lower of 'w' \(1\) differs from its edges"),
    (dict(edges=[0, 5], upper=5), r"so upper = 4"),
    (dict(lower=0), "needs lower and upper, or edges"),
])
def test_integer_edges_are_checked(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        Integer("w", **kwargs)


def test_a_datetime_column_encodes_as_seconds_since_the_epoch():
    s = Schema([Numeric("t", 0, 4 * 86400, bins=4)])
    t = pd.Series(pd.to_datetime(["1970-01-01 12:00", "1970-01-03 01:00"]))
    assert s.encode(pd.DataFrame({"t": t})).records[:, 0].tolist() == [0, 2]
    aware = t.dt.tz_localize("Europe/Paris")  # one hour ahead of UTC in January 1970
    assert s.encode(pd.DataFrame({"t": aware})).records[:, 0].tolist() == [0, 2]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_duckdb_encodes_declared_gaps_and_integer_bins_as_memory_does(tmp_path, suffix):
    schema = Schema([
        Categorical("c", ["a", "b"], other="z", missing=True),
        Numeric("x", 0, 1, bins=2, missing=True),
        Integer("k", 0, 3, missing=True),
        Integer("w", edges=[0, 10, 100], clip=True, missing=True),
        Integer("v", edges=[0, 2, 4]),
    ])
    rng = np.random.default_rng(1)
    n = 200
    frame = pd.DataFrame({
        "c": rng.choice(np.array(["a", "b", "q", None], dtype=object), n),
        "x": np.where(rng.random(n) < 0.2, np.nan, rng.random(n)),
        "k": pd.array(np.where(rng.random(n) < 0.3, None, rng.integers(0, 4, n)), dtype="Int64"),
        "w": np.where(rng.random(n) < 0.1, np.nan, rng.integers(-5, 200, n)),
        "v": rng.integers(0, 4, n),
    })
    path = tmp_path / f"gappy{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
        memory = schema.encode_csv(path)
    else:
        frame.to_parquet(path)
        memory = schema.encode_parquet(path)
    with open_source(path, schema, "duckdb") as source:
        np.testing.assert_array_equal(source.histogram(), memory.histogram())
    # codes of c: a, b, the other label z, then missing
    assert memory.histogram().reshape(schema.domain.shape)[3].sum() == frame["c"].isna().sum()


def test_duckdb_refuses_undeclared_gaps_with_the_memory_message(tmp_path):
    schema = Schema([Integer("k", 0, 3), Numeric("x", 0, 1, bins=2)])
    path = tmp_path / "g.parquet"
    pd.DataFrame({"k": [1.0, np.nan, 2.0], "x": [0.5, 0.5, np.nan]}).to_parquet(path)
    with pytest.raises(ValueError) as memory:
        schema.encode_parquet(path)
    with pytest.raises(ValueError) as duck:
        open_source(path, schema, "duckdb")
    assert str(duck.value) == str(memory.value)
    assert "first rows" not in str(memory.value)
