"""The private data as a :class:`MarginalSource`: in memory, in DuckDB, or in Spark.

>>> from fastmwem.data import Dataset, Domain
>>> ds = Dataset([[0, 1], [1, 1]], Domain(["a", "b"], [2, 2]))
>>> isinstance(ds, MarginalSource), ds.marginals([["b"], ["a", "b"]])[0].tolist()
(True, [0.0, 2.0])
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fastmwem.data.dataset import Dataset
from fastmwem.data.domain import Domain
from fastmwem.data.io.checks import check_extra_columns_option
from fastmwem.data.io.files import check_input_file
from fastmwem.data.io.parquet import is_parquet_path
from fastmwem.data.schema import Schema
from fastmwem.data.sources._engine import target_domain
from fastmwem.data.sources.base import MarginalSource, check_attribute_sets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["AUTO_ENGINE_BYTES", "ENGINES", "MarginalSource", "check_attribute_sets",
           "choose_engine", "open_source"]

#: Engines that :func:`open_source` knows, and ``"auto"``.
ENGINES = ("auto", "memory", "duckdb", "spark")

#: ``engine="auto"`` counts files larger than this with DuckDB (when it is installed).
AUTO_ENGINE_BYTES = 64 * 2**20


def choose_engine(path: str | os.PathLike[str], engine: str = "auto") -> str:
    """The engine ``open_source`` uses: ``engine`` itself unless it is ``"auto"``.

    ``"auto"`` picks DuckDB for files above :data:`AUTO_ENGINE_BYTES` (and for Parquet files
    when pyarrow is missing) if duckdb is installed, else memory; Spark is never automatic. The
    choice changes nothing but speed and memory: every engine gives the same counts.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    if engine != "auto":
        return engine
    if not _installed("duckdb"):
        return "memory"
    name = os.fspath(path)
    if is_parquet_path(name) and not _installed("pyarrow"):
        return "duckdb"
    big = os.path.isfile(name) and os.path.getsize(name) > AUTO_ENGINE_BYTES
    return "duckdb" if big else "memory"


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def open_source(
    path: str | os.PathLike[str],
    domain_or_schema: Domain | Schema,
    engine: str = "auto",
    *,
    extra_columns: str = "error",
    spark: SparkSession | None = None,
    spark_master: str | None = None,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    threads: int | None = None,
) -> MarginalSource:
    """Open a CSV or Parquet file (by extension) as a validated :class:`MarginalSource`.

    Every cell is checked here, before any privacy budget can be spent, with the errors of the
    in-memory path (``Dataset.from_csv`` and ``Schema.encode_csv``, or their Parquet twins).

    Args:
        path: the file (``.parquet``/``.pq``/``.parq`` is Parquet, anything else CSV); for
            Spark also a Parquet directory or a URI.
        domain_or_schema: a :class:`Domain` (the file holds codes) or a :class:`Schema` (raw
            values, encoded by the engine).
        engine: ``"memory"`` (a :class:`Dataset`), ``"duckdb"``, ``"spark"``, or ``"auto"``
            (see :func:`choose_engine`).
        extra_columns: ``"error"`` (default) refuses columns the domain does not name;
            ``"ignore"`` skips them.
        spark, spark_master: a session to use, or the master of a new one (Spark only).
        memory_limit, temp_directory, threads: DuckDB settings (DuckDB only).

    Raises:
        ImportError: the engine's extra is not installed (the message names it).
        FileNotFoundError, IsADirectoryError: no such file.
        ValueError: bad columns or cells, an unknown engine, or options of another engine.
    """
    target_domain(domain_or_schema)
    mode = check_extra_columns_option(extra_columns)
    chosen = choose_engine(path, engine)
    _check_options(chosen, spark=spark, spark_master=spark_master, memory_limit=memory_limit,
                   temp_directory=temp_directory, threads=threads)
    if chosen == "duckdb":
        from fastmwem.data.sources.duckdb import DuckDBSource

        return DuckDBSource(path, domain_or_schema, extra_columns=mode, memory_limit=memory_limit,
                            temp_directory=temp_directory, threads=threads)
    if chosen == "spark":
        from fastmwem.data.sources.spark import SparkSource

        return SparkSource(path, domain_or_schema, spark=spark, master=spark_master,
                           extra_columns=mode)
    return _in_memory(path, domain_or_schema, mode)


def _check_options(engine: str, **options: object) -> None:
    owners = {"spark": "spark", "spark_master": "spark", "memory_limit": "duckdb",
              "temp_directory": "duckdb", "threads": "duckdb"}
    wrong = [k for k, v in options.items() if v is not None and owners[k] != engine]
    if wrong:
        raise ValueError(f"{wrong} only apply to the {owners[wrong[0]]} engine, not {engine!r}")


def _in_memory(path: str | os.PathLike[str], target: Domain | Schema, mode: str) -> Dataset:
    parquet = is_parquet_path(path)
    check_input_file(path, "Parquet file" if parquet else "CSV file")
    if isinstance(target, Domain):
        read = Dataset.from_parquet if parquet else Dataset.from_csv
        return read(path, target, extra_columns=mode)
    encode = target.encode_parquet if parquet else target.encode_csv
    return encode(path, extra_columns=mode)
