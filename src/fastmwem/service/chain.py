"""The ledger's hash chain and the checks a state passes before it is served.

Each ledger entry carries ``prev_hash`` (the hash of the entry before it; for the first entry, a
hash of the state's meta rows) and ``hash``, the SHA-256 of ``prev_hash`` and the entry's own
content (its position, analyst, record, epsilon and time). The chain's length and last hash are
kept in ``ledger_head``. At start-up the chain is walked from the first entry: an entry edited,
deleted, inserted or moved breaks it, and the budgets are recomputed from the entries and
compared with the stored totals. The hashes are not keyed: they reveal edits made without
recomputing the chain, not a rewrite of the whole state by someone who knows this scheme; to
detect that too, keep a copy of the head (``GET /v1/admin/budget`` shows it) outside the state.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from fastmwem.accounting import entry_from_record

__all__ = ["StateError", "genesis", "entry_hash", "walk", "check_budgets", "check_sqlite_file",
           "check_no_journal"]

_SQLITE_HEADER = b"SQLite format 3\x00"


class StateError(ValueError):
    """The state cannot be served as it stands (not a fastmwem state, damaged or edited)."""


def genesis(meta: Mapping[str, str]) -> str:
    """The ``prev_hash`` of the first entry: binds the ledger to its state's meta rows."""
    text = json.dumps(dict(sorted(meta.items())), separators=(",", ":"))
    return hashlib.sha256(("fastmwem ledger\n" + text).encode()).hexdigest()


def entry_hash(prev: str, seq: int, analyst_id: int | None, record: str, epsilon: float,
               created: float) -> str:
    """SHA-256 of the previous entry's hash and this entry's content (floats exactly, by repr)."""
    content = json.dumps([int(seq), None if analyst_id is None else int(analyst_id), record,
                          float(epsilon), float(created)], separators=(",", ":"))
    return hashlib.sha256((prev + "\n" + content).encode()).hexdigest()


def walk(rows: Iterable[tuple[Any, ...]], first: str) -> tuple[int, str, dict[int | None, Fraction]]:
    """Check the chain of ``(seq, analyst_id, record, epsilon, created, prev_hash, hash)`` rows
    in ``seq`` order; its length, last hash and the epsilon spent by each analyst (None: the
    data owner's own charges).

    Raises:
        StateError: naming the first entry that does not hold.
    """
    prev, length = first, 0
    spent: dict[int | None, Fraction] = {}
    for seq, analyst_id, record, epsilon, created, prev_hash, digest in rows:
        length += 1
        if int(seq) != length:
            raise StateError(f"the ledger fails its check: entry {length} is missing or out of "
                             "place (an entry was deleted or moved)")
        if prev_hash != prev:
            raise StateError(f"the ledger fails its check: entry {length} does not follow the "
                             "entry before it (entries were deleted, inserted or reordered)")
        if digest != entry_hash(prev, seq, analyst_id, record, epsilon, created):
            raise StateError(f"the ledger fails its check: entry {length} does not match its "
                             "hash (it was edited)")
        try:
            entry = entry_from_record(json.loads(record))
        except ValueError:
            raise StateError(f"the ledger fails its check: entry {length} is malformed") from None
        if len(entry.cost) != 1 or float(entry.cost[0]) != float(epsilon):
            raise StateError(f"the ledger fails its check: entry {length} is not a pure-DP "
                             "charge in agreement with its epsilon column")
        spent[analyst_id] = spent.get(analyst_id, Fraction(0)) + entry.cost[0]
        prev = digest
    return length, prev, spent


def check_budgets(budgets: Mapping[str, tuple[str, str]], analyst_ids: Iterable[int],
                  spent: Mapping[int | None, Fraction], epsilon: Fraction | None) -> None:
    """The stored budget rows against the totals recomputed from the ledger.

    ``budgets`` maps each scope (``global``, ``analyst:<id>``) to its stored (budget, spent)
    texts; ``epsilon`` is the budget the state must have (None: not checked).

    Raises:
        StateError: naming the scope whose row does not agree (never an amount).
    """
    parsed: dict[str, tuple[Fraction, Fraction]] = {}
    for scope, (budget_text, used_text) in budgets.items():
        try:
            parsed[scope] = (Fraction(budget_text), Fraction(used_text))
        except (ValueError, ZeroDivisionError):
            raise StateError(f"the budget row {scope!r} is malformed") from None
    if "global" not in parsed:
        raise StateError("the state has no global budget row")
    ids = set(analyst_ids)
    expected = {"global"} | {f"analyst:{i}" for i in ids}
    if set(parsed) != expected:
        raise StateError("the budget rows do not match the analysts (rows added or deleted)")
    if not set(spent) <= ids | {None}:
        raise StateError("the ledger charges an analyst the state does not have")
    total = sum(spent.values(), Fraction(0))
    budget, used = parsed["global"]
    if epsilon is not None and budget != epsilon:
        raise StateError("the global budget row differs from the session's epsilon (edited)")
    if used != total or used > budget:
        raise StateError("the global spent total differs from the sum of the ledger's entries "
                         "(edited); refusing to serve")
    for i in ids:
        budget, used = parsed[f"analyst:{i}"]
        if used != spent.get(i, Fraction(0)) or used > budget:
            raise StateError(f"the spent total of analyst {i} differs from the sum of its "
                             "ledger entries (edited); refusing to serve")


def check_sqlite_file(fd: int, what: str) -> None:
    """An existing state file (open as ``fd``, ``what`` naming it) must be a SQLite database,
    reached by one name only: SQLite keeps the write-ahead log beside the name it was opened by,
    so a second name (a hard link) would have a journal of its own and see another ledger.

    Raises:
        StateError: the file is empty, not a SQLite database, or has several names.
    """
    info = os.fstat(fd)
    if info.st_size == 0:
        raise StateError(f"{what} is empty (0 bytes): it is not a fastmwem state and is never "
                         "reinitialised. Restore it from a backup, or delete it if a first start "
                         "was interrupted")
    if os.pread(fd, len(_SQLITE_HEADER), 0) != _SQLITE_HEADER:
        raise StateError(f"{what} is not a SQLite database: not a fastmwem state")
    if info.st_nlink > 1:
        raise StateError(f"{what} has {info.st_nlink} names (hard links): SQLite keeps a journal "
                         "per name, so each would see another ledger; remove the other links "
                         "and serve it by one name")


def check_no_journal(path: str, what: str) -> None:
    """A new state file must have no write-ahead log beside it: SQLite would replay a stale
    one (left by a deleted state) into the new database.

    Raises:
        StateError: a non-empty ``path-wal`` exists.
    """
    journal = path + "-wal"
    if os.path.exists(journal) and os.path.getsize(journal) > 0:
        raise StateError(f"{what} does not exist but its write-ahead log {journal!r} does (a "
                         "state deleted without it?): restore the state, or remove the log to "
                         "start a new one")
