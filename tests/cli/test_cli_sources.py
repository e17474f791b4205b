"""``fastmwem synth --engine``: Parquet in and out, and the same output from every engine."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest

from tests._engines import require, spark_session

COMMON = ["--epsilon", 1, "--workload", "marginals:2", "--rounds", 4, "--seed", 5]


def _synth(cli, data, domain, out, *extra):
    code, _, err = cli("synth", data, "--domain", domain, "--out", out, *COMMON, *extra)
    assert code == 0, err
    return err


@pytest.fixture
def coded_parquet(coded_csv, tmp_path):
    require("pyarrow")
    csv, domain = coded_csv
    path = tmp_path / "data.parquet"
    pd.read_csv(csv).to_parquet(path, index=False)
    return path, domain


def test_every_engine_gives_the_same_records(cli, coded_csv, coded_parquet, tmp_path):
    require("duckdb")
    csv, domain = coded_csv
    parquet, _ = coded_parquet
    _synth(cli, csv, domain, tmp_path / "memory.csv", "--engine", "memory")
    _synth(cli, parquet, domain, tmp_path / "duck.csv", "--engine", "duckdb")
    _synth(cli, csv, domain, tmp_path / "auto.parquet")  # auto: a small file stays in memory
    want = pd.read_csv(tmp_path / "memory.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "duck.csv"), want)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "auto.parquet"), want)


def test_spark_engine_gives_the_same_records(cli, coded_csv, coded_parquet, tmp_path):
    spark_session()  # the test run's shared session: --spark-master then reuses it
    csv, domain = coded_csv
    parquet, _ = coded_parquet
    _synth(cli, csv, domain, tmp_path / "memory.csv")
    _synth(cli, parquet, domain, tmp_path / "spark.csv", "--spark-master", "local[2]",
           "--report", tmp_path / "r.json")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "spark.csv"),
                                  pd.read_csv(tmp_path / "memory.csv"))
    assert json.loads((tmp_path / "r.json").read_text())["command"]["input"] == "data.parquet"


def test_bad_data_in_an_engine_stops_before_the_budget(cli, coded_parquet, tmp_path, no_release):
    require("duckdb")
    parquet, domain = coded_parquet
    frame = pd.read_parquet(parquet)
    frame.loc[2, "b"] = 7
    frame.to_parquet(parquet, index=False)
    code, _, err = cli("synth", parquet, "--domain", domain, "--out", tmp_path / "o.csv",
                       "--epsilon", 1, "--engine", "duckdb")
    assert code == 2
    assert "column 'b' has 1 values outside 0..2, first rows [2]" in err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("extra, message", [
    (["--engine", "duckdb", "--spark-master", "local[1]"], "--spark-master needs --engine spark"),
    (["--spark-master", ""], "--spark-master: the URL is empty"),
    (["--engine", "pandas"], "invalid choice"),
])
def test_bad_engine_arguments(cli, capsys, coded_csv, tmp_path, extra, message, no_release):
    csv, domain = coded_csv
    try:
        code, _, err = cli("synth", csv, "--domain", domain, "--epsilon", 1,
                           "--out", tmp_path / "o.csv", *extra)
    except SystemExit as exc:  # argparse's own usage errors
        code, err = exc.code, capsys.readouterr().err
    assert code == 2
    assert message in err


def test_missing_packages_are_named_before_reading(cli, coded_csv, tmp_path, monkeypatch,
                                                   no_release):
    csv, domain = coded_csv
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("duckdb", "pyarrow") else real(name, *a))
    code, _, err = cli("synth", csv, "--domain", domain, "--epsilon", 1,
                       "--out", tmp_path / "o.csv", "--engine", "duckdb")
    assert code == 2 and 'pip install "fastmwem[duckdb]"' in err
    code, _, err = cli("synth", csv, "--domain", domain, "--epsilon", 1,
                       "--out", tmp_path / "o.parquet")
    assert code == 2 and 'pip install "fastmwem[parquet]"' in err
