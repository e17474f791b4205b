"""The private data where a Spark cluster holds it, counted by Spark SQL.

The same plan as the DuckDB source: one aggregate pass validates every cell when the source is
opened, and ``marginals`` counts all requested marginals in one ``GROUPING SETS`` pass; only
counts travel back to Python. The session is the one the caller passes, else the active one,
else a new one on ``master`` (default ``local[2]``) with the web UI off. The source never stops
a session: the caller owns it (``spark.stop()``).

Needs the ``spark`` extra (``pip install "fastmwem[spark]"``) and Java 17 or later.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.data.io.checks import MAX_LISTED, check_columns, check_extra_columns_option
from fastmwem.data.io.csv import read_csv_header
from fastmwem.data.io.files import require_module
from fastmwem.data.io.parquet import is_parquet_path
from fastmwem.data.schema import Schema
from fastmwem.data.sources._engine import QuerySource, target_domain
from fastmwem.data.sources._sql import SPARK, Check, flags_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

_T = TypeVar("_T")

__all__ = ["SparkSource", "spark_session"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_KINDS = {"string": "text", "varchar": "text", "char": "text", "boolean": "boolean",
          "byte": "integer", "short": "integer", "integer": "integer", "long": "integer",
          "float": "float", "double": "float", "decimal": "float"}
# monotonically_increasing_id(): the partition index above bit 33, the row within it below
_ROW_BITS = 33
_ROW_ID = "fastmwem_row_id"


def spark_session(master: str = "local[2]") -> SparkSession:
    """The active Spark session, else a new one on ``master`` with the web UI off."""
    sql = require_module("pyspark.sql", "spark", "the spark engine")
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    if not isinstance(master, str) or not master:
        raise ValueError(f"spark master must be a non-empty string such as 'local[2]', got "
                         f"{master!r}")
    # Python workers must run this interpreter (a different minor version cannot talk to it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (sql.SparkSession.builder.master(master).appName("fastmwem")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


class SparkSource(QuerySource):
    """A CSV or Parquet file or directory (or a URI such as ``hdfs://...``) counted by Spark.

    Args:
        path: a CSV file (by extension) or Parquet (``.parquet`` files, directories, URIs).
        domain_or_schema: a :class:`~fastmwem.data.Domain` (codes) or
            :class:`~fastmwem.data.Schema` (raw values).
        spark: a ``SparkSession`` to use; default :func:`spark_session` on ``master``.
        master: the master URL when a session is created (default ``local[2]``).
        extra_columns: ``"error"`` (default) or ``"ignore"``, as for the other engines.

    Row positions in error messages count rows in Spark's reading order: the file's order for
    one file; for a directory, the order in which Spark reads its files.

    Raises:
        ImportError: pyspark is not installed.
        FileNotFoundError: a local path that does not exist.
        ValueError: as the in-memory path for the same file.
    """

    dialect = SPARK
    engine = "spark"

    def __init__(
        self,
        path: str | os.PathLike[str],
        domain_or_schema: Domain | Schema,
        *,
        spark: SparkSession | None = None,
        master: str | None = None,
        extra_columns: str = "error",
    ) -> None:
        super().__init__()
        sql = require_module("pyspark.sql", "spark", "the spark engine")
        mode = check_extra_columns_option(extra_columns)
        names = target_domain(domain_or_schema).attributes
        self._path = os.fspath(path)
        self._csv = not (is_parquet_path(self._path) or os.path.isdir(self._path))
        self._what = "CSV file" if self._csv else "Parquet file"
        context = f"{self._what} {self._path!r}"
        if not _URI.match(self._path) and not os.path.exists(self._path):
            raise FileNotFoundError(f"{self._what} {self._path!r} does not exist")
        if spark is None:
            spark = spark_session(master or "local[2]")
        elif not isinstance(spark, sql.SparkSession):
            raise TypeError(f"spark must be a SparkSession, got {type(spark).__name__}")
        self.spark = spark
        self._view = f"fastmwem_{uuid.uuid4().hex}"
        with self._case_sensitive():
            header, frame = self._read()
            check_columns(header, names, mode, context)
            kinds = {f.name: _kind(f.dataType) for f in frame.schema.fields}
            self._run(lambda: frame.createOrReplaceTempView(self._view))
            self._open(kinds, domain_or_schema, context)

    # -- reading -----------------------------------------------------------------------------
    def _read(self) -> tuple[list[str], DataFrame]:
        reader = self.spark.read
        if not self._csv:
            frame = self._run(lambda: reader.parquet(self._path))
            return list(frame.columns), frame
        if _URI.match(self._path):
            header = self._run(lambda: reader.option("header", True).csv(self._path).columns)
        else:
            header = read_csv_header(self._path, self._what)
        types = require_module("pyspark.sql.types", "spark", "the spark engine")
        schema = types.StructType([types.StructField(n, types.StringType())
                                   for n in dict.fromkeys(header)])
        frame = self._run(lambda: reader.csv(
            self._path, schema=schema, header=True, multiLine=True, quote='"', escape='"',
            mode="FAILFAST", encoding="UTF-8"))
        return header, frame

    @contextlib.contextmanager
    def _case_sensitive(self) -> Iterator[None]:
        """Column names compare exactly (``Age`` is not ``age``), as in the other engines."""
        conf = self.spark.conf
        before = conf.get("spark.sql.caseSensitive", "false")
        conf.set("spark.sql.caseSensitive", "true")
        try:
            yield
        finally:
            conf.set("spark.sql.caseSensitive", "false" if before is None else before)

    def _run(self, work: Callable[[], _T]) -> _T:
        """Run ``work``; Spark's errors become ones that name the file, never its cells."""
        try:
            return work()
        except Exception as exc:  # py4j and pyspark errors have no common public base
            if type(exc).__module__.split(".")[0] not in ("pyspark", "py4j"):
                raise
            raise ValueError(f"{self._what} {self._path!r} cannot be read by Spark "
                             f"({type(exc).__name__})") from None

    def _source(self) -> str:
        return self.dialect.ident(self._view)

    def _query_one(self, sql: str) -> dict[str, Any]:
        with self._case_sensitive():
            return self._run(lambda: self.spark.sql(sql).collect()[0].asDict())

    def _query_columns(self, sql: str) -> dict[str, np.ndarray]:
        with self._case_sensitive():
            frame = self._run(lambda: self.spark.sql(sql))
            rows = self._run(frame.collect)
        return {name: np.array([r[i] for r in rows], dtype=np.int64)
                for i, name in enumerate(frame.columns)}

    def _first_rows(self, checks: Sequence[Check]) -> dict[str, list[int]]:
        """Row positions from monotonically_increasing_id and the partitions' sizes."""
        view = self._source()
        sizes = self._query_columns(
            f"SELECT spark_partition_id() AS pid, count(*) AS n FROM {view} "
            "GROUP BY spark_partition_id()")
        order = np.argsort(sizes["pid"])
        offsets = dict(zip(sizes["pid"][order].tolist(),
                           (np.cumsum(sizes["n"][order]) - sizes["n"][order]).tolist()))
        source = f"(SELECT *, monotonically_increasing_id() AS {_ROW_ID} FROM {view}) AS s"
        flags = flags_query(checks, self._plans, self.dialect, source, keep=(_ROW_ID,))
        found = {}
        for c in checks:
            ids = self._query_columns(f"SELECT {_ROW_ID} FROM ({flags}) AS f WHERE {c.key} = 1 "
                                      f"ORDER BY {_ROW_ID} LIMIT {MAX_LISTED}")[_ROW_ID]
            found[c.key] = [int(offsets[int(i) >> _ROW_BITS] + (int(i) & ((1 << _ROW_BITS) - 1)))
                            for i in ids]
        return found

    def close(self) -> None:
        """Drop this source's temporary view (the session stays up)."""
        with contextlib.suppress(Exception):
            self.spark.catalog.dropTempView(self._view)


def _kind(data_type: DataType) -> str:
    return _KINDS.get(data_type.typeName(), data_type.simpleString())
