"""``fastmwem synth RAW.csv`` without a schema (drafted privately), ``--numeric``,
``fastmwem schema draft``, and messages that name flags rather than Python keywords."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Categorical, Schema


@pytest.fixture(scope="module")
def raw_csv(tmp_path_factory):
    """Gaps, text, whole numbers (with and without gaps), floats, booleans and dates."""
    rng = np.random.default_rng(7)
    n = 10_000
    x = rng.normal(50, 10, n)
    frame = pd.DataFrame({
        "x": np.where(rng.random(n) < 0.1, np.nan, x),
        "y": 2 * x + rng.normal(0, 3, n),
        "k": pd.array(np.where(rng.random(n) < 0.05, None, rng.poisson(3, n)), dtype="Int64"),
        "n": rng.integers(0, 5, n),
        "c": np.where(rng.random(n) < 0.02, None,
                      rng.choice(np.array(["red", "green", "blue"]), n, p=[0.5, 0.3, 0.2])),
        "b": rng.random(n) < 0.3,
        "d": (pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D")
              ).strftime("%Y-%m-%d"),
    })
    path = tmp_path_factory.mktemp("raw") / "raw.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _read(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype_backend="numpy_nullable")


def test_synth_without_a_schema_drafts_one_privately(raw_csv, tmp_path, cli):
    path, frame = raw_csv
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    code, _, err = cli("synth", path, "--epsilon", 1, "--delta", 1e-9, "--out", out,
                       "--report", report, "--seed", 3)
    assert code == 0, err
    assert "no --schema or --domain: drafting a schema privately" in err
    assert "(epsilon=1.0, delta=1e-09)-DP: a drafted schema and MWEM under zCDP" in err
    synthetic = _read(out)
    assert list(synthetic.columns) == list(frame.columns)
    # whole numbers stay whole (also with gaps), booleans booleans, dates dates
    assert str(synthetic["k"].dtype) == "Int64" and str(synthetic["n"].dtype) == "Int64"
    assert str(synthetic["b"].dtype) == "boolean"
    assert synthetic["d"].dropna().str.fullmatch(r"\d{4}-\d{2}-\d{2}").all()
    dates = pd.to_datetime(synthetic["d"])
    assert dates.between("2019-06-01", "2021-06-01").mean() > 0.99 and dates.nunique() > 200
    for column in frame.columns:
        assert abs(synthetic[column].isna().mean() - frame[column].isna().mean()) < 0.03, column
    assert synthetic["x"].nunique() > 5000 and synthetic["y"].nunique() > 5000
    # the true correlation is 0.99; the synthetic one varies with the seed (0.65-0.82 over
    # seeds 0-3, with 50 rounds as with the signal bound's 34): kept, not exact
    assert synthetic[["x", "y"]].astype(float).corr().iloc[0, 1] > 0.6
    payload = json.loads(report.read_text())
    privacy = payload["privacy"]
    assert privacy["definition"] == "approx" and privacy["epsilon"] <= 1
    assert privacy["delta"] <= 1e-9
    assert any("draft 'c': categories" in e["label"] for e in privacy["ledger"])
    assert any("quantile cuts" in e["label"] for e in privacy["zcdp_ledger"])
    assert Schema.from_dict(payload["schema"]).names == tuple(frame.columns)
    assert payload["command"]["schema"] == "drafted" and payload["private"] is False


def test_pure_dp_cannot_draft_text_columns_and_says_which_flags_to_give(raw_csv, tmp_path,
                                                                       cli, no_release):
    path, _ = raw_csv
    out = tmp_path / "out.csv"
    code, _, err = cli("synth", path, "--epsilon", 1, "--out", out)
    assert code == 2 and not out.exists()
    assert "columns ['c'] hold text" in err and "give --delta D" in err and "--schema" in err
    assert "categories=" not in err and "delta=" not in err.replace("--delta", "")


def test_a_drafted_run_evaluates_against_its_own_encoding(raw_csv, tmp_path, cli):
    path, frame = raw_csv
    small = tmp_path / "small.csv"
    frame[["x", "n", "b"]].to_csv(small, index=False)
    out = tmp_path / "out.csv"
    code, _, err = cli("synth", small, "--epsilon", 2, "--out", out, "--seed", 1,
                       "--evaluate", "--rows", 500, "--bins", 4)
    assert code == 0, err
    assert "NOT PRIVATE evaluation" in err and len(_read(out)) == 500


def _schema_run(raw_csv, tmp_path, cli, numeric):
    path, frame = raw_csv
    schema = tmp_path / "s.json"
    Schema.infer(frame[["x"]].dropna(), allow_private_inference=True, bins=8).to_json(schema)
    data = tmp_path / "x.csv"
    frame[["x"]].dropna().to_csv(data, index=False)
    out = tmp_path / f"{numeric}.csv"
    code, _, err = cli("synth", data, "--schema", schema, "--epsilon", 1, "--out", out,
                       "--seed", 2, "--rows", 2000, *(["--numeric", numeric] if numeric else []))
    assert code == 0, err
    return pd.read_csv(out)["x"]


@pytest.mark.filterwarnings("ignore::fastmwem.data.PrivacyLeakWarning")
def test_numbers_are_drawn_inside_their_bins_unless_midpoint_is_asked(raw_csv, tmp_path, cli):
    assert _schema_run(raw_csv, tmp_path, cli, None).nunique() > 1000  # uniform, the default
    assert _schema_run(raw_csv, tmp_path, cli, "midpoint").nunique() <= 8


def test_schema_draft_writes_a_private_skeleton_that_synth_takes(raw_csv, tmp_path, cli):
    path, frame = raw_csv
    schema = tmp_path / "schema.json"
    code, _, err = cli("schema", "draft", path, "--out", schema, "--epsilon", 1, "--delta",
                       1e-9, "--seed", 1, "--bins", 8)
    assert code == 0, err
    assert "drafted with (epsilon=1.0, delta=1e-09)-DP" in err and "edit it" in err
    drafted = Schema.from_json(schema)
    assert drafted.names == tuple(frame.columns)
    assert drafted["c"].categories == ("blue", "green", "red") and drafted["c"].missing
    assert isinstance(drafted["d"], Categorical)  # dates are text in a schema file
    out = tmp_path / "out.csv"
    code, _, err = cli("synth", path, "--schema", schema, "--epsilon", 1, "--delta", 1e-9,
                       "--out", out, "--seed", 2, "--rows", 200)
    assert code == 0, err


def test_schema_draft_non_private_reads_the_data_and_warns(raw_csv, tmp_path, cli):
    path, frame = raw_csv
    schema = tmp_path / "schema.json"
    code, _, err = cli("schema", "draft", path, "--out", schema, "--non-private")
    assert code == 0, err
    assert "PrivacyLeakWarning" in err and "NOT private" in err
    inferred = Schema.from_json(schema)
    assert inferred["x"].lower == frame["x"].min() and inferred["x"].missing
    assert inferred["c"].categories == ("blue", "green", "red")
    assert inferred["d"].size == frame["d"].nunique()  # dates stay text in a schema file
    assert inferred.encode(frame).records.shape[0] == len(frame)


@pytest.mark.parametrize(("flags", "message"), [
    ([], "give --epsilon E (a private draft) or --non-private"),
    (["--non-private", "--epsilon", 1], "give no --epsilon"),
    (["--epsilon", 0], "--epsilon must be > 0"),
    (["--epsilon", 1, "--delta", 2], "--delta must lie in (0, 1)"),
    (["--epsilon", 1], "give --delta D"),  # the text column needs a delta
    (["--epsilon", 1, "--delta", 1e-9, "--bins", 1], "--bins must be >= 2"),
])
def test_schema_draft_refuses_bad_flags(raw_csv, tmp_path, cli, flags, message):
    path, _ = raw_csv
    out = tmp_path / "schema.json"
    code, _, err = cli("schema", "draft", path, "--out", out, *flags)
    assert code == 2 and message in err and not out.exists()


def test_messages_name_flags_and_schema_keys_not_python_keywords(tmp_path, cli):
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [1, 2, 3]}).to_csv(data, index=False)
    schema = tmp_path / "s.json"
    Schema.from_dict({"columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 2,
                                   "bins": 2}]}).to_json(schema)
    out = tmp_path / "o.csv"
    code, _, err = cli("synth", data, "--schema", schema, "--epsilon", 1, "--out", out)
    assert code == 2 and "give --extra-columns ignore to drop them" in err
    assert "extra_columns" not in err
    code, _, err = cli("synth", data, "--schema", schema, "--epsilon", 1, "--out", out,
                       "--extra-columns", "ignore")
    assert code == 2
    assert 'set "missing": true for it in the --schema file' in err
    assert "missing=True" not in err
    assert "first rows" not in err and "1 missing" not in err  # gaps are named by column only
    pd.DataFrame({"a": [1.0, 5.0, 3.0]}).to_csv(data, index=False)
    code, _, err = cli("synth", data, "--schema", schema, "--epsilon", 1, "--out", out)
    assert code == 2
    assert '(widen the bounds, or set "clip": true in the --schema file)' in err
    assert "clip=True" not in err


def test_delta_alone_selects_zcdp(coded_csv, tmp_path, cli):
    csv, domain = coded_csv
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    code, _, err = cli("synth", csv, "--domain", domain, "--epsilon", 1, "--delta", 1e-9,
                       "--out", out, "--report", report, "--rounds", 2, "--seed", 1)
    assert code == 0, err
    assert json.loads(report.read_text())["privacy"]["definition"] == "zcdp"
