"""The Accountant's LedgerStore seam: one commit point, read-only budgets, records read back."""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import pytest

from fastmwem.accounting import (
    ZCDP,
    Accountant,
    ApproxDP,
    BoundedRange,
    BudgetExceededError,
    LedgerEntry,
    MemoryLedgerStore,
    PureDP,
    entry_from_record,
    entry_to_record,
)


class SpyStore(MemoryLedgerStore):
    """Counts commits; every write must come through ``commit``."""

    def __init__(self, entries=()):
        super().__init__(entries)
        self.commits = 0

    def commit(self, entries, admit):
        self.commits += 1
        super().commit(entries, admit)


def test_compose_and_compose_all_each_go_through_the_single_commit_point():
    store = SpyStore()
    acc = Accountant(epsilon=1, store=store)
    acc.compose(PureDP(0.25), label="one")
    acc.compose_all([(PureDP(0.25), "two"), (BoundedRange(0.25), "three")])
    assert store.commits == 2
    assert [e.label for e in store.entries()] == ["one", "two", "three"]
    with pytest.raises(BudgetExceededError):
        acc.compose_all([(PureDP(0.125), "a"), (PureDP(0.25), "b")])
    assert store.commits == 3 and len(store.entries()) == 3  # refused: admitted nothing
    assert acc.spent() == PureDP(0.75)


def test_the_budget_check_reads_what_the_store_holds_now():
    # Two accountants over one store (as two processes over one database) never overspend.
    store = MemoryLedgerStore()
    a, b = Accountant(epsilon=1, store=store), Accountant(epsilon=1, store=store)
    a.compose(PureDP(0.75))
    with pytest.raises(BudgetExceededError, match="spent PureDP\\(epsilon=0.75\\)"):
        b.compose(PureDP(0.5))
    assert b.spent() == PureDP(0.75)


@pytest.mark.parametrize("name", ["epsilon", "delta", "rho", "composition", "store", "_budget",
                                  "_store", "_given_epsilon"])
def test_budgets_are_read_only(name):
    acc = Accountant(epsilon=1)
    with pytest.raises(AttributeError, match="read-only"):
        setattr(acc, name, 100)
    assert acc.budget() == PureDP(1) and acc.epsilon == 1
    with pytest.raises(AttributeError, match="read-only"):
        del acc.epsilon


def test_copies_and_pickles_keep_the_ledger_and_stay_read_only():
    acc = Accountant(epsilon=1, delta=1e-6)
    acc.compose(ApproxDP(0.5, 1e-7), label="x")
    for clone in (copy.deepcopy(acc), pickle.loads(pickle.dumps(acc))):
        assert clone.spent() == acc.spent() and clone.ledger == acc.ledger
        clone.compose(ApproxDP(0.25, 0))
        assert acc.spent() == ApproxDP(0.5, 1e-7)
        with pytest.raises(AttributeError):
            clone.epsilon = 3


@pytest.mark.parametrize("event", [PureDP(Fraction(1, 3)), BoundedRange(0.1),
                                   ApproxDP(0.5, 1e-9), ZCDP(Fraction(2, 7))])
def test_ledger_records_round_trip_exactly(event):
    entry = LedgerEntry("label é", event, (Fraction(1, 3), Fraction(1, 10**12)))
    assert entry_from_record(entry_to_record(entry)) == entry


@pytest.mark.parametrize(("record", "match"), [
    ([], "JSON object"),
    ({"event": "Gauss", "params": {}, "cost": ["1"], "label": ""}, "unknown event"),
    ({"event": "PureDP", "params": {"rho": "1"}, "cost": ["1"], "label": ""}, "params"),
    ({"event": "PureDP", "params": {"epsilon": "1"}, "cost": [], "label": ""}, "cost"),
    ({"event": "PureDP", "params": {"epsilon": "-1"}, "cost": ["1"], "label": ""}, ">= 0"),
    ({"event": "PureDP", "params": {"epsilon": "1"}, "cost": ["1"], "label": 3}, "label"),
])
def test_malformed_ledger_records_are_refused(record, match):
    with pytest.raises(ValueError, match=match):
        entry_from_record(record)


def test_a_restored_ledger_counts_and_must_match_the_currency():
    acc = Accountant(epsilon=1)
    acc.compose(PureDP(0.5), label="before the restart")
    entries = [entry_from_record(r) for r in (entry_to_record(e) for e in acc.ledger)]
    again = Accountant(epsilon=1, store=MemoryLedgerStore(entries))
    assert again.remaining() == PureDP(0.5)
    with pytest.raises(ValueError, match="currency"):
        Accountant(epsilon=1, delta=1e-6, store=MemoryLedgerStore(entries))
    with pytest.raises(ValueError, match="more than this budget"):
        Accountant(epsilon=0.25, store=MemoryLedgerStore(entries))
    with pytest.raises(TypeError, match="LedgerStore"):
        Accountant(epsilon=1, store=object())
