"""fastmwem.service.client against real local servers: arguments, refusals, and where the token goes.

The token goes only to the origin (scheme, host, port) it was given for: a redirect to another
origin is refused, and the second server never hears from the client. A token that could not be
a header line is refused without being echoed.
"""

from __future__ import annotations

import json

import pytest

from fastmwem.service.client import Client, RedirectRefused, ServiceError, _origin
from tests._http import clear_proxies, http_server, json_reply, redirect

TOKEN = "a1.secret-TOKEN_value~x"


@pytest.fixture(autouse=True)
def _direct(monkeypatch):
    clear_proxies(monkeypatch)


@pytest.mark.parametrize(("url", "token", "match"), [
    ("127.0.0.1:8000", "a1.x", "http://"), ("http://h", "", "token"), ("http://h", None, "token"),
])
def test_bad_arguments_are_refused(url, token, match):
    with pytest.raises(ValueError, match=match):
        Client(url, token)


def test_a_refusal_carries_the_status_and_the_servers_message():
    with http_server(json_reply(400, {"error": "unknown attribute 'a'"})) as (port, seen):
        with pytest.raises(ServiceError) as err:
            Client(f"http://127.0.0.1:{port}/", TOKEN).ask({"cell": {"a": 1}}, request_id="r")
    assert (err.value.status, err.value.message) == (400, "unknown attribute 'a'")
    assert str(err.value) == "HTTP 400: unknown attribute 'a'"
    assert [(s["method"], s["path"], s["authorization"]) for s in seen] == [
        ("POST", "/v1/query", f"Bearer {TOKEN}")]
    assert json.loads(seen[0]["body"]) == {"query": {"cell": {"a": 1}}, "request_id": "r"}


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_redirect_to_another_port_is_refused_and_the_token_stays_home(code, method):
    with http_server(json_reply(200, {"remaining": 1.0})) as (other, seen_other):
        target = f"http://127.0.0.1:{other}/v1/budget"
        with http_server(redirect(code, target)) as (port, seen):
            client = Client(f"http://127.0.0.1:{port}", TOKEN, timeout=10)
            with pytest.raises(RedirectRefused, match="another origin") as err:
                if method == "GET":
                    client.budget()
                else:
                    client.ask({"cell": {"a": 1}}, request_id="r")
    assert [s["authorization"] for s in seen] == [f"Bearer {TOKEN}"]
    assert seen_other == []  # not a request, so never the Authorization header
    assert err.value.status == code and f"127.0.0.1:{other}" in str(err.value)
    assert TOKEN not in str(err.value) and "secret" not in str(err.value)


@pytest.mark.parametrize("location", [
    "http://localhost:{port}/v1/budget",  # the same machine, another host name
    "https://127.0.0.1:{port}/v1/budget",  # another scheme
    "http://user:pw@127.0.0.1:{other}/v1/budget",
    "http://127.0.0.1:99999/v1/budget",  # a malformed port
])
def test_a_redirect_to_any_other_origin_is_refused(location):
    with http_server(json_reply(200, {})) as (other, seen_other):
        with http_server(lambda path: redirect(302, location.format(port=port, other=other))(
                path)) as (port, seen):
            with pytest.raises(RedirectRefused, match="another origin") as err:
                Client(f"http://127.0.0.1:{port}", TOKEN, timeout=10).budget()
    assert seen_other == [] and len(seen) == 1
    assert "pw" not in str(err.value) and TOKEN not in str(err.value)


def test_a_redirect_within_the_origin_is_followed():
    def respond(path):
        if path == "/v1/budget":
            return redirect(307, "/v1/budget/moved")(path)  # relative: the same origin
        return json_reply(200, {"remaining": 0.5})(path)

    with http_server(respond) as (port, seen):
        assert Client(f"http://127.0.0.1:{port}", TOKEN).budget() == {"remaining": 0.5}
    assert [(s["path"], s["authorization"]) for s in seen] == [
        ("/v1/budget", f"Bearer {TOKEN}"), ("/v1/budget/moved", f"Bearer {TOKEN}")]


@pytest.mark.parametrize(("a", "b", "same"), [
    ("http://h/x", "http://h:80/y", True),
    ("HTTP://H:80/x", "http://h/", True),
    ("https://h/", "https://h:443/z", True),
    ("http://h/", "https://h/", False),
    ("http://h:8000/", "http://h:8001/", False),
    ("http://h/", "http://h.evil/", False),
])
def test_origin(a, b, same):
    assert (_origin(a) == _origin(b)) is same


@pytest.mark.parametrize("token", [
    "a1.secret\r\nX-Leak: SENTINEL_42",
    "a1.secret\nSENTINEL_42",
    "a1.se\x00cr\x01et SENTINEL_42",
    "age,income\n37,SENTINEL_42\n41,52000",
    "a1.sécret-SENTINEL_42",
])
def test_a_token_that_is_not_one_url_safe_line_is_refused_unechoed(token):
    with pytest.raises(ValueError, match="token must be one line of URL-safe characters") as err:
        Client("http://127.0.0.1:1", token)
    assert "SENTINEL" not in str(err.value) and "secret" not in str(err.value)


def test_a_token_with_surrounding_whitespace_is_sent_stripped():
    with http_server(json_reply(200, {"remaining": 1.0})) as (port, seen):
        Client(f"http://127.0.0.1:{port}", f"  {TOKEN}\r\n").budget()
    assert seen[0]["authorization"] == f"Bearer {TOKEN}"


def test_a_response_broken_off_midway_is_a_connection_error_to_retry():
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_half_a_response():
        conn, _ = listener.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:  # read it all: unread bytes would reset
                request += conn.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 431\r\n\r\n{\"answer\": ")  # then the server dies
            conn.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=serve_half_a_response, daemon=True)
    thread.start()
    client = Client(f"http://127.0.0.1:{port}", "a1.secret", timeout=10)
    with pytest.raises(ConnectionError, match="broke off its response.*same request_id"):
        client.ask({"cell": {"a": 1}}, request_id="r")
    thread.join(10)
    listener.close()
