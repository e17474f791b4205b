"""Fixtures of the source tests: engines (skipped locally, required in CI) and small tables."""

from __future__ import annotations

import struct

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


def forge_statistics(path, true: float, claimed: float, fmt: str = "<q") -> None:
    """Make the Parquet file at ``path`` claim ``claimed`` where its statistics hold ``true``.

    pyarrow has no API to write statistics, so the footer (the Thrift metadata before the last
    8 bytes) is patched in place: every ``struct.pack(fmt, true)`` in it (min/max, current and
    legacy fields) becomes ``struct.pack(fmt, claimed)``, same length, so the file stays valid.
    Pick a ``true`` whose bytes occur nowhere else in the footer.
    """
    data = bytearray(open(path, "rb").read())
    length = struct.unpack("<i", bytes(data[-8:-4]))[0]
    start = len(data) - 8 - length
    old, new = struct.pack(fmt, true), struct.pack(fmt, claimed)
    footer = bytes(data[start:-8])
    if footer.count(old) == 0:
        raise ValueError(f"{true!r} is not in the footer's statistics")
    data[start:-8] = footer.replace(old, new)
    with open(path, "wb") as f:
        f.write(data)
