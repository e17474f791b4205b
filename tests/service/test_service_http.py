"""The service over real HTTP on loopback (SQLite state): concurrency, refusals, idempotence."""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.request
import uuid
from fractions import Fraction

import httpx2
import numpy as np
import pytest

from fastmwem.service.client import Client, ServiceError

CELLS = 16  # the test domain {a: 2, b: 2, c: 4}


def _spent(state: str) -> dict[str, Fraction]:
    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as conn:
        return {scope: Fraction(spent) for scope, spent in
                conn.execute("SELECT scope, spent FROM budgets")}


def _ledger_sum(state: str) -> Fraction:
    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT record FROM ledger").fetchall()
    return sum((Fraction(json.loads(r)["cost"][0]) for (r,) in rows), Fraction(0))


@pytest.fixture(scope="module")
def server(module_server_factory):
    # alpha tiny: nearly every query opens and closes an epoch, so charges race constantly.
    # One server for the module; each test has its own analysts.
    return module_server_factory("--alpha", "0.001", "--max-updates", "400", "--total", "400",
                          "--rate", "100000", "--burst", "100000", "--max-body", "65536").start()


def test_eight_concurrent_clients_never_overspend(server):
    # Eight clients, four on each of two analysts, race for their analyst's budget (0.3 each;
    # one epoch costs 1/400): the charges are transactions on the budget rows.
    tokens = [server.analyst(name, 0.3)._token for name in ("ann", "ben")]
    scopes = [f"analyst:{t.split('.')[0][1:]}" for t in tokens]
    before = _spent(server.state)["global"]
    clients = [Client(server.url, tokens[i % 2], timeout=60) for i in range(8)]
    acknowledged: list[float] = []
    refusals: list[str] = []
    lock = threading.Lock()

    def work(client: Client, seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(400):
            query = {"cell": {"a": int(rng.integers(2)), "c": int(rng.integers(4))}}
            try:
                ans = client.ask(query)
            except ServiceError as exc:
                with lock:
                    refusals.append(f"{exc.status} {exc.message}")
                return
            with lock:
                acknowledged.append(ans["charged"])

    threads = [threading.Thread(target=work, args=(c, i)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    spent = _spent(server.state)
    epoch = Fraction(1, 400)
    for scope in scopes:
        assert Fraction(3, 10) - epoch < spent[scope] <= Fraction(3, 10)  # sold up to the limit
    assert spent["global"] - before == spent[scopes[0]] + spent[scopes[1]]
    assert _ledger_sum(server.state) == spent["global"]
    assert len(refusals) == 8
    assert all(r.startswith("409 ") and "analyst's budget" in r for r in refusals), refusals
    assert sum(acknowledged) == pytest.approx(float(spent["global"] - before), abs=1e-9)


def _bad_requests(server, analyst_token: str, admin_token: str):
    """(method, path, headers, body, expected status, words the message must hold)."""
    good = {"query": {"cell": {"a": 1}}}
    auth = {"Authorization": f"Bearer {analyst_token}"}
    analyst_id = analyst_token.split(".")[0]
    return [
        ("POST", "/v1/query", {}, good, 401, "missing token"),
        ("POST", "/v1/query", {"Authorization": "Basic abc"}, good, 401, "malformed token"),
        ("POST", "/v1/query", {"Authorization": "Bearer nodot"}, good, 401, "malformed token"),
        ("POST", "/v1/query", {"Authorization": f"Bearer {analyst_id}.wrong"}, good, 401,
         "invalid token"),
        ("POST", "/v1/query", {"Authorization": "Bearer a999.x"}, good, 401, "invalid token"),
        ("POST", "/v1/query", {"Authorization": f"Bearer {admin_token}"}, good, 403, "analyst"),
        ("GET", "/v1/admin/budget", auth, None, 403, "admin token"),
        ("GET", "/v1/admin/log", {}, None, 401, "missing token"),
        ("POST", "/v1/query", auth, "{not json", 400, "malformed request"),
        ("POST", "/v1/query", auth, {"q": {}}, 400, "query: Field required"),
        ("POST", "/v1/query", auth, {"query": [1, 2]}, 400, "malformed request"),
        ("POST", "/v1/query", auth, {"query": {"cell": {"zzz": 1}}}, 400,
         "unknown attribute 'zzz'"),
        ("POST", "/v1/query", auth, {"query": {"cell": {"a": 5}}}, 400, "0..1"),
        ("POST", "/v1/query", auth, {"query": {"vector": [1.0] * 17}}, 400, "16 weights"),
        ("POST", "/v1/query", auth, {"query": {"vector": [0] * CELLS}}, 400, "all zero"),
        ("POST", "/v1/query", auth, {"query": {"sql": "select 1"}}, 400, "exactly one of"),
        ("POST", "/v1/query", auth, {"query": {"cell": {"a": 1}}, "request_id": "x" * 101}, 400,
         "request_id"),
        ("POST", "/v1/query", auth, {"query": {"vector": [0.5] * 20000}}, 413, "too large"),
        ("PUT", "/v1/admin/analysts/nobody", {"Authorization": f"Bearer {admin_token}"},
         {"budget": 1}, 404, "no analyst named 'nobody'"),
        ("POST", "/v1/admin/analysts", {"Authorization": f"Bearer {admin_token}"},
         {"name": "x", "budget": -1}, 400, "budget must be >= 0"),
    ]


def test_bad_requests_get_a_clear_4xx_and_spend_nothing(server):
    analyst = server.analyst("carol", 0.5)
    admin_token = server.admin_file.read_text().strip()
    before = _spent(server.state)
    with httpx2.Client(base_url=server.url, timeout=30) as http:
        for method, path, headers, body, status, words in _bad_requests(
                server, analyst._token, admin_token):
            content = body if isinstance(body, str) else None
            payload = None if isinstance(body, str) else body
            r = http.request(method, path, headers=headers, json=payload, content=content)
            assert r.status_code == status, (path, body, r.text)
            assert words in r.json()["error"], (words, r.json())
        # A body streamed without Content-Length is cut off at the limit too.
        chunks = (b"x" * 8192 for _ in range(20))
        r = http.post("/v1/query", headers={"Authorization": f"Bearer {analyst._token}"},
                      content=chunks)
        assert r.status_code == 413 and "too large" in r.json()["error"]
        # A valid query followed by padding over the limit is refused whole, not answered.
        valid = json.dumps({"query": {"cell": {"a": 1}}}).encode()
        padded = iter([valid] + [b" " * 8192] * 10)
        r = http.post("/v1/query", headers={"Authorization": f"Bearer {analyst._token}",
                                            "Content-Type": "application/json"}, content=padded)
        assert r.status_code == 413 and "too large" in r.json()["error"]
    assert _spent(server.state) == before
    assert analyst.log() == []


def test_a_retry_with_the_same_request_id_returns_the_stored_answer(server):
    client = server.analyst("dave", 0.5)
    rid = uuid.uuid4().hex
    first = client.ask({"cell": {"b": 1}}, request_id=rid)
    again = client.ask({"cell": {"b": 1}}, request_id=rid)
    assert again["replayed"] and not first["replayed"]
    assert {k: again[k] for k in ("value", "source", "charged")} == \
        {k: first[k] for k in ("value", "source", "charged")}
    assert [a["request_id"] for a in client.log()] == [rid]


def test_each_analyst_sees_only_its_own_log_and_the_admin_sees_all(server):
    alice, bob = server.analyst("alice", 0.5), server.analyst("bob", 0.5)
    a = alice.ask({"cell": {"a": 0}})
    b = bob.ask({"range": {"c": [1, 2]}})
    assert [x["request_id"] for x in alice.log()] == [a["request_id"]]
    assert [x["request_id"] for x in bob.log()] == [b["request_id"]]
    owner = [x for x in server.admin().owner_log() if x["analyst"] in ("alice", "bob")]
    assert {(x["analyst"], x["request_id"]) for x in owner} == \
        {("alice", a["request_id"]), ("bob", b["request_id"])}
    assert alice.budget()["spent"] == pytest.approx(a["charged"])


def test_the_openapi_description_is_served(server):
    with urllib.request.urlopen(server.url + "/openapi.json", timeout=10) as r:
        spec = json.load(r)
    assert "/v1/query" in spec["paths"] and "/v1/admin/analysts" in spec["paths"]


def test_a_request_id_reused_for_another_query_is_a_409(server):
    client = server.analyst("erin", 0.5)
    rid = uuid.uuid4().hex
    first = client.ask({"cell": {"b": 0}}, request_id=rid)
    spent = _spent(server.state)
    with pytest.raises(ServiceError) as err:
        client.ask({"cell": {"b": 1}}, request_id=rid)
    assert err.value.status == 409 and "used before for another query" in err.value.message
    again = client.ask({"cell": {"b": 0}}, request_id=rid)  # the same query: idempotent
    assert again["replayed"] and again["value"] == first["value"]
    assert _spent(server.state) == spent and [a["request_id"] for a in client.log()] == [rid]


@pytest.mark.parametrize("tiny", [1e-310, 5e-324])
def test_a_query_scaled_below_the_floats_is_a_400_and_the_session_still_serves(server, tiny):
    client = server.analyst(f"fay{tiny:g}", 0.5)
    before = _spent(server.state)
    with pytest.raises(ServiceError) as err:
        client.ask({"vector": [tiny] + [0] * (CELLS - 1)})
    assert err.value.status == 400 and "largest absolute weight" in err.value.message
    assert _spent(server.state) == before and client.log() == []
    # A small scale that is representable is answered (synthetic or measured: the server's
    # noise is not seeded), and the session keeps serving everyone.
    assert np.isfinite(client.ask({"vector": [1e-300] + [0] * (CELLS - 1)})["value"])
    other = server.analyst(f"gil{tiny:g}", 0.5)  # every analyst is still served
    assert np.isfinite(other.ask({"cell": {"a": 1}})["value"])
