"""The private data in a CSV or Parquet file, counted by DuckDB (embedded, larger than memory).

DuckDB reads the file where it lies and returns only counts: one aggregate pass validates every
cell when the source is opened (the record count and, per column, the count of each kind of bad
cell), and each call of ``marginals`` counts the requested marginals with
``GROUP BY GROUPING SETS`` queries of a bounded number of sets each. Records never enter
Python's memory; DuckDB keeps to ``memory_limit`` and spills what does not fit to
``temp_directory``.

Queries never use a Parquet file's statistics (its min/max/null-count metadata): DuckDB's
optimizer would otherwise fold a check such as "value above the domain" to false wherever the
statistics claim no such value, so a file whose statistics are wrong, or a float column holding
NaN (which Parquet statistics leave out), would pass validation and fail (or miscount) only when
counted, after the privacy budget was charged.

Needs the ``duckdb`` extra (``pip install "fastmwem[duckdb]"``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.data.io.checks import MAX_LISTED, check_columns, check_extra_columns_option
from fastmwem.data.io.csv import read_csv_header
from fastmwem.data.io.files import check_input_file, not_utf8_error, require_module
from fastmwem.data.io.parquet import is_parquet_path
from fastmwem.data.schema import Schema
from fastmwem.data.sources._engine import SETS_PER_QUERY, QuerySource, target_domain
from fastmwem.data.sources._sql import DUCKDB, Check, flags_query

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

_T = TypeVar("_T")

__all__ = ["DuckDBSource"]

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT", "UHUGEINT"}
_LINE = re.compile(r"\bline:? (\d+)", re.IGNORECASE)
_SIZE = re.compile(r"([0-9.]+)\s*(bytes|[KMGTP]i?B)")
_UNITS = {"bytes": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
          "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
# What DuckDB holds per grouping set of a query and per worker thread (measured: under 1 MiB
# with duckdb 2.0, before the set's groups); at most half the memory limit is planned
# for it, the rest is left to the scan and the groups.
_SET_BYTES = 2 * 2**20


class DuckDBSource(QuerySource):
    """A CSV or Parquet file (by extension) counted by an embedded DuckDB.

    Args:
        path: the file. CSV files are read as text with the header checked as in
            :func:`~fastmwem.data.read_csv_columns`; Parquet columns keep their types.
        domain_or_schema: a :class:`~fastmwem.data.Domain` (the file holds integer codes) or a
            :class:`~fastmwem.data.Schema` (raw values, encoded inside the query).
        extra_columns: ``"error"`` (default) refuses columns the domain does not name;
            ``"ignore"`` skips them.
        memory_limit: DuckDB's memory limit, e.g. ``"2GB"`` (default: half the memory
            :func:`fastmwem._validation.memory_limit` allows, which honours
            ``$FASTMWEM_MEMORY_LIMIT`` and container limits).
        temp_directory: where DuckDB spills (an existing writable directory, or one that can
            be made); default a fresh directory under the system's temporary directory,
            removed by :meth:`close`.
        threads: DuckDB worker threads (default: the cores this process may use).

    Raises:
        ImportError: duckdb is not installed.
        FileNotFoundError, IsADirectoryError: no such file.
        ValueError: as ``Dataset.from_csv`` / ``Schema.encode_csv`` (or their Parquet
            counterparts) for the same file: missing/extra/repeated columns, no rows, bad cells;
            or settings DuckDB cannot work with (a ``memory_limit`` it does not read or too
            small for ``threads``, a ``temp_directory`` it cannot write).
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
        config = _config(memory_limit, threads)
        if temp_directory is not None:
            _check_temp_directory(os.fspath(temp_directory))
        temp = tempfile.mkdtemp(prefix="fastmwem-duckdb-") if temp_directory is None else (
            os.fspath(temp_directory))
        self._temp = temp
        self._error = duckdb.Error
        try:
            # the connection, then None once closed
            self._con: Any = _connect(duckdb, {**config, "temp_directory": temp}, memory_limit)
            # no progress bar: DuckDB would print it on stdout, which is the caller's
            self._con.execute("SET enable_progress_bar = false")
            self._sets_per_query = self._plan_queries()
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

    def _plan_queries(self) -> int:
        """How many grouping sets one query may hold within DuckDB's memory limit.

        Raises:
            ValueError: the limit cannot hold one set per thread (checked when the source is
                opened, so that counting never runs out of memory for a foreseeable reason).
        """
        limit, threads = self._con.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads')").fetchall()[0]
        size = _bytes(str(limit))
        if size is None:  # no limit DuckDB reports as a size: nothing to plan against
            return SETS_PER_QUERY
        per_set = _SET_BYTES * int(threads)
        if 2 * per_set > size:
            raise ValueError(
                f"memory_limit ({limit}) is too small for DuckDB to count marginals with "
                f"{threads} thread(s): it needs at least {2 * per_set // 2**20} MiB "
                f"({2 * _SET_BYTES // 2**20} MiB per thread); raise memory_limit or lower threads")
        return max(1, min(SETS_PER_QUERY, size // (2 * per_set)))

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

    def _run(self, work: Callable[[], _T]) -> _T:
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

    def _query_one(self, sql: str) -> dict[str, Any]:
        def work() -> dict[str, Any]:
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


def _duckdb() -> ModuleType:
    import duckdb

    return duckdb


def _config(memory_limit: str | None, threads: int | None) -> dict[str, str]:
    """DuckDB's settings: every resource setting explicit, and no use of file statistics."""
    if memory_limit is None:
        from fastmwem._validation import memory_limit as allowed

        memory_limit = f"{max(allowed() // 2, 2**20) // 2**20}MiB"
    elif not isinstance(memory_limit, str) or not memory_limit.strip():
        raise TypeError(f"memory_limit must be a size such as '2GB', got {memory_limit!r}")
    if threads is None:
        threads = _cores()
    elif isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    # statistics_propagation folds predicates by the Parquet min/max/null-count metadata,
    # which may be wrong and leaves NaN out: validation must see every value.
    return {"memory_limit": memory_limit, "threads": str(threads),
            "preserve_insertion_order": "true",
            "disabled_optimizers": "statistics_propagation"}


def _connect(duckdb: ModuleType, config: dict[str, str], memory_limit: str | None
             ) -> DuckDBPyConnection:
    try:
        return duckdb.connect(":memory:", config=config)
    except duckdb.Error as exc:
        if memory_limit is not None and "memory" in str(exc).lower():
            raise ValueError(f"DuckDB cannot work with memory_limit={memory_limit!r} "
                             f"({type(exc).__name__}); give a size such as '2GB' "
                             "(units KB, MB, GB, TB or KiB, MiB, GiB, TiB)") from None
        raise


def _cores() -> int:
    """The cores this process may run on (its affinity, where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _bytes(setting: str) -> int | None:
    """Bytes of a size as DuckDB prints it (``"1.8 GiB"``), or None if it is no size."""
    match = _SIZE.fullmatch(setting.strip())
    if not match:
        return None
    return int(float(match[1]) * _UNITS[match[2]])


def _check_temp_directory(path: str) -> None:
    """Refuse a spill directory DuckDB could not write (it finds out only when it spills)."""
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ValueError(f"temp_directory {path!r} is not a directory")
        where = path
    else:
        where = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(where):
            where = os.path.dirname(where)
    if not (os.path.isdir(where) and os.access(where, os.W_OK | os.X_OK)):
        raise ValueError(f"temp_directory {path!r} cannot be written (DuckDB spills there "
                         "when counting needs more than memory_limit)")


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


def _top_level(schema: list[tuple[Any, ...]]) -> list[str]:
    """The top-level field names of ``parquet_schema`` rows (pre-order; row 0 is the root)."""
    names = []
    i = 1
    while i < len(schema):
        names.append(str(schema[i][0]))
        i += 1 + _descendants(schema, i)
    return names


def _descendants(schema: list[tuple[Any, ...]], i: int) -> int:
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
