"""The PostgreSQL path against a real server (started by the session fixture), and the charge
transactions of both stores under writers in separate processes (no shared lock)."""

from __future__ import annotations

import multiprocessing
from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BudgetExceededError, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.release.pmw import PMWConfig
from fastmwem.service.client import ServiceError
from fastmwem.service.core import AnalystLedger, QueryService
from fastmwem.service.store import StateError, open_store

COST = Fraction(1, 50)


def _prepare(target: str) -> None:
    store = open_store(target)
    store.create_schema()
    store.initialise({"format": "test"}, Fraction(1))
    store.add_analyst("w", Fraction(1, 2), lambda i: "hash")
    store.close()


def _writer(target: str, attempts: int, results: multiprocessing.Queue) -> None:
    """One process charging through its own connection until refused."""
    acc = Accountant(epsilon=1, store=AnalystLedger(open_store(target), 1))
    accepted = 0
    for _ in range(attempts):
        try:
            acc.compose(PureDP(COST), label="race")
            accepted += 1
        except BudgetExceededError:
            pass
    results.put(accepted)


def _race(target: str, processes: int = 4, attempts: int = 20) -> int:
    _prepare(target)
    # fork: the writers start at once; each opens its own connection.
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    workers = [ctx.Process(target=_writer, args=(target, attempts, results))
               for _ in range(processes)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert all(w.exitcode == 0 for w in workers)
    accepted = sum(results.get(timeout=10) for _ in workers)
    store = open_store(target)
    spent = store.budget("analyst:1")[1]
    assert spent == store.budget("global")[1] == accepted * COST
    assert sum(e.cost[0] for e, _, _ in store.ledger()) == spent
    return accepted


def test_sqlite_charges_from_four_processes_never_overspend(tmp_path):
    # 80 attempts of 1/50 against an analyst budget of 1/2: exactly 25 are accepted.
    assert _race(str(tmp_path / "race.db")) == 25


def test_postgres_charges_from_four_processes_never_overspend(fresh_database):
    assert _race(fresh_database) == 25


def test_postgres_service_answers_resumes_and_refuses_a_second_server(server_factory,
                                                                        fresh_database):
    server = server_factory("--alpha", "0.01", "--max-updates", "100",
                            state=fresh_database).start()
    client = server.analyst("pat", 0.5)
    answers = [client.ask({"cell": {"a": i % 2, "c": i % 4}}) for i in range(12)]
    before = server.admin().owner_budget()
    assert before["spent"] == pytest.approx(0.01 + sum(a["charged"] for a in answers))

    second = server_factory("--alpha", "0.01", "--max-updates", "100", state=fresh_database)
    with pytest.raises(RuntimeError, match="another server"):
        second.start(timeout=30)

    server.kill9()
    server.start()
    after = server.admin().owner_budget()
    assert (after["updates"], after["spent"], len(after["history"])) == \
        (before["updates"], before["spent"], len(before["history"]))
    assert [a["request_id"] for a in client.log()] == [a["request_id"] for a in answers]
    rid = answers[-1]["request_id"]  # the twelfth query: a = 11 % 2, c = 11 % 4
    assert client.ask({"cell": {"a": 1, "c": 3}}, request_id=rid)["value"] == answers[-1]["value"]
    with pytest.raises(ServiceError) as err:
        client.ask({"cell": {"zz": 0}})
    assert err.value.status == 400 and server.admin().owner_budget()["spent"] == after["spent"]

    server.stop()  # budgets are read-only: the state refuses another epsilon
    other = server_factory("--alpha", "0.01", "--max-updates", "100", state=fresh_database,
                           epsilon=2.0)
    with pytest.raises(RuntimeError, match="budgets are read-only"):
        other.start(timeout=30)


# -- the lease and the ledger's checks on PostgreSQL ----------------------------------------------

DOMAIN = Domain(["a", "b"], [2, 3])
DATA = Dataset([[0, 1], [1, 2], [1, 0]] * 30, DOMAIN)
CONFIG = PMWConfig(epsilon=20.0, alpha=0.001, max_updates=10)
ADMIN = "admin.secret-for-tests"


def _service(url: str, seed: int = 0) -> QueryService:
    return QueryService(open_store(url), DATA, CONFIG, admin_token=ADMIN, data_hash="h",
                        rng=np.random.default_rng(seed))


def test_two_sessions_on_one_postgres_database_the_second_is_refused(fresh_database):
    first = _service(fresh_database)
    with pytest.raises(RuntimeError, match="another server"):
        _service(fresh_database)
    spent = first.store.budget("global")[1]
    first.store.close()
    second = _service(fresh_database)  # the lease went with the first store
    assert second.store.budget("global")[1] == spent
    second.store.close()


@pytest.fixture
def pg_state(fresh_database):
    service = _service(fresh_database)
    who = service.authenticate(f"Bearer {service.add_analyst('ann', 10)['token']}")
    for i in range(3):
        service.answer(who, {"cell": {"a": i % 2, "b": i}}, f"r{i}")
    # The count (the owner's), then each epoch's run and measurement (the analyst's).
    owners = [a for _, a, _ in service.store.ledger()]
    assert owners[0] is None and owners[1:] == [1] * (len(owners) - 1) and len(owners) >= 4
    service.store.close()
    return fresh_database


def _tamper(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE ledger DISABLE TRIGGER USER")
        for statement in statements:
            conn.execute(statement)


def test_postgres_ledger_is_append_only(pg_state):
    import psycopg

    with psycopg.connect(pg_state, autocommit=True) as conn:
        for statement in ("UPDATE ledger SET epsilon = 0", "DELETE FROM ledger",
                          "TRUNCATE ledger"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(statement)
    _service(pg_state).store.close()


@pytest.mark.parametrize(("statements", "match"), [
    (["UPDATE budgets SET spent = '0' WHERE scope = 'global'"], "global spent total differs"),
    (["UPDATE ledger SET epsilon = 0 WHERE seq = 2"], "entry 2 does not match its hash"),
    (["DELETE FROM ledger WHERE seq = 3"], "entry 3 is missing"),
    (["UPDATE ledger SET seq = -1 WHERE seq = 2", "UPDATE ledger SET seq = 2 WHERE seq = 3",
      "UPDATE ledger SET seq = 3 WHERE seq = -1"], "entry 2 does not follow"),
])
def test_postgres_state_with_an_edited_ledger_refuses_to_start(pg_state, statements, match):
    _tamper(pg_state, *statements)
    with pytest.raises(StateError, match=match):
        _service(pg_state)


def test_postgres_split_charges_and_label_queries_survive_a_crash_and_a_restart(
        fresh_database, monkeypatch):
    # A measurement charged whose answer was never stored is not charged again after a
    # restart, and measurements asked in labels are stored (and replayed) in codes.
    from fastmwem.data.schema import Categorical, Schema

    schema = Schema([Categorical("a", ["no", "yes"]), Categorical("b", ["x", "y", "z"])])
    tight = PMWConfig(epsilon=4.0, alpha=0.001, max_updates=10, total=90)  # measures them all

    def start() -> QueryService:
        return QueryService(open_store(fresh_database), DATA, tight, admin_token=ADMIN,
                            data_hash="h", rng=np.random.default_rng(0), schema=schema)

    service = start()
    who = service.authenticate(f"Bearer {service.add_analyst('ann', 4)['token']}")
    first = service.answer(who, {"cell": {"a": "yes", "b": "z"}}, "r1")
    assert first["source"] == "measured" and first["query_codes"] == {"cell": {"a": 1, "b": 2}}
    assert service.store.measurements()[0][0] == {"cell": {"a": 1, "b": 2}}

    def crash(*args, **kwargs):
        raise OSError("connection lost")

    monkeypatch.setattr(service.store, "save_answer", crash)
    with pytest.raises(OSError):
        service.answer(who, {"cell": {"b": "x"}}, "r2")
    labels = [e.label for e, _, _ in service.store.ledger()]
    assert labels[-2:] == ["PMW epoch 2 sparse vector", "PMW epoch 2 measurement"]
    spent = service.store.budget("global")[1]
    distribution = service.session.distribution
    monkeypatch.undo()
    service.store.close()

    again = start()
    np.testing.assert_array_equal(again.session.distribution, distribution)
    assert again.session.charges_due() == []
    ans = again.answer(who, {"cell": {"b": "x"}}, "r2")
    assert ans["source"] == "measured" and ans["charged"] == 0.0
    assert again.store.budget("global")[1] == spent
    again.store.close()


def test_postgres_close_gives_the_lease_back_at_once(fresh_database):
    # A clean stop unlocks before it disconnects: the next server need not wait for the old
    # backend to exit.
    import psycopg

    from fastmwem.service.store import LEASE_KEY

    class SlowToExit:
        """The lease's connection, whose close leaves the session alive (as a backend that has
        not exited yet): only an explicit unlock frees the lock."""

        def __init__(self, conn: psycopg.Connection) -> None:
            self.conn = conn

        def execute(self, *args: object) -> object:
            return self.conn.execute(*args)

        def close(self) -> None:
            pass

    store = open_store(fresh_database)
    store.lease()
    lease_conn = store._held
    store._held = SlowToExit(lease_conn)
    try:
        with psycopg.connect(fresh_database, autocommit=True) as other:
            taken = "SELECT pg_try_advisory_lock(%s)"
            assert other.execute(taken, (LEASE_KEY,)).fetchone() == (False,)
            store.close()
            assert other.execute(taken, (LEASE_KEY,)).fetchone() == (True,)
    finally:
        lease_conn.close()


def test_postgres_lease_waits_briefly_for_a_holder_that_is_going(fresh_database, monkeypatch):
    # A lock whose holder lets go within LEASE_WAIT is taken; one still held after it refuses.
    import threading

    import psycopg

    from fastmwem.service import store as stores

    holder = psycopg.connect(fresh_database, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (stores.LEASE_KEY,))
    monkeypatch.setattr(stores, "LEASE_WAIT", 0.3)
    refused = open_store(fresh_database)
    with pytest.raises(RuntimeError, match="another server"):
        refused.lease()
    refused.close()

    monkeypatch.setattr(stores, "LEASE_WAIT", 30.0)
    later = threading.Timer(0.5, holder.close)
    later.start()
    store = open_store(fresh_database)
    store.lease()  # succeeds once the holder is gone, long before the 30 s
    later.join()
    store.close()
