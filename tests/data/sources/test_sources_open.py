"""open_source: engine choice, options, and the in-memory engine on CSV and Parquet files."""

from __future__ import annotations

import numpy as np
import pytest

import fastmwem.data.sources as sources
from fastmwem.data import Dataset
from fastmwem.data.sources import choose_engine, open_source
from tests._engines import require
from tests.data.sources.conftest import write


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_memory_engine_reads_csv_and_parquet(tmp_path, domain, codes, schema, raw, suffix):
    require("pyarrow")
    path = write(codes, tmp_path / f"c{suffix}")
    ds = open_source(path, domain, "memory")
    assert isinstance(ds, Dataset)
    np.testing.assert_array_equal(ds.records, codes.to_numpy())
    raw_path = write(raw, tmp_path / f"r{suffix}")
    encoded = open_source(raw_path, schema, "memory")
    assert encoded.domain == schema.domain and len(encoded) == 300


def test_auto_engine(tmp_path, domain, codes, monkeypatch):
    path = write(codes, tmp_path / "c.csv")
    assert choose_engine(path, "spark") == "spark"
    assert choose_engine(path) == "memory"  # a small file
    monkeypatch.setattr(sources, "_installed", lambda module: True)
    monkeypatch.setattr(sources, "AUTO_ENGINE_BYTES", 10)
    assert choose_engine(path) == "duckdb"
    monkeypatch.setattr(sources, "_installed", lambda module: module != "pyarrow")
    monkeypatch.setattr(sources, "AUTO_ENGINE_BYTES", 10**9)
    assert choose_engine(tmp_path / "x.parquet") == "duckdb"  # no pyarrow: DuckDB reads it
    monkeypatch.setattr(sources, "_installed", lambda module: False)
    assert choose_engine(path) == "memory"
    with pytest.raises(ValueError, match="engine must be one of"):
        choose_engine(path, "pandas")


def test_options_of_another_engine_are_refused(tmp_path, domain, codes):
    path = write(codes, tmp_path / "c.csv")
    with pytest.raises(ValueError, match=r"\['memory_limit'\] only apply to the duckdb engine"):
        open_source(path, domain, "memory", memory_limit="1GB")
    with pytest.raises(ValueError, match=r"\['spark_master'\] only apply to the spark engine"):
        open_source(path, domain, "duckdb", spark_master="local[1]")
    with pytest.raises(TypeError, match="Domain or a Schema"):
        open_source(path, {"a": 3}, "memory")
    with pytest.raises(ValueError, match="extra_columns"):
        open_source(path, domain, "memory", extra_columns="drop")
    with pytest.raises(FileNotFoundError):
        open_source(tmp_path / "none.parquet", domain, "memory")
