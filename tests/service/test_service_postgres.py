"""The PostgreSQL path against a real server (started by the session fixture), and the charge
transactions of both stores under writers in separate processes (no shared lock)."""

from __future__ import annotations

import multiprocessing
from fractions import Fraction

import pytest

from fastmwem.accounting import Accountant, BudgetExceededError, PureDP
from fastmwem.client import ServiceError
from fastmwem.service.store import AnalystLedger, open_store

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
