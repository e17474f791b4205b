"""The service state's tables, and what the store needs of a database driver.

One schema serves SQLite and PostgreSQL (``{serial}`` is each one's auto-increment type); the
Protocols name the few DB-API calls :mod:`fastmwem.service.store` makes, so that sqlite3's and
psycopg's connections and cursors type-check alike.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["TABLES_SQL", "TABLES", "APPEND_ONLY", "GLOBAL", "Row", "Closable", "Rows", "DBCursor",
           "Connection"]

TABLES_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS budgets (scope TEXT PRIMARY KEY, budget TEXT NOT NULL,
    spent TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS analysts (id {serial} PRIMARY KEY, name TEXT UNIQUE NOT NULL,
    token_hash TEXT NOT NULL, created DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (seq BIGINT PRIMARY KEY, analyst_id INTEGER,
    record TEXT NOT NULL, epsilon DOUBLE PRECISION NOT NULL, created DOUBLE PRECISION NOT NULL,
    prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_head (id INTEGER PRIMARY KEY, length BIGINT NOT NULL,
    head TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (seq {serial} PRIMARY KEY, analyst_id INTEGER NOT NULL,
    request_id TEXT NOT NULL, query TEXT NOT NULL, value DOUBLE PRECISION NOT NULL,
    source TEXT NOT NULL, charged DOUBLE PRECISION NOT NULL, updates INTEGER NOT NULL,
    created DOUBLE PRECISION NOT NULL, UNIQUE (analyst_id, request_id));
CREATE TABLE IF NOT EXISTS measurements (seq INTEGER PRIMARY KEY, query TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS session (id INTEGER PRIMARY KEY, total DOUBLE PRECISION,
    noisy_threshold BIGINT)
"""

#: The tables of a state.
TABLES = ("meta", "budgets", "analysts", "ledger", "ledger_head", "answers", "measurements",
          "session")

APPEND_ONLY = "the ledger is append-only"

GLOBAL = "global"

#: A row read back: its values as the database driver returns them.
Row = tuple[Any, ...]


class Closable(Protocol):
    def close(self) -> None: ...


class Rows(Protocol):
    def fetchall(self) -> list[Any]: ...


class DBCursor(Rows, Protocol):
    """What the store uses of a DB-API cursor (sqlite3's or psycopg's)."""

    def execute(self, sql: str, parameters: tuple[object, ...], /) -> object: ...


class Connection(Closable, Protocol):
    """What :class:`Store` uses of a connection (sqlite3's or psycopg's)."""

    def execute(self, sql: str, parameters: tuple[object, ...], /) -> Rows: ...
