"""SparkSource: the memory path's counts and errors through Spark SQL (few tests: Spark is slow).

These run for real in CI (.ci/run installs Java and pyspark); without them a developer sees a
skip that says what is missing.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Categorical, Dataset, Domain, Numeric, Schema
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


def test_nan_and_lying_statistics_are_refused_on_open(spark, tmp_path):
    # Spark does not fold checks by Parquet statistics (DuckDB did): both refused when opened
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from tests.data.sources.conftest import forge_statistics

    domain = Domain(["a"], [3])
    floats = np.tile(np.array([0.0, 1.0, 2.0]), 400)
    floats[1197] = np.nan
    nan = str(tmp_path / "nan.parquet")
    pq.write_table(pa.table({"a": floats}), nan, row_group_size=300)
    ints = np.tile(np.arange(3), 400)
    ints[777] = 987654321
    lying = str(tmp_path / "lying.parquet")
    pq.write_table(pa.table({"a": ints}), lying, row_group_size=300)
    forge_statistics(lying, 987654321, 2)
    for path in (nan, lying):
        want = _message(Dataset.from_parquet, path, domain)
        assert _message(open_source, path, domain, "spark", spark=spark) == want


def test_many_sets_in_batches_and_columns_named_like_the_queries_own(spark, tmp_path):
    # columns x0, x1, ... are also the names of the queries' derived values (x<j>)
    domain = Domain([f"x{i}" for i in range(11)], [2] * 11)
    rng = np.random.default_rng(9)
    frame = pd.DataFrame(rng.integers(0, 2, (200, 11)), columns=domain.attributes)
    path = write(frame, tmp_path / "binary.parquet")
    sets = list(itertools.combinations(domain.attributes, 3))
    source = open_source(path, domain, "spark", spark=spark)
    batches = []
    count = source._count
    source._count = lambda batch: batches.append(len(batch)) or count(batch)
    for got, want in zip(source.marginals(sets), Dataset.from_parquet(path, domain).marginals(sets)):
        np.testing.assert_array_equal(got, want)
    assert batches == [128, 37]  # 165 sets, at most SETS_PER_QUERY per query
    source.close()
