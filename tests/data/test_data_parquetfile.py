"""Parquet files: Dataset.from_parquet, Schema.encode_parquet and write_parquet."""

from __future__ import annotations

import io
import sys

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Categorical, Dataset, Domain, Schema
from fastmwem.data.io.parquet import (
    is_parquet_path,
    read_parquet_columns,
    read_parquet_header,
    write_parquet,
)
from tests._engines import require


@pytest.fixture(autouse=True)
def _pyarrow():
    require("pyarrow")


def test_round_trip_and_column_order(tmp_path):
    frame = pd.DataFrame({"b": [1, 0, 2], "a": ["x", "y", "x"]})
    path = tmp_path / "f.parquet"
    write_parquet(frame, path)
    assert read_parquet_header(path) == ["b", "a"]
    back = read_parquet_columns(path, ["a", "b"])
    assert list(back.columns) == ["a", "b"] and back["b"].tolist() == [1, 0, 2]
    buffer = io.BytesIO()
    write_parquet(frame, buffer)
    assert buffer.getvalue()[:4] == b"PAR1"
    blocks = tmp_path / "blocks.parquet"
    write_parquet((frame.iloc[i:i + 2] for i in range(0, 3, 2)), blocks)
    pd.testing.assert_frame_equal(pd.read_parquet(blocks), frame)
    with pytest.raises(ValueError, match="no blocks"):
        write_parquet(iter([]), tmp_path / "none.parquet")
    assert is_parquet_path("X.PARQUET") and is_parquet_path("x.pq") and not is_parquet_path("x.csv")


def test_dataset_and_schema_read_parquet(tmp_path):
    domain = Domain(["a", "b"], [3, 2])
    path = tmp_path / "c.parquet"
    write_parquet(pd.DataFrame({"b": [1, 0], "a": [2, 0]}), path)
    np.testing.assert_array_equal(Dataset.from_parquet(path, domain).records, [[2, 1], [0, 0]])
    schema = Schema([Categorical("s", ["F", "M"])])
    raw = tmp_path / "raw.parquet"
    write_parquet(pd.DataFrame({"s": ["M", None, "Q"]}), raw)
    with pytest.raises(ValueError) as info:
        schema.encode_parquet(raw)
    assert str(info.value) == (
        f"Parquet file {str(raw)!r}: column 's' has missing values (NaN/None/empty cells) but "
        "does not declare them: set missing=True on its spec (\"missing\": true in schema JSON) "
        "to give them a code of their own; column 's' has 1 values that are not declared categories, first rows [2] (declare "
        "them or set other=) (rows are 0-based data-row positions)")


def test_column_errors_name_the_file(tmp_path):
    domain = Domain(["a", "b"], [3, 2])
    path = tmp_path / "c.parquet"
    write_parquet(pd.DataFrame({"a": [0], "z": [1]}), path)
    with pytest.raises(ValueError, match=r"c.parquet'.*missing columns \['b'\].*unexpected "
                                         r"columns \['z'\]"):
        Dataset.from_parquet(path, domain)
    fake = tmp_path / "fake.parquet"
    fake.write_text("a,b\n0,1\n")
    with pytest.raises(ValueError, match="fake.parquet' is not a readable Parquet file"):
        Dataset.from_parquet(fake, domain)
    with pytest.raises(FileNotFoundError):
        Dataset.from_parquet(tmp_path / "none.parquet", domain)


def test_missing_pyarrow_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r'pip install "fastmwem\[parquet\]"'):
        write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "x.parquet")
