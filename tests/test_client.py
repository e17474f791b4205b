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
