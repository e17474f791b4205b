"""The private data in a CSV or Parquet file, counted by DuckDB (embedded, larger than memory).

DuckDB reads the file where it lies and returns only counts: one aggregate pass validates every
cell when the source is opened (the record count and, per column, the count of each kind of bad
cell), and each call of ``marginals`` counts all the requested marginals in one more pass with
``GROUP BY GROUPING SETS``. Records never enter Python's memory; DuckDB keeps to
``memory_limit`` and spills what does not fit to ``temp_directory``.

Needs the ``duckdb`` extra (``pip install "fastmwem[duckdb]"``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence

import numpy as np

from fastmwem.data._checks import MAX_LISTED, check_columns, check_extra_columns_option
from fastmwem.data._files import check_input_file, not_utf8_error, require_module
from fastmwem.data.csvfile import read_csv_header
from fastmwem.data.domain import Domain
from fastmwem.data.parquetfile import is_parquet_path
from fastmwem.data.schema import Schema
from fastmwem.data.sources._engine import QuerySource, target_domain
from fastmwem.data.sources._sql import DUCKDB, Check, flags_query

__all__ = ["DuckDBSource"]

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT", "UHUGEINT"}
_LINE = re.compile(r"\bline:? (\d+)", re.IGNORECASE)


class DuckDBSource(QuerySource):
    """A CSV or Parquet file (by extension) counted by an embedded DuckDB.

    Args:
        path: the file. CSV files are read as text with the header checked as in
            :func:`~fastmwem.data.read_csv_columns`; Parquet columns keep their types.
        domain_or_schema: a :class:`~fastmwem.data.Domain` (the file holds integer codes) or a
            :class:`~fastmwem.data.Schema` (raw values, encoded inside the query).
        extra_columns: ``"error"`` (default) refuses columns the domain does not name;
            ``"ignore"`` skips them.
        memory_limit: DuckDB's memory limit, e.g. ``"2GB"`` (default: DuckDB's, 80% of RAM).
        temp_directory: where DuckDB spills; default a fresh directory under the system's
            temporary directory, removed by :meth:`close`.
        threads: DuckDB worker threads (default: DuckDB's, one per core).

    Raises:
        ImportError: duckdb is not installed.
        FileNotFoundError, IsADirectoryError: no such file.
        ValueError: as ``Dataset.from_csv`` / ``Schema.encode_csv`` (or their Parquet
            counterparts) for the same file: missing/extra/repeated columns, no rows, bad cells.
    """

    dialect = DUCKDB
    engine = "duckdb"

    def __init__(
        self,
        path: str | os.PathLike[str],
        domain_or_schema: Domain | Schema,
        *,
        extra_columns: str = "error",
        memory_limit: str | None = None,
        temp_directory: str | os.PathLike[str] | None = None,
        threads: int | None = None,
    ) -> None:
        super().__init__()
        duckdb = require_module("duckdb", "duckdb", "the duckdb engine")
        mode = check_extra_columns_option(extra_columns)
        names = target_domain(domain_or_schema).attributes
        self._parquet = is_parquet_path(path)
        self._what = "Parquet file" if self._parquet else "CSV file"
        self._path = check_input_file(path, self._what)
        context = f"{self._what} {self._path!r}"
        self._own_temp = temp_directory is None
        temp = tempfile.mkdtemp(prefix="fastmwem-duckdb-") if self._own_temp else os.fspath(
            temp_directory)
        self._temp = temp
        self._error = duckdb.Error
        try:
            self._con = duckdb.connect(":memory:", config=_config(memory_limit, temp, threads))
            # no progress bar: DuckDB would print it on stdout, which is the caller's
            self._con.execute("SET enable_progress_bar = false")
            header, kinds = self._columns()
            check_columns(header, names, mode, context)
            try:
                self._open(kinds, domain_or_schema, context)
            except _Sequential:
                # quoted newlines in a file with short rows: only the serial reader reads it
                self._table = _csv_table(self._path, header, parallel=False)
                self._open(kinds, domain_or_schema, context)
        except BaseException:
            self.close()
            raise

    # -- reading the file --------------------------------------------------------------------
    def _columns(self) -> tuple[list[str], dict[str, str]]:
        """The file's column names (repeats kept) and each column's kind."""
        if not self._parquet:
            header = read_csv_header(self._path, self._what)
            self._table = _csv_table(self._path, header)
            return header, dict.fromkeys(header, "text")
        self._table = f"read_parquet({_literal(self._path)})"
        schema = self._run(lambda: self._con.execute(
            f"SELECT name, num_children, type FROM parquet_schema({_literal(self._path)})"
        ).fetchall())
        header = _top_level(schema)
        types = self._run(lambda: self._con.execute(
            f"DESCRIBE SELECT * FROM {self._table}").fetchall())
        return header, {name: _kind(str(t)) for name, t, *_ in types}

    def _source(self) -> str:
        return self._table

    def _run(self, work):  # -> whatever work returns
        """Run ``work``; turn DuckDB's errors into ones that name the file, never its cells."""
        try:
            return work()
        except self._error as exc:
            message = str(exc)
            if "parallel=false" in message and "parallel = false" not in self._table:
                raise _Sequential from None
            if "unicode" in message.lower() or "utf-8" in message.lower():
                raise not_utf8_error(self._path, self._what) from None
            if isinstance(exc, getattr(_duckdb(), "OutOfMemoryException", ())):
                raise MemoryError(f"DuckDB ran out of memory on {self._what} {self._path!r}; "
                                  "raise memory_limit or free disk for temp_directory") from None
            line = _LINE.search(message)
            at = f" near line {line.group(1)}" if line else ""
            # DuckDB's message may quote the file's cells: name only the kind of error.
            raise ValueError(f"{self._what} {self._path!r} cannot be read{at} "
                             f"(DuckDB {type(exc).__name__})") from None

    def _query_one(self, sql: str) -> dict[str, object]:
        def work() -> dict[str, object]:
            cur = self._con.execute(sql)
            names = [d[0] for d in cur.description]
            return dict(zip(names, cur.fetchall()[0]))

        return self._run(work)

    def _query_columns(self, sql: str) -> dict[str, np.ndarray]:
        def work() -> dict[str, np.ndarray]:
            return {k: np.asarray(v) for k, v in self._con.execute(sql).fetchnumpy().items()}

        return self._run(work)

    def _first_rows(self, checks: Sequence[Check]) -> dict[str, list[int]]:
        """Stream the checks' flags in file order; stop once every check has its rows."""
        sql = flags_query(checks, self._plans, self.dialect, self._source())
        found: dict[str, list[int]] = {c.key: [] for c in checks}

        def work() -> None:
            cur = self._con.execute(sql)
            offset = 0
            while True:
                chunk = cur.fetch_df_chunk(16)
                if len(chunk) == 0:
                    return
                for key, rows in found.items():
                    if len(rows) < MAX_LISTED:
                        hits = np.flatnonzero(chunk[key].to_numpy() == 1)
                        rows.extend(int(offset + i) for i in hits[: MAX_LISTED - len(rows)])
                offset += len(chunk)
                if all(len(rows) >= MAX_LISTED for rows in found.values()):
                    return

        self._run(work)
        return found

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection and remove the temporary directory this source made."""
        con = getattr(self, "_con", None)
        if con is not None:
            with contextlib.suppress(Exception):
                con.close()
            self._con = None
        if self._own_temp:
            shutil.rmtree(self._temp, ignore_errors=True)


def _duckdb():  # -> module duckdb
    import duckdb

    return duckdb


def _config(memory_limit: str | None, temp: str, threads: int | None) -> dict[str, str]:
    config = {"temp_directory": temp, "preserve_insertion_order": "true"}
    if memory_limit is not None:
        if not isinstance(memory_limit, str) or not memory_limit.strip():
            raise TypeError(f"memory_limit must be a size such as '2GB', got {memory_limit!r}")
        config["memory_limit"] = memory_limit
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        config["threads"] = str(threads)
    return config


def _literal(text: str) -> str:
    return DUCKDB.text(text)


class _Sequential(Exception):
    """DuckDB's parallel CSV reader gave up on this file; read it again serially."""


def _csv_table(path: str, header: list[str], parallel: bool = True) -> str:
    """``read_csv`` with every column as text, RFC 4180 quoting, no type sniffing.

    Short rows read as missing cells (``null_padding``), as in the in-memory reader.
    """
    columns = ", ".join(f"{_literal(name)}: 'VARCHAR'" for name in dict.fromkeys(header))
    serial = "" if parallel else ", parallel = false"
    return (f"read_csv({_literal(path)}, header = true, auto_detect = false, "
            f"columns = {{{columns}}}, delim = ',', quote = '\"', escape = '\"', "
            f"null_padding = true, strict_mode = true{serial})")


def _top_level(schema: list[tuple[object, ...]]) -> list[str]:
    """The top-level field names of ``parquet_schema`` rows (pre-order; row 0 is the root)."""
    names = []
    i = 1
    while i < len(schema):
        names.append(str(schema[i][0]))
        i += 1 + _descendants(schema, i)
    return names


def _descendants(schema: list[tuple[object, ...]], i: int) -> int:
    total = 0
    for _ in range(int(schema[i][1] or 0)):
        child = i + 1 + total
        total += 1 + _descendants(schema, child)
    return total


def _kind(duck_type: str) -> str:
    t = duck_type.upper()
    if t == "VARCHAR":
        return "text"
    if t == "BOOLEAN":
        return "boolean"
    if t in _INTEGER_TYPES:
        return "integer"
    if t in ("FLOAT", "DOUBLE") or t.startswith("DECIMAL"):
        return "float"
    return duck_type
