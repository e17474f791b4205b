"""A real local HTTP server in a thread, recording every request it gets (client tests)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

Reply = tuple[int, dict[str, str], bytes]


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Talk to 127.0.0.1 directly, whatever proxy the environment names."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def json_reply(status: int, payload: object) -> Callable[[str], Reply]:
    return lambda path: (status, {"Content-Type": "application/json"},
                         json.dumps(payload).encode())


def redirect(status: int, location: str) -> Callable[[str], Reply]:
    return lambda path: (status, {"Location": location}, b"")


@contextlib.contextmanager
def http_server(respond: Callable[[str], Reply]) -> Iterator[tuple[int, list[dict]]]:
    """Serve ``respond(path)`` on a free port of 127.0.0.1: yields (port, requests seen).

    Each request seen is ``{"method", "path", "authorization", "body"}``.
    """
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append({"method": self.command, "path": self.path, "body": body,
                         "authorization": self.headers.get("Authorization")})
            status, headers, out = respond(self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_POST = do_PUT = _answer

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # keep the test output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
