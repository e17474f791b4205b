"""Pieces of the service in process: tokens, the rate limit, the store's refusals, start-up."""

from __future__ import annotations

import numpy as np
import pytest
from starlette.testclient import TestClient

from fastmwem.data import Dataset, Domain
from fastmwem.release.pmw import PMWConfig
from fastmwem.service import tokens
from fastmwem.service.app import create_app
from fastmwem.service.core import (
    QueryService,
    RateLimiter,
    RateLimitError,
    RequestConflictError,
)
from fastmwem.service.store import open_store

DOMAIN = Domain(["a", "b"], [2, 3])
DATA = Dataset([[0, 1], [1, 2], [1, 0]] * 30, DOMAIN)
ADMIN = "admin.secret-for-tests"


def _service(tmp_path, **config) -> QueryService:
    options = {"epsilon": 1.0, "alpha": 0.05, "max_updates": 10, "total": 90, **config}
    return QueryService(open_store(str(tmp_path / "s.db")), DATA, PMWConfig(**options),
                        admin_token=ADMIN, data_hash="h", rng=None)


def test_tokens_are_random_stored_hashed_and_checked():
    token, digest = tokens.new_token("a7")
    principal, secret = tokens.split_token(token)
    assert principal == "a7" and len(secret) >= 40 and secret not in digest
    assert tokens.matches(secret, digest) and not tokens.matches(secret + "x", digest)
    assert not tokens.matches(secret, None)
    assert tokens.new_token("a7")[0] != token
    assert tokens.split_token("no-dot") is None and tokens.split_token(".x") is None


def test_the_state_keeps_only_hashes(tmp_path):
    service = _service(tmp_path)
    token = service.add_analyst("zoe", 0.5)["token"]
    raw = (tmp_path / "s.db").read_bytes()
    assert token.split(".")[1].encode() not in raw and b"secret-for-tests" not in raw


def test_rate_limiter_refuses_past_the_burst_then_recovers():
    limiter = RateLimiter(rate=1000.0, burst=3)
    for _ in range(3):
        limiter.check("a1")
    with pytest.raises(RateLimitError, match="at most 1000 requests a second"):
        limiter.check("a1")
    limiter.check("a2")  # buckets are per principal


def test_rate_limit_over_the_app_is_429_and_spends_nothing(tmp_path):
    service = _service(tmp_path)
    token = service.add_analyst("ray", 0.5)["token"]
    app = create_app(service, rate=0.001, burst=2)
    with TestClient(app) as http:
        headers = {"Authorization": f"Bearer {token}"}
        assert http.get("/v1/budget", headers=headers).status_code == 200
        assert http.get("/v1/budget", headers=headers).status_code == 200
        r = http.post("/v1/query", headers=headers, json={"query": {"cell": {"a": 1}}})
        assert r.status_code == 429 and "rate limit" in r.json()["error"]
        assert r.headers["retry-after"] == "1"
    assert service.store.budget("analyst:1")[1] == 0


def test_analyst_budgets_cannot_go_below_what_is_spent(tmp_path):
    service = _service(tmp_path)
    analyst = service.authenticate(f"Bearer {service.add_analyst('sam', 0.5)['token']}")
    answer = service.answer(analyst, {"cell": {"a": 1}}, "r1")
    spent = service.store.budget("analyst:1")[1]
    # The run it opened (half an epoch of 1 / 10), and the measurement if it was measured.
    assert float(spent) == pytest.approx(0.1 if answer["source"] == "measured" else 0.05)
    with pytest.raises(ValueError, match="cannot be set below"):
        service.set_budget("sam", 0.04)
    assert service.set_budget("sam", 0.2)["budget"] == 0.2
    with pytest.raises(ValueError, match="exists already"):
        service.add_analyst("sam", 1)


def test_a_restart_with_other_settings_or_admin_token_is_refused(tmp_path):
    _service(tmp_path).store.close()
    for kwargs, match in [({"alpha": 0.1}, "read-only"), ({"max_updates": 11}, "read-only")]:
        with pytest.raises(ValueError, match=match):
            _service(tmp_path, **kwargs)
    with pytest.raises(ValueError, match="admin token"):
        QueryService(open_store(str(tmp_path / "s.db")), DATA,
                     PMWConfig(epsilon=1.0, alpha=0.05, max_updates=10, total=90),
                     admin_token="admin.other", data_hash="h")


def test_a_second_service_on_the_same_sqlite_state_is_refused(tmp_path):
    first = _service(tmp_path)
    with pytest.raises(RuntimeError, match="another server"):
        _service(tmp_path)
    assert first.session.updates == 0


def test_open_store_refuses_a_missing_directory(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        open_store(str(tmp_path / "nowhere" / "s.db"))


@pytest.mark.parametrize("tiny", [1e-310, 5e-324])
def test_a_query_scaled_below_the_floats_is_a_400_before_any_charge(tmp_path, tiny):
    # 1e-310 used to charge an epoch and turn the distribution into NaN (every later query
    # failed, a restart replayed it); 5e-324 was an HTTP 500.
    service = _service(tmp_path, alpha=0.001)
    token = service.add_analyst("uma", 0.5)["token"]
    headers = {"Authorization": f"Bearer {token}"}
    tiny_query = {"query": {"vector": [tiny, 0, 0, 0, 0, 0]}, "request_id": "tiny"}
    with TestClient(create_app(service)) as http:
        r = http.post("/v1/query", headers=headers, json=tiny_query)
        assert r.status_code == 400 and "largest absolute weight" in r.json()["error"]
        assert service.store.budget("analyst:1")[1] == service.store.budget("global")[1] == 0
        assert service.store.ledger() == [] and service.log(None) == []
        r = http.post("/v1/query", headers=headers, json={"query": {"cell": {"a": 1}}})
        assert r.status_code == 200 and r.json()["charged"] > 0
        spent = service.store.budget("global")[1]
    service.store.close()

    service = _service(tmp_path, alpha=0.001)  # restart: nothing to replay but good answers
    with TestClient(create_app(service)) as http:
        r = http.post("/v1/query", headers=headers, json=tiny_query)
        assert r.status_code == 400
        assert service.store.budget("global")[1] == spent
        r = http.post("/v1/query", headers=headers, json={"query": {"range": {"b": [0, 1]}}})
        assert r.status_code == 200
    assert np.all(np.isfinite(service.session.distribution))


def test_a_request_id_reused_for_another_query_is_refused(tmp_path):
    service = _service(tmp_path)
    analyst = service.authenticate(f"Bearer {service.add_analyst('vic', 0.5)['token']}")
    first = service.answer(analyst, {"cell": {"a": 1}}, "r1")
    spent = service.store.budget("global")[1]
    with pytest.raises(RequestConflictError, match="used before for another query"):
        service.answer(analyst, {"cell": {"a": 0}}, "r1")
    again = service.answer(analyst, {"cell": {"a": 1}}, "r1")
    assert again["replayed"] and again["value"] == first["value"]
    assert service.store.budget("global")[1] == spent and len(service.log(None)) == 1

