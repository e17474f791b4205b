"""Durable service state in SQLite (WAL mode, the default) or PostgreSQL (psycopg 3).

One schema for both. Budgets are kept as exact fractions (text) in ``budgets`` rows: ``global``
(the data owner's epsilon) and ``analyst:<id>`` (each analyst's share). A charge is one
transaction that locks those rows (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR
UPDATE``), checks both budgets, appends to ``ledger`` and updates ``spent``: concurrent requests,
in one process or several, can never overspend. Every commit is durable before it returns
(SQLite ``synchronous=FULL``; PostgreSQL's default), so a charge counts as spent even if the
server dies before answering.

The ledger is append-only (a trigger refuses updates and deletes) and hash-chained
(:mod:`~fastmwem.service.chain`); :meth:`Store.verify` checks the chain and the budget totals
before a state is served. One server serves a state: :meth:`Store.lease` takes an exclusive lock
on the database itself (SQLite: ``flock`` on the database file, whatever name or link it is
reached by; PostgreSQL: a session-level advisory lock in the database).

The state holds the secret sparse-vector threshold and a hash of the data file: protect it like
the data.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from fastmwem.accounting import (
    Admit,
    BudgetExceededError,
    LedgerEntry,
    entry_from_record,
    entry_to_record,
)
from fastmwem.service import chain
from fastmwem.service.chain import StateError
from fastmwem.service.sql import (
    APPEND_ONLY,
    GLOBAL,
    TABLES,
    TABLES_SQL,
    Closable,
    Connection,
    DBCursor,
    Row,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["Store", "SQLiteStore", "PostgresStore", "open_store", "StoredAnswer",
           "StateError", "TABLES", "GLOBAL", "Row"]

def analyst_scope(analyst_id: int) -> str:
    return f"analyst:{analyst_id}"


@dataclass(frozen=True)
class StoredAnswer:
    analyst_id: int
    request_id: str
    query: dict[str, Any]
    value: float
    source: str
    charged: float
    updates: int
    created: float

    def to_json(self) -> dict[str, object]:
        return {"request_id": self.request_id, "query": self.query, "value": self.value,
                "source": self.source, "charged": self.charged, "updates": self.updates,
                "time": self.created}


class Store:
    """The SQL shared by both back ends; subclasses provide connections and row locks."""

    placeholder = "?"
    serial = "INTEGER"
    lock_suffix = ""

    def __init__(self) -> None:
        # One connection a thread, kept here (not in thread-locals) so that close() ends all.
        self._conns: dict[int, Connection] = {}
        self._conns_lock = threading.Lock()
        self._held: Closable | None = None
        self._genesis: str | None = None

    # -- connections and transactions -------------------------------------------------------------
    def _connect(self) -> Connection:
        raise NotImplementedError

    def _conn(self) -> Connection:
        key = threading.get_ident()
        with self._conns_lock:
            conn = self._conns.get(key)
        if conn is None:
            conn = self._connect()
            with self._conns_lock:
                self._conns[key] = conn
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Cursor]:
        """A write transaction, committed durably on exit, rolled back on any exception."""
        raise NotImplementedError
        yield  # pragma: no cover

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def query(self, sql: str, args: Sequence[object] = ()) -> list[Row]:
        """Rows of one read statement (atomic on its own; no write lock taken)."""
        conn = self._conn()
        return list(conn.execute(self._sql(sql), tuple(args)).fetchall())

    def _schema(self) -> list[str]:
        """The statements making the tables and the ledger's append-only trigger."""
        return [s for s in TABLES_SQL.format(serial=self.serial).split(";") if s.strip()]

    def _create(self, cur: _Cursor) -> None:
        for statement in self._schema():
            cur.run(statement)

    def create_schema(self) -> None:
        with self.transaction() as cur:
            self._create(cur)

    def close(self) -> None:
        """Close every connection and give up the lease."""
        with self._conns_lock:
            conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        if self._held is not None:
            self._held.close()
            self._held = None

    # -- what the state is, and its checks ---------------------------------------------------------
    def tables(self) -> set[str]:
        raise NotImplementedError

    def inspect(self) -> str:
        """``"new"`` for a state that may be initialised, ``"existing"`` for one with meta rows.

        Raises:
            StateError: the target exists but is not a fastmwem state (nothing is written).
        """
        found = self.tables() & set(TABLES)
        if not found and self._may_initialise():
            return "new"
        if "meta" not in found or not self.query("SELECT value FROM meta WHERE key = 'format'"):
            raise StateError(f"{self.describe()} exists but is not a fastmwem state (it has no "
                             "fastmwem meta rows); it is never reinitialised: give another "
                             "--state, or restore the state from a backup")
        return "existing"

    def _may_initialise(self) -> bool:
        return True

    def describe(self) -> str:
        return "the state"

    def verify(self, epsilon: Fraction | None = None) -> None:
        """Check a state before it is served: every table, the ledger's hash chain and head, and
        the budget rows against the totals recomputed from the ledger.

        Raises:
            StateError: naming the first check that fails.
        """
        missing = sorted(set(TABLES) - self.tables())
        if missing:
            raise StateError(f"{self.describe()} lacks the tables {missing}: it is not a "
                             "complete fastmwem state (made by an older version?)")
        rows = self.query("SELECT seq, analyst_id, record, epsilon, created, prev_hash, hash "
                          "FROM ledger ORDER BY seq")
        length, head, spent = chain.walk(rows, self.genesis())
        stored = self.query("SELECT length, head FROM ledger_head WHERE id = 1")
        if not stored or (int(stored[0][0]), stored[0][1]) != (length, head):
            raise StateError("the ledger fails its check: its head row does not match its last "
                             "entry (entries were deleted at its end, or the head was edited)")
        budgets = {scope: (b, s) for scope, b, s in
                   self.query("SELECT scope, budget, spent FROM budgets")}
        ids = [int(i) for (i,) in self.query("SELECT id FROM analysts")]
        chain.check_budgets(budgets, ids, spent, epsilon)

    def genesis(self) -> str:
        """The first entry's ``prev_hash`` (the meta rows never change once written)."""
        if self._genesis is None:
            self._genesis = chain.genesis(self.meta())
        return self._genesis

    def ledger_head(self) -> tuple[int, str]:
        """The ledger's length and last hash (keep a copy elsewhere to detect a rewrite)."""
        rows = self.query("SELECT length, head FROM ledger_head WHERE id = 1")
        return (int(rows[0][0]), str(rows[0][1])) if rows else (0, "")

    # -- meta, budgets, analysts ------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self.query("SELECT key, value FROM meta"))

    def initialise(self, meta: dict[str, str], epsilon: Fraction) -> bool:
        """Make the tables and write the meta rows, the global budget and the empty ledger's
        head of a new state, in one transaction; False if the state has meta rows already."""
        with self.transaction() as cur:
            self._create(cur)
            if cur.all("SELECT key FROM meta"):
                return False
            for key, value in meta.items():
                cur.run("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))
            cur.run("INSERT INTO budgets (scope, budget, spent) VALUES (?, ?, ?)",
                    (GLOBAL, str(epsilon), "0"))
            cur.run("INSERT INTO session (id, total, noisy_threshold) VALUES (1, NULL, NULL)")
            cur.run("INSERT INTO ledger_head (id, length, head) VALUES (1, 0, ?)",
                    (chain.genesis(meta),))
        return True

    def budget(self, scope: str) -> tuple[Fraction, Fraction] | None:
        rows = self.query("SELECT budget, spent FROM budgets WHERE scope = ?", (scope,))
        return (Fraction(rows[0][0]), Fraction(rows[0][1])) if rows else None

    def add_analyst(self, name: str, budget: Fraction, make_hash: Callable[[int], str]) -> int:
        """A new analyst row and its budget; ``make_hash(id)`` gives its token's hash."""
        with self.transaction() as cur:
            if cur.all("SELECT id FROM analysts WHERE name = ?", (name,)):
                raise ValueError(f"an analyst named {name!r} exists already")
            cur.run("INSERT INTO analysts (name, token_hash, created) VALUES (?, '', ?)",
                    (name, time.time()))
            analyst_id = int(cur.all("SELECT id FROM analysts WHERE name = ?", (name,))[0][0])
            cur.run("UPDATE analysts SET token_hash = ? WHERE id = ?",
                    (make_hash(analyst_id), analyst_id))
            cur.run("INSERT INTO budgets (scope, budget, spent) VALUES (?, ?, '0')",
                    (analyst_scope(analyst_id), str(budget)))
        return analyst_id

    def set_analyst_budget(self, name: str, budget: Fraction) -> None:
        with self.transaction() as cur:
            rows = cur.all("SELECT id FROM analysts WHERE name = ?", (name,))
            if not rows:
                raise LookupError(f"no analyst named {name!r}")
            scope = analyst_scope(int(rows[0][0]))
            spent = Fraction(cur.all(f"SELECT spent FROM budgets WHERE scope = ?{self.lock_suffix}",
                                     (scope,))[0][0])
            if budget < spent:
                raise ValueError(f"analyst {name!r} has spent {float(spent)} already; a budget "
                                 "cannot be set below what is spent")
            cur.run("UPDATE budgets SET budget = ? WHERE scope = ?", (str(budget), scope))

    def analyst_hash(self, analyst_id: int) -> str | None:
        rows = self.query("SELECT token_hash FROM analysts WHERE id = ?", (analyst_id,))
        return str(rows[0][0]) if rows else None

    def analysts(self) -> list[dict[str, object]]:
        rows = self.query("SELECT a.id, a.name, b.budget, b.spent FROM analysts a JOIN budgets b "
                          "ON b.scope = 'analyst:' || a.id ORDER BY a.id")
        return [{"id": int(i), "name": n, "budget": float(Fraction(b)),
                 "spent": float(Fraction(s)), "remaining": float(Fraction(b) - Fraction(s))}
                for i, n, b, s in rows]

    # -- the ledger ---------------------------------------------------------------------------------
    def ledger(self) -> list[tuple[LedgerEntry, int | None, float]]:
        rows = self.query("SELECT record, analyst_id, created FROM ledger ORDER BY seq")
        return [(entry_from_record(json.loads(r)), a, float(t)) for r, a, t in rows]

    def charge(self, analyst_id: int | None, entries: Sequence[LedgerEntry], admit: Admit) -> None:
        """Append ``entries`` if the global budget (``admit``) and the analyst's allow them."""
        cost = sum((e.cost[0] for e in entries), Fraction(0))
        with self.transaction() as cur:
            scopes = [GLOBAL] + ([] if analyst_id is None else [analyst_scope(analyst_id)])
            rows = {}
            for scope in scopes:  # always in this order: no deadlock between writers
                found = cur.all(f"SELECT budget, spent FROM budgets WHERE scope = ?"
                                f"{self.lock_suffix}", (scope,))
                if not found:
                    raise LookupError(f"no budget row {scope!r}")
                rows[scope] = (Fraction(found[0][0]), Fraction(found[0][1]))
            admit((rows[GLOBAL][1],))
            if analyst_id is not None:
                budget, spent = rows[analyst_scope(analyst_id)]
                if spent + cost > budget:
                    raise BudgetExceededError(
                        f"this analyst's budget would be exceeded: a charge of epsilon "
                        f"{float(cost):.6g} with {float(spent):.6g} of {float(budget):.6g} spent"
                    )
            # Under the budget row's lock: no other charge appends between this read and ours.
            head = cur.all(f"SELECT length, head FROM ledger_head WHERE id = 1{self.lock_suffix}")
            if not head:
                raise StateError("the state has no ledger head row")
            seq, prev = int(head[0][0]), str(head[0][1])
            now = time.time()
            for entry in entries:
                seq += 1
                record, epsilon = json.dumps(entry_to_record(entry)), float(entry.cost[0])
                digest = chain.entry_hash(prev, seq, analyst_id, record, epsilon, now)
                cur.run("INSERT INTO ledger (seq, analyst_id, record, epsilon, created, "
                        "prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (seq, analyst_id, record, epsilon, now, prev, digest))
                prev = digest
            cur.run("UPDATE ledger_head SET length = ?, head = ? WHERE id = 1", (seq, prev))
            for scope, (_, spent) in rows.items():
                cur.run("UPDATE budgets SET spent = ? WHERE scope = ?", (str(spent + cost), scope))

    # -- the session --------------------------------------------------------------------------------
    def session_row(self) -> tuple[float | None, int | None]:
        total, threshold = self.query("SELECT total, noisy_threshold FROM session WHERE id = 1")[0]
        return (None if total is None else float(total),
                None if threshold is None else int(threshold))

    def set_total(self, total: float) -> None:
        with self.transaction() as cur:
            cur.run("UPDATE session SET total = ? WHERE id = 1", (total,))

    def measurements(self) -> list[tuple[dict[str, Any], float]]:
        rows = self.query("SELECT query, value FROM measurements ORDER BY seq")
        return [(json.loads(q), float(v)) for q, v in rows]

    def find_answer(self, analyst_id: int, request_id: str) -> StoredAnswer | None:
        rows = self.query("SELECT analyst_id, request_id, query, value, source, charged, updates, "
                          "created FROM answers WHERE analyst_id = ? AND request_id = ?",
                          (analyst_id, request_id))
        return _answers(rows)[0] if rows else None

    def save_answer(self, answer: StoredAnswer, measurement: dict[str, Any] | None,
                    noisy_threshold: int | None) -> None:
        """The released answer, its measurement (if any: the query in codes, as the session
        replays it) and the sparse-vector state, at once."""
        with self.transaction() as cur:
            cur.run("INSERT INTO answers (analyst_id, request_id, query, value, source, charged, "
                    "updates, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (answer.analyst_id, answer.request_id, json.dumps(answer.query), answer.value,
                     answer.source, answer.charged, answer.updates, answer.created))
            if measurement is not None:
                cur.run("INSERT INTO measurements (seq, query, value) VALUES (?, ?, ?)",
                        (answer.updates, json.dumps(measurement), answer.value))
            cur.run("UPDATE session SET noisy_threshold = ? WHERE id = 1", (noisy_threshold,))

    def answers(self, analyst_id: int | None = None) -> list[StoredAnswer]:
        sql = ("SELECT analyst_id, request_id, query, value, source, charged, updates, created "
               "FROM answers")
        if analyst_id is None:
            return _answers(self.query(sql + " ORDER BY seq"))
        return _answers(self.query(sql + " WHERE analyst_id = ? ORDER BY seq", (analyst_id,)))

    def lease(self) -> None:
        """Take this state for this process, or raise ``RuntimeError`` if another server holds
        it (one process serves a state); :meth:`close` gives it up."""


def _answers(rows: list[Row]) -> list[StoredAnswer]:
    return [StoredAnswer(int(a), r, json.loads(q), float(v), s, float(c), int(u), float(t))
            for a, r, q, v, s, c, u, t in rows]


class _Cursor:
    """``run`` (no result) and ``all`` (rows) on one connection, with the store's placeholders."""

    def __init__(self, store: Store, cursor: DBCursor) -> None:
        self._store = store
        self._cursor = cursor

    def run(self, sql: str, args: Sequence[object] = ()) -> None:
        self._cursor.execute(self._store._sql(sql), tuple(args))

    def all(self, sql: str, args: Sequence[object] = ()) -> list[Row]:
        self.run(sql, args)
        return list(self._cursor.fetchall())


class SQLiteStore(Store):
    """A state file in SQLite's WAL mode (readers never block the one writer)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._created = False

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.Error:
            conn.close()  # a damaged file: leave no -wal/-shm files behind the refusal
            raise
        return conn

    def _schema(self) -> list[str]:
        return [*super()._schema(), *(
            f"CREATE TRIGGER IF NOT EXISTS ledger_no_{verb.lower()} BEFORE {verb} ON ledger "
            f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END" for verb in ("UPDATE", "DELETE"))]

    def tables(self) -> set[str]:
        return {str(n) for (n,) in self.query("SELECT name FROM sqlite_master WHERE type = "
                                              "'table'")}

    def describe(self) -> str:
        return f"the state file {self.path!r}"

    def _may_initialise(self) -> bool:
        return self._created  # a file made by this lease; never one that was there before

    def inspect(self) -> str:
        try:
            if not self._created:
                problems = [r for (r,) in self.query("PRAGMA integrity_check")]
                if problems != ["ok"]:
                    raise StateError(f"{self.describe()} fails SQLite's integrity check "
                                     f"({len(problems)} problems: the database is malformed); "
                                     "restore it from a backup")
            return super().inspect()
        except sqlite3.DatabaseError:
            raise StateError(f"{self.describe()} is damaged (SQLite cannot read it as a "
                             "database); restore it from a backup") from None

    def initialise(self, meta: dict[str, str], epsilon: Fraction) -> bool:
        try:
            return super().initialise(meta, epsilon)
        except BaseException:
            if self._created:  # nothing was committed to the file this lease made: remove it
                self.close()
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(OSError):
                        os.unlink(self.path + suffix)
            raise

    def verify(self, epsilon: Fraction | None = None) -> None:
        try:
            super().verify(epsilon)
        except sqlite3.DatabaseError:
            raise StateError(f"{self.describe()} is damaged (SQLite cannot read it); restore it "
                             "from a backup") from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Cursor]:
        conn = cast(sqlite3.Connection, self._conn())  # made by _connect
        cursor = conn.cursor()
        # IMMEDIATE takes the write lock at once: a read-then-write inside cannot be overtaken.
        cursor.execute("BEGIN IMMEDIATE")
        try:
            yield _Cursor(self, cursor)
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")

    def lease(self) -> None:
        """An exclusive ``flock`` on the database file itself, held while this store is open.

        The lock is on the file (its inode), not on a name: a symbolic or hard link to a served
        state is refused too. A lock file beside the given path would not see those. A file
        that exists must be a SQLite database reached by one name only: SQLite names the
        write-ahead log after the path, so a second name of the file would have a journal of
        its own and see another ledger.
        """
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            created = True
        except FileExistsError:
            created = False
            try:
                fd = os.open(self.path, os.O_RDWR)  # follows a symbolic link to the file
            except OSError as exc:
                raise StateError(f"cannot open the state file {self.path!r}: "
                                 f"{exc.strerror}") from None
        handle = os.fdopen(fd, "rb")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RuntimeError(f"another server is serving {self.path!r} (its database file "
                               "is locked)") from None
        try:
            if created:
                chain.check_no_journal(self.path, self.describe())
            else:
                chain.check_sqlite_file(fd, self.describe())
        except BaseException:
            if created:
                os.unlink(self.path)
            handle.close()
            raise
        self._held, self._created = handle, created


#: The advisory lock a PostgreSQL state's server holds (one server per database).
LEASE_KEY = 8675309
#: Seconds a server waits for a lease whose last holder has just gone.
LEASE_WAIT = 5.0


class PostgresStore(Store):
    """State in a PostgreSQL database (psycopg 3); rows are locked with ``FOR UPDATE``."""

    placeholder = "%s"
    serial = "BIGSERIAL"
    lock_suffix = " FOR UPDATE"

    def __init__(self, url: str) -> None:
        super().__init__()
        import psycopg

        self._psycopg = psycopg
        self.url = url

    def _connect(self) -> psycopg.Connection[Row]:
        return self._psycopg.connect(self.url, autocommit=True)

    def _schema(self) -> list[str]:
        return [*super()._schema(), f"""
            CREATE OR REPLACE FUNCTION fastmwem_ledger_append_only() RETURNS trigger
            LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$""",
                "DROP TRIGGER IF EXISTS ledger_append_only ON ledger",
                "CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger FOR EACH ROW "
                "EXECUTE FUNCTION fastmwem_ledger_append_only()",
                "DROP TRIGGER IF EXISTS ledger_no_truncate ON ledger",
                "CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger FOR EACH STATEMENT "
                "EXECUTE FUNCTION fastmwem_ledger_append_only()"]

    def tables(self) -> set[str]:
        return {str(n) for (n,) in self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()")}

    def describe(self) -> str:
        return "the PostgreSQL database"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Cursor]:
        conn = cast("psycopg.Connection[Row]", self._conn())  # made by _connect
        with conn.transaction(), conn.cursor() as cursor:
            yield _Cursor(self, cursor)

    def lease(self) -> None:
        conn = self._psycopg.connect(self.url, autocommit=True)
        # A session-level advisory lock: released by the server when this connection dies. The
        # backend of a connection that was just closed, or whose process was killed, may not
        # have noticed yet, so a held lock is asked for again for up to LEASE_WAIT seconds.
        deadline = time.monotonic() + LEASE_WAIT
        while True:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (LEASE_KEY,)).fetchone()
            if row is not None and row[0]:
                break
            if time.monotonic() >= deadline:
                conn.close()
                raise RuntimeError("another server is serving this PostgreSQL state (its "
                                   "advisory lock is held)")
            time.sleep(0.1)
        self._held = conn

    def close(self) -> None:
        # Give the lease back before closing: the server frees a closed session's lock only
        # when its backend exits, which a restart in the same instant could beat.
        if self._held is not None:
            with contextlib.suppress(Exception):
                held = cast("psycopg.Connection[Row]", self._held)  # made by lease
                held.execute("SELECT pg_advisory_unlock(%s)", (LEASE_KEY,))
        super().close()


def open_store(target: str) -> Store:
    """A PostgreSQL store for a ``postgresql://`` (or ``postgres://``) URL, else SQLite."""
    if target.startswith(("postgresql://", "postgres://")):
        return PostgresStore(target)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise ValueError(f"--state: the directory {directory!r} does not exist")
    return SQLiteStore(target)
