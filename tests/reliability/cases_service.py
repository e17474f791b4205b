"""Cases of the hardening pass: the query service, its state, and its client.

Servers started here listen on 127.0.0.1 only and stop with the case's process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from ._runner import CHARGES, Ctx, Finding, bad

# -- shared helpers --------------------------------------------------------------------------


@contextlib.contextmanager
def _legitimate() -> Iterator[None]:
    """Charges made inside the block are part of the case's set-up, not of the bad input."""
    n = len(CHARGES)
    try:
        yield
    finally:
        del CHARGES[n:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _no_proxies() -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        os.environ.pop(name, None)
        os.environ.pop(name.upper(), None)


@contextlib.contextmanager
def _http_server(respond: Callable[[str], tuple[int, dict[str, str], bytes]]
                 ) -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A loopback HTTP server answering ``respond(path)``; yields (url, requests seen)."""
    seen: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append({"path": self.path, "authorization": self.headers.get("Authorization")})
            status, headers, body = respond(self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _json_reply(payload: object) -> Callable[[str], tuple[int, dict[str, str], bytes]]:
    return lambda path: (200, {"Content-Type": "application/json"}, json.dumps(payload).encode())


# -- the query service -----------------------------------------------------------------------

SERVICE_CELLS = 6
ADMIN = "admin.QzAdminSecret-for-the-battery"


def _service_parts() -> tuple[object, object]:
    from fastmwem.data import Dataset, Domain

    domain = Domain(["a", "b"], [2, 3])
    return Dataset([[0, 1], [1, 2], [1, 0]] * 30, domain), domain


def _in_process_service(ctx: Ctx) -> object:
    from fastmwem.release.pmw import PMWConfig
    from fastmwem.service.core import QueryService
    from fastmwem.service.store import open_store

    data, _ = _service_parts()
    config = PMWConfig(epsilon=1.0, alpha=0.001, max_updates=10, total=90)
    return QueryService(open_store(ctx.path("s.db")), data, config, admin_token=ADMIN,
                        data_hash="h", rng=None)


def _spent(service: object) -> tuple[int, object]:
    store = service.store  # type: ignore[attr-defined]
    return len(store.ledger()), store.budget("global")[1]


def _refusal(response: object) -> str:
    """A 4xx response as a ValueError (what the battery counts as a refusal); a 2xx as accepted."""
    status = response.status_code  # type: ignore[attr-defined]
    text = response.text  # type: ignore[attr-defined]
    if 400 <= status < 500:
        raise ValueError(f"HTTP {status}: {json.loads(text).get('error', text)}")
    if status >= 500:
        raise RuntimeError(f"HTTP {status}: {text[:300]}")
    return f"HTTP {status}: {text[:200]}"


def _service() -> None:
    area = "api service"

    def tiny_query(weight: float) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            from starlette.testclient import TestClient

            from fastmwem.service.app import create_app

            with _legitimate():
                service = _in_process_service(ctx)
                token = service.add_analyst("uma", 0.5)["token"]
            headers = {"Authorization": f"Bearer {token}"}
            with TestClient(create_app(service)) as http:
                before = _spent(service)
                response = http.post("/v1/query", headers=headers, json={
                    "query": {"vector": [weight] + [0] * (SERVICE_CELLS - 1)},
                    "request_id": "tiny"})
                if _spent(service) != before:
                    CHARGES.append("service ledger: the tiny query was charged")
                with _legitimate():
                    after = http.post("/v1/query", headers=headers,
                                      json={"query": {"cell": {"a": 1}}})
                ctx.check(after.status_code == 200 and math.isfinite(after.json()["value"]),
                          f"the session no longer serves: {after.status_code} {after.text[:200]}",
                          "crash")
                ctx.check(np.all(np.isfinite(service.session.distribution)),
                          "the distribution is no longer finite", "crash")
            return _refusal(response)
        return run

    bad("service_query_weight_1e-310", area, tiny_query(1e-310), "largest absolute weight")
    bad("service_query_weight_5e-324", area, tiny_query(5e-324), "largest absolute weight")

    def pmw_tiny(weight: float) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            from fastmwem.accounting import Accountant
            from fastmwem.release.pmw import PMWSession

            data, _ = _service_parts()
            session = PMWSession(data, epsilon=1.0, alpha=0.001, max_updates=10, total=90,
                                 accountant=ctx.acc(1.0), rng=None)
            try:
                return session.answer({"vector": [weight] + [0] * (SERVICE_CELLS - 1)})
            finally:
                with _legitimate():
                    later = session.answer({"cell": {"a": 1}}, accountant=Accountant(epsilon=1))
                ctx.check(math.isfinite(later.value), "the session no longer answers", "crash")
        return run

    bad("pmw_session_query_weight_1e-310", area, pmw_tiny(1e-310), "largest absolute weight")
    bad("pmw_session_query_weight_5e-324", area, pmw_tiny(5e-324), "largest absolute weight")

    def request_id_reuse(ctx: Ctx) -> str:
        from starlette.testclient import TestClient

        from fastmwem.service.app import create_app

        with _legitimate():
            service = _in_process_service(ctx)
            token = service.add_analyst("vic", 0.5)["token"]
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(service)) as http:
            with _legitimate():
                first = http.post("/v1/query", headers=headers,
                                  json={"query": {"cell": {"a": 1}}, "request_id": "r1"})
            ctx.check(first.status_code == 200, f"the first query failed: {first.text[:200]}",
                      "crash")
            before = _spent(service)
            response = http.post("/v1/query", headers=headers,
                                 json={"query": {"cell": {"a": 0}}, "request_id": "r1"})
            if _spent(service) != before:
                CHARGES.append("service ledger: the conflicting request was charged")
            if response.status_code == 200 and response.json().get("replayed"):
                raise Finding("nonsense", "another query under a used request_id got the "
                                "first query's stored answer")
            if 400 <= response.status_code < 500 and response.status_code != 409:
                raise Finding("unclear", f"HTTP {response.status_code} instead of 409: "
                                f"{response.text[:200]}")
        return _refusal(response)

    bad("service_request_id_reused_for_another_query", area, request_id_reuse,
        "used before for another query")

    # -- start-up of `fastmwem serve` on a state that is not fit to serve
    area = "cli serve"

    def serve_files(ctx: Ctx) -> tuple[str, str, str]:
        data = ctx.write("data.csv", "a,b\n" + "0,1\n1,2\n1,0\n" * 30)
        domain = ctx.write("domain.json", json.dumps({"a": 2, "b": 3}))
        admin = ctx.write("admin.token", ADMIN + "\n")
        return data, domain, admin

    def serve(ctx: Ctx, state: str) -> object:
        data, domain, admin = ctx.path("data.csv"), ctx.path("domain.json"), ctx.path("admin.token")
        return ctx.cli("serve", data, "--domain", domain, "--epsilon", "1", "--state", state,
                       "--admin-token-file", admin, "--port", _free_port())

    def made_state(ctx: Ctx) -> tuple[str, object]:
        """A state as `fastmwem serve` with these files and defaults makes it, one query asked;
        returns its path and the (open) service."""
        from fastmwem.release.pmw import PMWConfig
        from fastmwem.service.core import QueryService
        from fastmwem.service.store import open_store

        data_path, _, _ = serve_files(ctx)
        data, _ = _service_parts()
        config = PMWConfig(epsilon=1.0, alpha=0.05, max_updates=50, total=None,
                           sv_fraction=0.5, reuse_passes=0)
        digest = hashlib.sha256(Path(data_path).read_bytes()).hexdigest()
        state = ctx.path("state.db")
        with _legitimate():
            service = QueryService(open_store(state), data, config, admin_token=ADMIN,
                                   data_hash=digest, rng=None)
            who = service.authenticate(f"Bearer {service.add_analyst('ann', 0.5)['token']}")
            service.answer(who, {"cell": {"a": 1}}, "q1")
        return state, service

    def stopped_state(ctx: Ctx) -> str:
        state, service = made_state(ctx)
        service.store.close()  # type: ignore[attr-defined]
        return state

    def tamper(state: str, *statements: str) -> None:
        conn = sqlite3.connect(state, isolation_level=None)
        conn.execute("DROP TRIGGER ledger_no_update")
        conn.execute("DROP TRIGGER ledger_no_delete")
        for statement in statements:
            conn.execute(statement)
        conn.close()

    def empty_state(ctx: Ctx) -> object:
        serve_files(ctx)
        return serve(ctx, ctx.write("state.db", b""))

    def edited_spent(ctx: Ctx) -> object:
        state = stopped_state(ctx)
        tamper(state, "UPDATE budgets SET spent = '0' WHERE scope = 'global'")
        return serve(ctx, state)

    def edited_analyst_spent(ctx: Ctx) -> object:
        state = stopped_state(ctx)
        tamper(state, "UPDATE budgets SET spent = '0' WHERE scope = 'analyst:1'")
        return serve(ctx, state)

    def corrupted_page(ctx: Ctx) -> object:
        state = stopped_state(ctx)
        with contextlib.closing(sqlite3.connect(state)) as conn:
            page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = "
                                "'sqlite_autoindex_answers_1'").fetchone()[0]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        with open(state, "r+b") as fh:
            fh.seek((page - 1) * page_size + 8)
            fh.write(b"\xff" * 64)
        return serve(ctx, state)

    def truncated_state(ctx: Ctx) -> object:
        state = stopped_state(ctx)
        size = os.path.getsize(state)
        with open(state, "r+b") as fh:
            fh.truncate(size // 2)
        return serve(ctx, state)

    def not_sqlite(ctx: Ctx) -> object:
        serve_files(ctx)
        return serve(ctx, ctx.write("state.db", "budget,spent\n1,0\n"))

    bad("serve_state_empty_file", area, empty_state, "empty", timeout=60)
    bad("serve_state_edited_global_spent", area, edited_spent, "spent total differs",
        timeout=60)
    bad("serve_state_edited_analyst_spent", area, edited_analyst_spent, "differs", timeout=60)
    bad("serve_state_corrupted_page", area, corrupted_page, ("integrity check", "damaged"),
        timeout=60)
    bad("serve_state_truncated_half", area, truncated_state,
        ("integrity check", "damaged", "malformed", "not a SQLite"), timeout=60)
    bad("serve_state_not_sqlite", area, not_sqlite, "not a SQLite database", timeout=60)

    def second_server(link: Callable[[str, str], None]) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            state, service = made_state(ctx)  # the first server keeps serving (its lease held)
            other = ctx.path("other-name.db")
            link(state, other)
            try:
                return serve(ctx, other)
            finally:
                with _legitimate():
                    who = service.authenticate(  # type: ignore[attr-defined]
                        f"Bearer {service.add_analyst('zoe', 0.5)['token']}")  # type: ignore[attr-defined]
                    answer = service.answer(who, {"cell": {"a": 0}}, "z1")  # type: ignore[attr-defined]
                ctx.check(math.isfinite(answer["value"]), "the first server stopped serving",
                          "crash")
        return run

    bad("serve_second_server_via_hard_link", area, second_server(os.link), "another server",
        timeout=60)
    bad("serve_second_server_via_symlink", area, second_server(os.symlink), "another server",
        timeout=60)


# -- the client ------------------------------------------------------------------------------


def _client() -> None:
    area = "cli ask"

    def token_file(content: bytes) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            _no_proxies()
            ctx.markers.extend(["QzSentinel42", "income"])
            path = ctx.write("token.txt", content)
            with _http_server(_json_reply({"remaining": 0.75})) as (url, seen):
                try:
                    return ctx.cli("ask", url, "--token-file", path, "--budget").out
                finally:
                    ctx.check(not seen, f"{len(seen)} request(s) sent with a bad token file")
        return run

    bad("ask_token_file_crlf", area, token_file(b"a1.abc\r\nQzSentinel42\r\n"),
        "--token-file")
    bad("ask_token_file_is_a_csv", area,
        token_file(b"age,income,zip\n37,QzSentinel42,02139\n41,52000,10001\n"), "--token-file")
    bad("ask_token_file_binary", area, token_file(b"\x89PNG\r\n\x1a\n\xff\xfeQzSentinel42"),
        "--token-file")

    def env_token(ctx: Ctx) -> object:
        _no_proxies()
        ctx.markers.append("QzSentinel42")
        os.environ["FASTMWEM_TOKEN"] = "a1.abc\r\nQzSentinel42"
        with _http_server(_json_reply({"remaining": 0.75})) as (url, seen):
            try:
                return ctx.cli("ask", url, "--budget").out
            finally:
                ctx.check(not seen, "a request was sent with a malformed token")

    bad("ask_env_token_crlf", area, env_token, "FASTMWEM_TOKEN")

    def redirect(code: int) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            _no_proxies()
            ctx.markers.append("QzTokenSecret")
            path = ctx.write("token.txt", "a1.QzTokenSecret\n")
            with _http_server(_json_reply({"remaining": 0.75})) as (other, seen_other):
                target = other + "/v1/budget"
                with _http_server(lambda p: (code, {"Location": target}, b"")) as (url, seen):
                    try:
                        return ctx.cli("ask", url, "--token-file", path, "--budget").out
                    finally:
                        ctx.check(not seen_other, "the token followed the redirect to another "
                                  f"origin ({len(seen_other)} request(s))")
                        ctx.check(len(seen) == 1, f"{len(seen)} requests to the service")
        return run

    bad("ask_redirect_302_other_origin", area, redirect(302), "another origin")
    bad("ask_redirect_307_other_origin", area, redirect(307), "another origin")

    def client_token(ctx: Ctx) -> object:
        from fastmwem.service.client import Client

        ctx.markers.append("QzSentinel42")
        return Client("http://127.0.0.1:9", "a1.abc\r\nQzSentinel42")

    bad("client_token_with_crlf", "api client", client_token, "token must be")


def register() -> None:
    """Add this module's cases to the battery."""
    _service()
    _client()
