"""fastmwem.client without a server: arguments, and a refused request's status and message."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request

import pytest

from fastmwem.client import Client, ServiceError


@pytest.mark.parametrize(("url", "token", "match"), [
    ("127.0.0.1:8000", "a1.x", "http://"), ("http://h", "", "token"), ("http://h", None, "token"),
])
def test_bad_arguments_are_refused(url, token, match):
    with pytest.raises(ValueError, match=match):
        Client(url, token)


def test_a_refusal_carries_the_status_and_the_servers_message(monkeypatch):
    def refuse(request, timeout):
        assert request.get_header("Authorization") == "Bearer a1.secret"
        assert json.loads(request.data) == {"query": {"cell": {"a": 1}}, "request_id": "r"}
        body = io.BytesIO(json.dumps({"error": "unknown attribute 'a'"}).encode())
        raise urllib.error.HTTPError(request.full_url, 400, "Bad Request", {}, body)

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(ServiceError) as err:
        Client("http://127.0.0.1:1/", "a1.secret").ask({"cell": {"a": 1}}, request_id="r")
    assert (err.value.status, err.value.message) == (400, "unknown attribute 'a'")
    assert str(err.value) == "HTTP 400: unknown attribute 'a'"
