"""SparkSource: the memory path's counts and errors through Spark SQL (few tests: Spark is slow).

These run for real in CI (.ci/run installs Java and pyspark); without them a developer sees a
skip that says what is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data import Categorical, Dataset, Numeric, Schema
from fastmwem.data.sources import open_source
from tests.data.sources.conftest import write


def _message(make, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        make(*args, **kwargs)
    return str(info.value)


def test_counts_match_memory(spark, tmp_path, domain, codes, schema, raw):
    parquet = write(codes, tmp_path / "codes.parquet")
    csv = write(raw, tmp_path / "raw.csv")
    sets = [(), ("a",), ("c", "a"), ("a", "b", "c")]
    source = open_source(parquet, domain, "spark", spark=spark)
    assert len(source) == 300
    memory = Dataset.from_parquet(parquet, domain)
    for got, want in zip(source.marginals(sets), memory.marginals(sets)):
        np.testing.assert_array_equal(got, want)
    source.close()
    raw_source = open_source(csv, schema, "spark", spark=spark)
    np.testing.assert_array_equal(raw_source.marginal(["sex", "age", "job", "grade"]),
                                  schema.encode_csv(csv).marginal(["sex", "age", "job", "grade"]))


def test_errors_match_memory(spark, tmp_path, domain, codes, raw):
    bad = codes.astype(float)
    bad.loc[[4, 40], "b"] = np.nan
    bad.loc[7, "c"] = 9
    parquet = write(bad, tmp_path / "bad.parquet")
    want = _message(Dataset.from_parquet, parquet, domain)
    assert _message(open_source, parquet, domain, "spark", spark=spark) == want
    schema = Schema([Categorical("sex", ["F", "M"]), Numeric("age", 0, 100, bins=4)])
    csv = write(raw[["sex", "age"]].assign(age=raw["age"].astype(str)), tmp_path / "bad.csv")
    want = _message(schema.encode_csv, csv)
    assert "not declared categories" in want
    assert _message(open_source, csv, schema, "spark", spark=spark) == want
    missing = write(codes.drop(columns="a"), tmp_path / "missing.parquet")
    assert _message(open_source, missing, domain, "spark", spark=spark) == _message(
        Dataset.from_parquet, missing, domain)


def test_session_argument_is_checked(spark, tmp_path, domain, codes):
    path = write(codes, tmp_path / "c.parquet")
    with pytest.raises(TypeError, match="SparkSession"):
        open_source(path, domain, "spark", spark="local[2]")
    with pytest.raises(FileNotFoundError):
        open_source(tmp_path / "none.parquet", domain, "spark", spark=spark)
