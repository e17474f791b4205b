"""A SQLite state is leased on the database file and checked before it is served.

One server a state, whatever name reaches the file (hard or symbolic link); a file that is not a
fastmwem state is refused, never reinitialised; a damaged file, or a ledger or budget total
edited by hand (the ledger is hash-chained), refuses to start.
"""

from __future__ import annotations

import json
import os
import sqlite3
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.release.pmw import PMWConfig
from fastmwem.service.core import QueryService
from fastmwem.service.store import StateError, open_store

DOMAIN = Domain(["a", "b"], [2, 3])
DATA = Dataset([[0, 1], [1, 2], [1, 0]] * 30, DOMAIN)
ADMIN = "admin.secret-for-tests"
# A noisy count (the owner's entry), then nearly every query opens an epoch.
CONFIG = PMWConfig(epsilon=20.0, alpha=0.001, max_updates=10)


def _service(path, seed: int = 0) -> QueryService:
    return QueryService(open_store(str(path)), DATA, CONFIG, admin_token=ADMIN, data_hash="h",
                        rng=np.random.default_rng(seed))


def _global_spent(path) -> Fraction:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return Fraction(conn.execute("SELECT spent FROM budgets WHERE scope = 'global'")
                        .fetchone()[0])


@pytest.fixture
def state(tmp_path):
    """A stopped state with a noisy count and epochs charged to two analysts."""
    path = tmp_path / "s.db"
    service = _service(path)
    for name in ("ann", "ben"):
        who = service.authenticate(f"Bearer {service.add_analyst(name, 10)['token']}")
        for i in range(2):
            service.answer(who, {"cell": {"a": i, "b": i + 1}}, f"{name}{i}")
    # Each query opens an epoch and is measured: a run and a measurement charged to its asker.
    assert [a for _, a, _ in service.store.ledger()] == [None] + [1] * 4 + [2] * 4
    service.store.close()
    return path


def _tamper(path, *statements: str) -> None:
    """Edit the state by hand, as someone with the file could (the triggers dropped first)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER ledger_no_update")
    conn.execute("DROP TRIGGER ledger_no_delete")
    for statement in statements:
        conn.execute(statement)
    conn.close()


def test_a_clean_state_restarts(state):
    spent = _global_spent(state)
    service = _service(state)
    assert service.owner_budget()["spent"] == float(spent)
    assert service.owner_budget()["ledger"]["entries"] == len(service.store.ledger())


# -- the lease --------------------------------------------------------------------------------


@pytest.mark.parametrize("link", [os.link, os.symlink])
def test_a_second_service_through_a_link_to_a_served_state_is_refused(tmp_path, link):
    first = _service(tmp_path / "s.db")
    link(tmp_path / "s.db", tmp_path / "s2.db")
    with pytest.raises(RuntimeError, match="another server"):
        _service(tmp_path / "s2.db")
    who = first.authenticate(f"Bearer {first.add_analyst('ann', 10)['token']}")
    first.answer(who, {"cell": {"a": 1}}, "r1")  # the first still serves
    first.store.close()


def test_a_state_with_two_names_is_refused_once_stopped_and_a_symlink_serves_the_same_ledger(
        state, tmp_path):
    spent = _global_spent(state)
    os.symlink(state, tmp_path / "via-symlink.db")
    service = _service(tmp_path / "via-symlink.db")
    assert service.owner_budget()["spent"] == float(spent)
    service.store.close()
    os.link(state, tmp_path / "hard.db")
    for name in (state, tmp_path / "hard.db"):
        with pytest.raises(StateError, match="hard links"):
            _service(name)


def test_two_serve_processes_through_links_are_refused(server_factory, tmp_path):
    first = server_factory().start()
    os.link(first.state, tmp_path / "hard.db")
    os.symlink(first.state, tmp_path / "soft.db")
    for name in ("hard.db", "soft.db"):
        second = server_factory(state=str(tmp_path / name))
        with pytest.raises(RuntimeError, match="another server is serving"):
            second.start(timeout=30)
    assert first.analyst("zoe", 0.5).ask({"cell": {"a": 1}})["updates"] >= 0


# -- not a state, damaged ---------------------------------------------------------------------


def test_an_empty_file_is_refused_never_reinitialised(tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"")
    with pytest.raises(StateError, match=r"empty \(0 bytes\)"):
        _service(path)
    assert path.read_bytes() == b""


def test_a_new_state_beside_a_stale_journal_is_refused(state):
    # The write-ahead log of a state deleted without it would be replayed into a new file.
    conn = sqlite3.connect(state, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO meta (key, value) VALUES ('x', 'y')")
    journal = Path(str(state) + "-wal").read_bytes()
    conn.close()
    state.unlink()
    Path(str(state) + "-wal").write_bytes(journal)
    with pytest.raises(StateError, match="its write-ahead log"):
        _service(state)
    assert not state.exists()


def test_a_file_that_is_not_a_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "s.db"
    path.write_text("budget,spent\n1,0\n")
    with pytest.raises(StateError, match="not a SQLite database"):
        _service(path)


def test_a_sqlite_database_of_something_else_is_refused(tmp_path):
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    conn.close()
    with pytest.raises(StateError, match="not a fastmwem state"):
        _service(path)
    with sqlite3.connect(path) as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert names == {"people"}  # nothing was added


def test_a_state_of_the_previous_format_is_refused(state):
    _tamper(state, "UPDATE meta SET value = 'fastmwem-service-1' WHERE key = 'format'")
    with pytest.raises(StateError, match="another fastmwem version"):
        _service(state)


def test_a_corrupted_page_is_refused(state):
    with sqlite3.connect(state) as conn:
        # A page read by no start-up query: the old start-up served such a state.
        page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = "
                            "'sqlite_autoindex_answers_1'").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert not os.path.exists(str(state) + "-wal")  # all in the main file
    with open(state, "r+b") as fh:
        fh.seek((page - 1) * page_size + 8)
        fh.write(b"\xff" * 64)
    with pytest.raises(StateError, match="integrity check|damaged"):
        _service(state)


# -- an edited ledger or budget -----------------------------------------------------------------


def test_an_edited_global_spent_is_refused(state):
    _tamper(state, "UPDATE budgets SET spent = '0' WHERE scope = 'global'")
    with pytest.raises(StateError, match="global spent total differs"):
        _service(state)


def test_an_edited_analyst_spent_is_refused(state):
    _tamper(state, "UPDATE budgets SET spent = '0' WHERE scope = 'analyst:1'")
    with pytest.raises(StateError, match="analyst 1 differs"):
        _service(state)


def test_a_deleted_entry_is_refused(state):
    _tamper(state, "DELETE FROM ledger WHERE seq = 2")
    with pytest.raises(StateError, match="entry 2 is missing"):
        _service(state)


def test_a_deleted_last_entry_with_its_totals_fixed_is_refused(state):
    conn = sqlite3.connect(state)
    last, analyst, record = conn.execute("SELECT seq, analyst_id, record FROM ledger "
                                         "ORDER BY seq DESC LIMIT 1").fetchone()
    cost = Fraction(json.loads(record)["cost"][0])
    rows = dict(conn.execute("SELECT scope, spent FROM budgets").fetchall())
    conn.close()
    fixed = {scope: str(Fraction(rows[scope]) - cost) for scope in ("global", f"analyst:{analyst}")}
    _tamper(state, f"DELETE FROM ledger WHERE seq = {last}",
            *(f"UPDATE budgets SET spent = '{v}' WHERE scope = '{k}'" for k, v in fixed.items()))
    with pytest.raises(StateError, match="head row does not match"):
        _service(state)


def test_an_edited_entry_amount_is_refused_even_with_its_totals_fixed(state):
    conn = sqlite3.connect(state)
    analyst, record = conn.execute("SELECT analyst_id, record FROM ledger WHERE seq = 2").fetchone()
    conn.close()
    edited = json.loads(record)
    cost = Fraction(edited["cost"][0])
    edited["cost"], edited["params"]["epsilon"] = ["0"], "0"
    rows = dict(sqlite3.connect(state).execute("SELECT scope, spent FROM budgets").fetchall())
    fixed = {scope: str(Fraction(rows[scope]) - cost) for scope in ("global", f"analyst:{analyst}")}
    _tamper(state, f"UPDATE ledger SET record = '{json.dumps(edited)}', epsilon = 0 WHERE seq = 2",
            *(f"UPDATE budgets SET spent = '{v}' WHERE scope = '{k}'" for k, v in fixed.items()))
    with pytest.raises(StateError, match="entry 2 does not match its hash"):
        _service(state)


def test_reordered_entries_are_refused(state):
    _tamper(state, "UPDATE ledger SET seq = -1 WHERE seq = 2",
            "UPDATE ledger SET seq = 2 WHERE seq = 3", "UPDATE ledger SET seq = 3 WHERE seq = -1")
    with pytest.raises(StateError, match="entry 2 does not follow"):
        _service(state)


def test_the_ledger_refuses_updates_and_deletes(state):
    conn = sqlite3.connect(state)
    for statement in ("UPDATE ledger SET epsilon = 0", "DELETE FROM ledger"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(statement)
    conn.close()
    _service(state).store.close()  # unchanged: it still starts


def test_a_truncated_state_is_refused_and_leaves_no_journal_files(state):
    # The connection to a damaged file was kept until garbage collection, with its -wal and
    # -shm files beside the state.
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 2])
    with pytest.raises(StateError):
        _service(state)
    leftovers = [p.name for p in state.parent.iterdir() if p.name.startswith("s.db-")]
    assert leftovers == []
