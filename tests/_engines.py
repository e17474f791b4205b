"""Optional engines in tests: a clear skip for a developer, a failure in CI (CI=true)."""

from __future__ import annotations

import importlib
import os
import shutil

import pytest

_INSTALL = {"duckdb": "duckdb", "pyspark": "spark", "pyarrow": "parquet"}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str) -> None:
    """Skip with ``reason`` on a developer's machine; fail in CI, where nothing may be skipped."""
    if in_ci():
        pytest.fail(f"CI must run this test, but {reason} (.ci/run installs it)", pytrace=False)
    pytest.skip(reason)


def require(module: str):  # -> module
    """Import an optional package or skip (fail in CI) naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = _INSTALL.get(module.split(".")[0], module)
        unavailable(f'{module} is not installed (pip install ".[{extra}]")')


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and os.path.exists(os.path.join(home, "bin", "java"))))


def spark_session():  # -> pyspark.sql.SparkSession
    """One local[2] session for the whole test run (the first start takes ~15 s)."""
    require("pyspark")
    if not java_available():
        unavailable("Spark needs Java 17+, and no `java` is on PATH or in $JAVA_HOME "
                    "(apt-get install default-jre-headless)")
    from fastmwem.data.sources.spark import spark_session as start

    return start("local[2]")
