"""Fixtures of the source tests: engines (skipped locally, required in CI) and small tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Categorical, Domain, Integer, Numeric, Schema
from tests._engines import require, spark_session


@pytest.fixture(scope="session")
def spark():
    return spark_session()


@pytest.fixture
def duckdb_installed():
    require("duckdb")
    require("pyarrow")


@pytest.fixture
def domain() -> Domain:
    return Domain(["a", "b", "c"], [3, 4, 5])


@pytest.fixture
def codes(domain) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({a: rng.integers(0, s, 300) for a, s in zip(domain.attributes,
                                                                      domain.shape)})


@pytest.fixture
def schema() -> Schema:
    return Schema([
        Categorical("sex", ["F", "M"], other="?"),
        Numeric("age", 0, 100, bins=7, clip=True),
        Numeric("income", edges=[0, 1e4, 5e4, 2e5]),
        Integer("kids", 0, 5, clip=True),
        Categorical("job", [1, 2, "3", 4.5]),
        Categorical("grade", [1, 2, 3]),
    ])


@pytest.fixture
def raw(schema) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 300
    return pd.DataFrame({
        "sex": rng.choice(["F", "M", "X", "F y"], n),
        "age": np.round(rng.uniform(-10, 110, n), 1),
        "income": rng.choice([0.0, 1e4, 49_999.5, 2e5, 123.0], n),
        "kids": rng.integers(-1, 8, n),
        "job": rng.choice(["1", "2", "3", "4.5"], n),  # text matches labels by their text
        "grade": rng.integers(1, 4, n),  # integers match numeric labels by value
    })


def write(frame: pd.DataFrame, path) -> str:
    """Write ``frame`` as CSV or Parquet by the extension of ``path``."""
    if str(path).endswith(".parquet"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return str(path)
