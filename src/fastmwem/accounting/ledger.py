"""The ledger of accepted charges: entries, their JSON records, and the stores that keep them."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, runtime_checkable

from fastmwem.accounting.events import _EVENT_PARAMS, _EVENT_TYPES, PrivacyEvent
from fastmwem.accounting.exact_numbers import exact, show


@dataclass(frozen=True)
class LedgerEntry:
    """One accepted charge: the event as given and what it cost in the accountant's currency."""

    label: str
    event: PrivacyEvent
    cost: tuple[Fraction, ...]


def entry_to_record(entry: LedgerEntry) -> dict[str, object]:
    """A ledger entry as a JSON-ready record with exact fraction strings (read back with
    :func:`entry_from_record`).

    >>> from fastmwem.accounting import PureDP
    >>> entry_to_record(LedgerEntry("a", PureDP(0.25), (Fraction(1, 4),)))
    {'label': 'a', 'event': 'PureDP', 'params': {'epsilon': '1/4'}, 'cost': ['1/4']}
    """
    params = {key: str(getattr(entry.event, key)) for key in _EVENT_PARAMS[type(entry.event)]}
    return {"label": entry.label, "event": type(entry.event).__name__, "params": params,
            "cost": [str(c) for c in entry.cost]}


def entry_from_record(record: object) -> LedgerEntry:
    """The ledger entry a record of :func:`entry_to_record` describes (exact round trip).

    Raises:
        ValueError: the record is not such a record (names the field at fault).
    """
    if not isinstance(record, dict):
        raise ValueError(f"a ledger record must be a JSON object, got {type(record).__name__}")
    kinds = {cls.__name__: cls for cls in _EVENT_TYPES}
    kind = record.get("event")
    if kind not in kinds:
        raise ValueError(f"ledger record: unknown event {kind!r}; expected one of {sorted(kinds)}")
    params, cost, label = record.get("params"), record.get("cost"), record.get("label")
    names = _EVENT_PARAMS[kinds[kind]]
    if not isinstance(params, dict) or sorted(params) != sorted(names):
        raise ValueError(f"ledger record: params of {kind} must be exactly {list(names)}")
    if not isinstance(cost, list) or not cost or not all(isinstance(c, str) for c in cost):
        raise ValueError("ledger record: cost must be a non-empty list of fraction strings")
    if not isinstance(label, str):
        raise ValueError("ledger record: label must be a string")
    event = kinds[kind](*(exact(params[n], f"ledger record {n}", allow_zero=True) for n in names))
    return LedgerEntry(label, event, tuple(exact(c, "ledger record cost", allow_zero=True)
                                           for c in cost))

#: ``admit(spent)`` raises :class:`BudgetExceededError` to refuse a charge given what is spent.
Admit = Callable[[tuple[Fraction, ...]], None]


@runtime_checkable
class LedgerStore(Protocol):
    """Where an :class:`Accountant` keeps its accepted charges (in memory, SQLite, PostgreSQL).

    ``commit`` is the only write. It must be atomic and isolated against every other writer of
    the same ledger (threads or processes): read the total spent, call ``admit`` with it (which
    raises to refuse the charge), append ``entries``, and make that durable, all or nothing. A
    durable store commits before it returns, so a charge it has accepted counts as spent even if
    the process dies right after.
    """

    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every accepted charge, in commit order."""

    def spent(self, width: int) -> tuple[Fraction, ...]:
        """The sum of the stored costs (``width`` zeros for an empty ledger)."""

    def commit(self, entries: Sequence[LedgerEntry], admit: Admit) -> None:
        """Atomically: ``admit(spent)``, then append ``entries``."""


class MemoryLedgerStore:
    """A ledger in this process's memory (the default store); thread-safe.

    ``entries`` may hold a ledger read back with :func:`entry_from_record`.
    """

    def __init__(self, entries: Iterable[LedgerEntry] = ()) -> None:
        self._entries = list(entries)
        for entry in self._entries:
            if not isinstance(entry, LedgerEntry):
                raise TypeError(f"entries must be LedgerEntry objects, got {type(entry).__name__}")
        # The running total, so that a charge costs O(1) rather than a pass over the ledger
        # (a service's ledger grows by one entry per answer); None until first needed.
        self._sum: tuple[Fraction, ...] | None = None
        self._lock = threading.Lock()

    def entries(self) -> tuple[LedgerEntry, ...]:
        with self._lock:
            return tuple(self._entries)

    def spent(self, width: int) -> tuple[Fraction, ...]:
        with self._lock:
            return self._running(width)

    def commit(self, entries: Sequence[LedgerEntry], admit: Admit) -> None:
        with self._lock:
            width = len(entries[0].cost) if entries else 0
            total = self._running(width)
            added = _total(entries, width)  # also refuses a batch that mixes currencies
            admit(total)
            self._entries.extend(entries)
            self._sum = tuple(t + a for t, a in zip(total, added))

    def _running(self, width: int) -> tuple[Fraction, ...]:
        if self._sum is None or len(self._sum) != width:
            self._sum = _total(self._entries, width)  # exact sums: any order gives the same
        return self._sum

    def __getstate__(self) -> dict[str, Iterable[LedgerEntry]]:
        # A lock cannot be pickled or copied; a copy gets a fresh one.
        return {"_entries": self.entries()}

    def __setstate__(self, state: dict[str, Iterable[LedgerEntry]]) -> None:
        self._entries = list(state["_entries"])
        self._sum = None
        self._lock = threading.Lock()


def _total(entries: Iterable[LedgerEntry], width: int) -> tuple[Fraction, ...]:
    total = [Fraction(0)] * width
    for entry in entries:
        if len(entry.cost) != width:
            raise ValueError(f"the ledger mixes currencies: a cost of {len(entry.cost)} numbers "
                             f"among costs of {width}")
        total = [t + c for t, c in zip(total, entry.cost)]
    return tuple(total)


def ledger_records(entries: tuple[LedgerEntry, ...] | list[LedgerEntry]) -> list[dict[str, object]]:
    """Ledger entries as JSON-ready dictionaries.

    Each record holds the label, the event, and each parameter twice: as a short number
    (:func:`show`, rounded up, so never below what was charged) and as the exact fraction string
    that the accountant composed.

    >>> from fastmwem.accounting import PureDP
    >>> below = Fraction(0.009999999999999998)   # the float below 0.01, charged exactly
    >>> ledger_records([LedgerEntry("count", PureDP(below), (below,))])[0]
    ... # doctest: +NORMALIZE_WHITESPACE
    {'label': 'count', 'event': 'PureDP(epsilon=0.01)', 'epsilon': 0.01,
     'epsilon_exact': '2882303761517117/288230376151711744'}
    """
    records = []
    for entry in entries:
        rec: dict[str, object] = {"label": entry.label, "event": repr(entry.event)}
        for key in ("epsilon", "delta", "rho"):
            if hasattr(entry.event, key):
                value = getattr(entry.event, key)
                rec[key] = _json_number(value)
                rec[key + "_exact"] = str(value)
        records.append(rec)
    return records


def _json_number(value: Fraction) -> float | int:
    """The :func:`show` decimal as a JSON number (a float whose repr is that decimal)."""
    text = show(value)
    if value.denominator == 1 or text.isdigit():
        return int(text)
    number = float(text)
    # Only a parameter beyond the double range (below ~1e-308) has no such float; keep it
    # positive rather than let it print as a claim of zero.
    return number if number > 0 else math.ulp(0.0)
