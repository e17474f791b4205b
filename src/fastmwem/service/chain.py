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
from collections.abc import Iterable, Mapping
from fractions import Fraction

from fastmwem.accounting import entry_from_record

__all__ = ["StateError", "genesis", "entry_hash", "walk", "check_budgets"]


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


def walk(rows: Iterable[tuple], first: str) -> tuple[int, str, dict[int | None, Fraction]]:
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
    for scope, (budget, used) in budgets.items():
        try:
            parsed[scope] = (Fraction(budget), Fraction(used))
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
