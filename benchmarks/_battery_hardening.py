"""Cases of the reliability battery for the hardening pass (imported by reliability_battery.py).

Exact noise, the private LP solvers, where randomness comes from, the query service and its
state, the service client, saved index files and query engines. Each case is declared as in the
battery (``bad``/``good`` with the battery's ``Ctx``); :func:`register` adds them to its list.
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
import struct
import subprocess
import sys
import threading
import warnings
import zipfile
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import numpy as np

# Private values that a refusal must never show.
DISTINCT = "0.376543"
ROWS = 12345


def register(b: ModuleType) -> None:
    """Add the hardening cases to the battery module ``b``'s CASES."""
    _exact_noise(b)
    _lp(b)
    _randomness(b)
    _service(b)
    _client(b)
    _files_and_engines(b)


# -- shared helpers --------------------------------------------------------------------------


@contextlib.contextmanager
def _legitimate(b: ModuleType) -> Iterator[None]:
    """Charges made inside the block are part of the case's set-up, not of the bad input."""
    n = len(b.CHARGES)
    try:
        yield
    finally:
        del b.CHARGES[n:]


def _keys_in(obj: object) -> set[str]:
    if isinstance(obj, dict):
        return {str(k) for k in obj} | set().union(*(_keys_in(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys_in(v) for v in obj))
    return set()


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


# -- 1. exact noise --------------------------------------------------------------------------


def _exact_noise(b: ModuleType) -> None:
    from fastmwem.mechanisms import Laplace

    def demo_report(*extra: object) -> Callable[[object], str]:
        def run(ctx) -> str:  # noqa: ANN001
            ctx.cli("synth", "--demo", "--epsilon", "1", "--rounds", "3", "--out",
                    ctx.path("o.csv"), "--report", ctx.path("r.json"), "--no-progress", *extra)
            report = json.loads(Path(ctx.path("r.json")).read_text(encoding="utf-8"))
            values = [v for r in report["rounds"] for v in r["measurement"]]
            floats = [v for v in values if not isinstance(v, int)]
            ctx.check(values and not floats,
                      f"{len(floats)} of {len(values)} measurements are not integers "
                      f"(e.g. {floats[:2]})")
            ctx.check(isinstance(report["record_count"], int),
                      f"record_count {report['record_count']!r} is not an integer")
            ctx.check(report["private"] is True, f"report says private={report['private']}")
            return f"{len(values)} integer measurements, record_count an integer"
        return run

    b.good("synth_demo_report_integer_measurements", "valid cli", demo_report(), timeout=90)
    b.good("synth_demo_zcdp_report_integer_measurements", "valid cli",
           demo_report("--privacy", "zcdp", "--delta", "1e-6"), timeout=90)
    b.bad("laplace_epsilon_1e-100_release", "api mechanisms",
          lambda c: Laplace(epsilon=1e-100).release(0.0, rng=np.random.default_rng(0),
                                                    accountant=c.acc()), "2**56")
    b.bad("laplace_epsilon_1e-100_integer_release", "api mechanisms",
          lambda c: Laplace(epsilon=1e-100, integer=True).release(
              3, rng=np.random.default_rng(0), accountant=c.acc()), "2**56")

    def float_max(ctx) -> str:  # noqa: ANN001
        # A representable scale (sensitivity 1e300): values at the top of the float range must
        # come back finite (the saturation bound of the grid release).
        out = Laplace(epsilon=1.0, sensitivity=1e300).release(
            np.full(4000, np.finfo(np.float64).max), rng=np.random.default_rng(0))
        bad = int(np.sum(~np.isfinite(out)))
        ctx.check(bad == 0, f"{bad} of 4000 outputs are infinite")
        return "finite"

    b.good("laplace_float_max_values_stay_finite", "valid api", float_max)


# -- 2. the LP solvers -----------------------------------------------------------------------


def _simplex(m: int = 60, d: int = 7, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((m, d))
    b = A @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05
    return rng.random(d), A, b


def _packing(m: int, d: int = 4, seed: int = 3
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((m, d))
    b = A @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05
    return -rng.uniform(0.5, 1.5, d), A, b


def _lp(b: ModuleType) -> None:
    from fastmwem.lp import private_linprog, scalar_feasibility

    area = "api lp"
    scalar = dict(epsilon=1.0, delta=1e-6, sensitivity=0.01, width=2.0, rounds=20)

    def feasibility(A: object, rhs: object, markers: tuple[str, ...] = (),
                    **kw: object) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            ctx.markers.extend(markers)
            args = {**scalar, **kw}
            return scalar_feasibility(A, rhs, accountant=ctx.acc(100.0, delta=1e-3),
                                      rng=np.random.default_rng(1), **args)
        return run

    def constraint(A: np.ndarray, rhs: np.ndarray, c: np.ndarray,
                   markers: tuple[str, ...] = (), **kw: object) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            ctx.markers.extend(markers)
            args = dict(privacy="constraint", epsilon=1.0, delta=1e-6, density=4,
                        entry_bound=1.0, max_constraints=2 * A.shape[0], width=50.0,
                        objective_range=(-2.0, 0.0), rounds=20)
            args.update(kw)
            return private_linprog(c, A, rhs, accountant=ctx.acc(100.0, delta=1e-3),
                                   rng=np.random.default_rng(1), **args)
        return run

    rows_markers = (str(ROWS), f"{ROWS:,}", str(ROWS - 2))
    wide = np.full((ROWS, 3), 0.5)
    nan_a = wide.copy()
    nan_a[ROWS - 2, 2] = np.nan
    b.bad("lp_nan_entry_in_A", area, feasibility(nan_a, np.ones(ROWS), rows_markers),
          "must be finite")
    inf_b = np.ones(ROWS)
    inf_b[ROWS - 2] = -np.inf
    b.bad("lp_infinite_entry_in_b", area, feasibility(wide, inf_b, rows_markers),
          "must be finite")
    b.bad("lp_b_one_entry_short", area, feasibility(wide, np.ones(ROWS - 1), rows_markers),
          "b_ub")
    narrow = np.array([0.1, -float(DISTINCT), 0.2, 0.0, 0.3])  # observable width 0.376543
    b.bad("lp_width_below_the_data", area,
          feasibility(np.zeros((5, 3)), narrow, (DISTINCT, "0.3765", "0.377"), width=0.25),
          "width")
    pc, pa, pb = _packing(ROWS)
    b.bad("lp_too_many_rows_for_max_constraints", area,
          constraint(pa, pb, pc, rows_markers, max_constraints=ROWS - 45), "max_constraints",
          timeout=60)
    high = pa.copy()
    high[17, 2] = 1.876543
    b.bad("lp_entry_above_entry_bound", area,
          constraint(high, pb, pc, ("1.876543", "1.87654", "1.88")), "entry_bound", timeout=60)
    negative = pb.copy()
    negative[17] = -float(DISTINCT)
    b.bad("lp_negative_b_in_packing", area,
          constraint(pa, negative, pc, (DISTINCT, "0.37654", "0.377")), "b_ub", timeout=60)

    c, A, rhs = _simplex()
    b.bad("lp_epsilon_1e300", area,
          lambda ctx: private_linprog(c, A, rhs, epsilon=1e300, delta=1e-6, sensitivity=0.01,
                                      width=2.5, rounds=20, probes=2,
                                      accountant=ctx.acc(1e300, delta=1e-6),
                                      rng=np.random.default_rng(6)), ("epsilon", "at most"))
    b.bad("lp_feasibility_epsilon_1e300", area, feasibility(A, rhs, epsilon=1e300),
          ("epsilon", "at most"))

    def large_epsilon(ctx) -> str:  # noqa: ANN001
        res = private_linprog(c, A, rhs, epsilon=1e4, delta=1e-6, sensitivity=0.01, width=2.5,
                              rounds=40, probes=2, accountant=ctx.acc(1e4, delta=1e-6),
                              rng=np.random.default_rng(6))
        ctx.check(np.isfinite(res.x).all() and abs(res.x.sum() - 1.0) < 1e-9,
                  f"x is not a finite distribution: {res.x}")
        return f"status {res.status}, {res.nit} iterations"

    b.good("lp_epsilon_1e4_runs", "valid api", large_epsilon)

    def no_timing(ctx) -> str:  # noqa: ANN001
        res = private_linprog(c, A, rhs, epsilon=1.0, delta=1e-6, sensitivity=0.01, width=2.5,
                              rounds=20, probes=2, rng=np.random.default_rng(4))
        for record in (res.report(), res.report(evaluate=True)):
            json.dumps(record)
            timing = {k for k in _keys_in(record) if "time" in k.lower() or "second" in k.lower()}
            ctx.check(not timing, f"the report holds timing: {sorted(timing)}")
        return "no timing in the report"

    b.good("lp_result_report_has_no_timing", "valid api", no_timing)


# -- 3. randomness ---------------------------------------------------------------------------


def _randomness(b: ModuleType) -> None:
    from fastmwem.mechanisms.seeding import CallerRNGWarning
    from fastmwem.random import secure_rng
    from fastmwem.release import mwem
    from fastmwem.workloads import Marginals

    data, dom = b.small_data()

    def caller_generator(ctx) -> str:  # noqa: ANN001
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3,
                          rng=np.random.default_rng(0), accountant=ctx.acc())
        report = result.report()
        ctx.check(report["private"] is False, f"a caller's Generator gives private="
                  f"{report['private']}")
        ctx.check(report.get("not_private_because") == ["caller_rng"],
                  f"not_private_because {report.get('not_private_because')}")
        ctx.check(any(issubclass(w.category, CallerRNGWarning) for w in caught),
                  "no CallerRNGWarning")
        return "private false (caller_rng), warned"

    def secure(ctx) -> str:  # noqa: ANN001
        result = mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3, rng=secure_rng(),
                      accountant=ctx.acc())
        report = result.report()
        ctx.check(report["private"] is True, f"secure_rng() gives private={report['private']} "
                  f"({report.get('not_private_because')})")
        return "private"

    b.good("mwem_caller_generator_not_private", "valid api", caller_generator)
    b.good("mwem_secure_rng_private", "valid api", secure)


# -- 4. the query service --------------------------------------------------------------------

SERVICE_CELLS = 6
ADMIN = "admin.QzAdminSecret-for-the-battery"


def _service_parts() -> tuple[object, object]:
    from fastmwem.data import Dataset, Domain

    domain = Domain(["a", "b"], [2, 3])
    return Dataset([[0, 1], [1, 2], [1, 0]] * 30, domain), domain


def _in_process_service(ctx) -> object:  # noqa: ANN001
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


def _service(b: ModuleType) -> None:
    area = "api service"

    def tiny_query(weight: float) -> Callable[[object], str]:
        def run(ctx) -> str:  # noqa: ANN001
            from starlette.testclient import TestClient

            from fastmwem.service.app import create_app

            with _legitimate(b):
                service = _in_process_service(ctx)
                token = service.add_analyst("uma", 0.5)["token"]
            headers = {"Authorization": f"Bearer {token}"}
            with TestClient(create_app(service)) as http:
                before = _spent(service)
                response = http.post("/v1/query", headers=headers, json={
                    "query": {"vector": [weight] + [0] * (SERVICE_CELLS - 1)},
                    "request_id": "tiny"})
                if _spent(service) != before:
                    b.CHARGES.append("service ledger: the tiny query was charged")
                with _legitimate(b):
                    after = http.post("/v1/query", headers=headers,
                                      json={"query": {"cell": {"a": 1}}})
                ctx.check(after.status_code == 200 and math.isfinite(after.json()["value"]),
                          f"the session no longer serves: {after.status_code} {after.text[:200]}",
                          "crash")
                ctx.check(np.all(np.isfinite(service.session.distribution)),
                          "the distribution is no longer finite", "crash")
            return _refusal(response)
        return run

    b.bad("service_query_weight_1e-310", area, tiny_query(1e-310), "largest absolute weight")
    b.bad("service_query_weight_5e-324", area, tiny_query(5e-324), "largest absolute weight")

    def pmw_tiny(weight: float) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            from fastmwem.accounting import Accountant
            from fastmwem.release.pmw import PMWSession

            data, _ = _service_parts()
            session = PMWSession(data, epsilon=1.0, alpha=0.001, max_updates=10, total=90,
                                 accountant=ctx.acc(1.0), rng=None)
            try:
                return session.answer({"vector": [weight] + [0] * (SERVICE_CELLS - 1)})
            finally:
                with _legitimate(b):
                    later = session.answer({"cell": {"a": 1}}, accountant=Accountant(epsilon=1))
                ctx.check(math.isfinite(later.value), "the session no longer answers", "crash")
        return run

    b.bad("pmw_session_query_weight_1e-310", area, pmw_tiny(1e-310), "largest absolute weight")
    b.bad("pmw_session_query_weight_5e-324", area, pmw_tiny(5e-324), "largest absolute weight")

    def request_id_reuse(ctx) -> str:  # noqa: ANN001
        from starlette.testclient import TestClient

        from fastmwem.service.app import create_app

        with _legitimate(b):
            service = _in_process_service(ctx)
            token = service.add_analyst("vic", 0.5)["token"]
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(service)) as http:
            with _legitimate(b):
                first = http.post("/v1/query", headers=headers,
                                  json={"query": {"cell": {"a": 1}}, "request_id": "r1"})
            ctx.check(first.status_code == 200, f"the first query failed: {first.text[:200]}",
                      "crash")
            before = _spent(service)
            response = http.post("/v1/query", headers=headers,
                                 json={"query": {"cell": {"a": 0}}, "request_id": "r1"})
            if _spent(service) != before:
                b.CHARGES.append("service ledger: the conflicting request was charged")
            if response.status_code == 200 and response.json().get("replayed"):
                raise b.Finding("nonsense", "another query under a used request_id got the "
                                "first query's stored answer")
            if 400 <= response.status_code < 500 and response.status_code != 409:
                raise b.Finding("unclear", f"HTTP {response.status_code} instead of 409: "
                                f"{response.text[:200]}")
        return _refusal(response)

    b.bad("service_request_id_reused_for_another_query", area, request_id_reuse,
          "used before for another query")

    # -- start-up of `fastmwem serve` on a state that is not fit to serve
    area = "cli serve"

    def serve_files(ctx) -> tuple[str, str, str]:  # noqa: ANN001
        data = ctx.write("data.csv", "a,b\n" + "0,1\n1,2\n1,0\n" * 30)
        domain = ctx.write("domain.json", json.dumps({"a": 2, "b": 3}))
        admin = ctx.write("admin.token", ADMIN + "\n")
        return data, domain, admin

    def serve(ctx, state: str) -> object:  # noqa: ANN001
        data, domain, admin = ctx.path("data.csv"), ctx.path("domain.json"), ctx.path("admin.token")
        return ctx.cli("serve", data, "--domain", domain, "--epsilon", "1", "--state", state,
                       "--admin-token-file", admin, "--port", _free_port())

    def made_state(ctx) -> tuple[str, object]:  # noqa: ANN001
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
        with _legitimate(b):
            service = QueryService(open_store(state), data, config, admin_token=ADMIN,
                                   data_hash=digest, rng=None)
            who = service.authenticate(f"Bearer {service.add_analyst('ann', 0.5)['token']}")
            service.answer(who, {"cell": {"a": 1}}, "q1")
        return state, service

    def stopped_state(ctx) -> str:  # noqa: ANN001
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

    def empty_state(ctx) -> object:  # noqa: ANN001
        serve_files(ctx)
        return serve(ctx, ctx.write("state.db", b""))

    def edited_spent(ctx) -> object:  # noqa: ANN001
        state = stopped_state(ctx)
        tamper(state, "UPDATE budgets SET spent = '0' WHERE scope = 'global'")
        return serve(ctx, state)

    def edited_analyst_spent(ctx) -> object:  # noqa: ANN001
        state = stopped_state(ctx)
        tamper(state, "UPDATE budgets SET spent = '0' WHERE scope = 'analyst:1'")
        return serve(ctx, state)

    def corrupted_page(ctx) -> object:  # noqa: ANN001
        state = stopped_state(ctx)
        with contextlib.closing(sqlite3.connect(state)) as conn:
            page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = "
                                "'sqlite_autoindex_answers_1'").fetchone()[0]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        with open(state, "r+b") as fh:
            fh.seek((page - 1) * page_size + 8)
            fh.write(b"\xff" * 64)
        return serve(ctx, state)

    def truncated_state(ctx) -> object:  # noqa: ANN001
        state = stopped_state(ctx)
        size = os.path.getsize(state)
        with open(state, "r+b") as fh:
            fh.truncate(size // 2)
        return serve(ctx, state)

    def not_sqlite(ctx) -> object:  # noqa: ANN001
        serve_files(ctx)
        return serve(ctx, ctx.write("state.db", "budget,spent\n1,0\n"))

    b.bad("serve_state_empty_file", area, empty_state, "empty", timeout=60)
    b.bad("serve_state_edited_global_spent", area, edited_spent, "spent total differs",
          timeout=60)
    b.bad("serve_state_edited_analyst_spent", area, edited_analyst_spent, "differs", timeout=60)
    b.bad("serve_state_corrupted_page", area, corrupted_page, ("integrity check", "damaged"),
          timeout=60)
    b.bad("serve_state_truncated_half", area, truncated_state,
          ("integrity check", "damaged", "malformed", "not a SQLite"), timeout=60)
    b.bad("serve_state_not_sqlite", area, not_sqlite, "not a SQLite database", timeout=60)

    def second_server(link: Callable[[str, str], None]) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            state, service = made_state(ctx)  # the first server keeps serving (its lease held)
            other = ctx.path("other-name.db")
            link(state, other)
            try:
                return serve(ctx, other)
            finally:
                with _legitimate(b):
                    who = service.authenticate(  # type: ignore[attr-defined]
                        f"Bearer {service.add_analyst('zoe', 0.5)['token']}")  # type: ignore[attr-defined]
                    answer = service.answer(who, {"cell": {"a": 0}}, "z1")  # type: ignore[attr-defined]
                ctx.check(math.isfinite(answer["value"]), "the first server stopped serving",
                          "crash")
        return run

    b.bad("serve_second_server_via_hard_link", area, second_server(os.link), "another server",
          timeout=60)
    b.bad("serve_second_server_via_symlink", area, second_server(os.symlink), "another server",
          timeout=60)


# -- 5. the client ---------------------------------------------------------------------------


def _client(b: ModuleType) -> None:
    area = "cli ask"

    def token_file(content: bytes) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            _no_proxies()
            ctx.markers.extend(["QzSentinel42", "income"])
            path = ctx.write("token.txt", content)
            with _http_server(_json_reply({"remaining": 0.75})) as (url, seen):
                try:
                    return ctx.cli("ask", url, "--token-file", path, "--budget").out
                finally:
                    ctx.check(not seen, f"{len(seen)} request(s) sent with a bad token file")
        return run

    b.bad("ask_token_file_crlf", area, token_file(b"a1.abc\r\nQzSentinel42\r\n"),
          "--token-file")
    b.bad("ask_token_file_is_a_csv", area,
          token_file(b"age,income,zip\n37,QzSentinel42,02139\n41,52000,10001\n"), "--token-file")
    b.bad("ask_token_file_binary", area, token_file(b"\x89PNG\r\n\x1a\n\xff\xfeQzSentinel42"),
          "--token-file")

    def env_token(ctx) -> object:  # noqa: ANN001
        _no_proxies()
        ctx.markers.append("QzSentinel42")
        os.environ["FASTMWEM_TOKEN"] = "a1.abc\r\nQzSentinel42"
        with _http_server(_json_reply({"remaining": 0.75})) as (url, seen):
            try:
                return ctx.cli("ask", url, "--budget").out
            finally:
                ctx.check(not seen, "a request was sent with a malformed token")

    b.bad("ask_env_token_crlf", area, env_token, "FASTMWEM_TOKEN")

    def redirect(code: int) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
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

    b.bad("ask_redirect_302_other_origin", area, redirect(302), "another origin")
    b.bad("ask_redirect_307_other_origin", area, redirect(307), "another origin")

    def client_token(ctx) -> object:  # noqa: ANN001
        from fastmwem.client import Client

        ctx.markers.append("QzSentinel42")
        return Client("http://127.0.0.1:9", "a1.abc\r\nQzSentinel42")

    b.bad("client_token_with_crlf", "api client", client_token, "token must be")


# -- 6. saved files and engines --------------------------------------------------------------

_HNSW_HEADER = struct.Struct("=QQQQQQiIQQQdQ")


def _index_arrays(ctx, spec: str) -> dict[str, np.ndarray]:  # noqa: ANN001
    from fastmwem.indices import make_index

    keys = (np.random.default_rng(0).random((300, 12)) < 0.5).astype(np.float64)
    path = ctx.path("saved.npz")
    make_index(spec, keys, progress=False).save(path)
    with np.load(path, allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}


def _files_and_engines(b: ModuleType) -> None:
    from fastmwem.indices import load_index

    area = "api lazy+indices"

    def faiss_edited_to_flat(spec: str) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            from fastmwem.mechanisms import LazyExponentialMechanism

            arrays = _index_arrays(ctx, spec)
            meta = json.loads(str(arrays["meta"]))
            meta["factory"] = "Flat"
            path = ctx.path("edited.npz")
            np.savez(path, **{**arrays, "meta": np.array(json.dumps(meta))})
            index = load_index(path)
            # Loaded: the harm is a lazy mechanism that trusts it as exact.
            mech = LazyExponentialMechanism(index, epsilon=1.0)
            return f"loaded as exact={index.exact}; {type(mech).__name__} accepted it"
        return run

    b.bad("index_faiss_hnsw_edited_to_flat", area, faiss_edited_to_flat("faiss:HNSW8"),
          ("factory", "not a saved fastmwem index"), timeout=60)
    b.bad("index_faiss_ivf_edited_to_flat", area, faiss_edited_to_flat("faiss:IVF4,Flat"),
          ("factory", "not a saved fastmwem index"), timeout=60)

    def zip_bomb(ctx) -> object:  # noqa: ANN001
        import resource

        arrays = {k: v for k, v in _index_arrays(ctx, "flat").items() if k != "keys"}
        path = ctx.path("bomb.npz")
        shape = (2**18, 1024)  # 1 GiB of float32 zeros in a few MB
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for key, value in arrays.items():
                info = zipfile.ZipInfo(f"{key}.npy")
                info.compress_type = zipfile.ZIP_STORED
                with zf.open(info, "w") as handle:
                    np.lib.format.write_array(handle, value, allow_pickle=False)
            with zf.open("keys.npy", "w", force_zip64=True) as handle:
                np.lib.format.write_array_header_1_0(
                    handle, {"descr": "<f4", "fortran_order": False, "shape": shape})
                zeros = bytes(1 << 20)
                for _ in range(shape[0] * shape[1] * 4 >> 20):
                    handle.write(zeros)
        # Unpacking the member must not be tried: 512 MiB above what the process has now.
        size = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 29), size + (1 << 29)))
        return load_index(path)

    b.bad("index_zip_bomb", area, zip_bomb, ("compressed", "not a saved fastmwem index"),
          timeout=90)

    def hnswlib_corrupt(offset: Callable[[dict[str, int]], int], fmt: str,
                        value: Callable[[dict[str, int]], int]) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            arrays = _index_arrays(ctx, "hnswlib")
            blob = arrays["hnsw"].copy()
            fields = _HNSW_HEADER.unpack_from(blob, 0)
            layout = {"record0": _HNSW_HEADER.size, "m0": fields[9], "n": fields[2]}
            packed = struct.pack("=" + fmt, value(layout))
            at = offset(layout)
            blob[at:at + len(packed)] = np.frombuffer(packed, dtype=np.uint8)
            path = ctx.path("corrupt.npz")
            np.savez(path, **{**arrays, "hnsw": blob})
            index = load_index(path)
            index.search(np.linspace(-1.0, 1.0, index.dimension), 5)
            index.search(np.ones(index.dimension), 20)
            return "loaded and searched"
        return run

    b.bad("index_hnswlib_neighbour_id_out_of_range", area,
          hnswlib_corrupt(lambda lay: lay["record0"] + 4, "I", lambda lay: 300 + 1000),
          "not a saved fastmwem index", timeout=60)
    b.bad("index_hnswlib_neighbour_count_too_big", area,
          hnswlib_corrupt(lambda lay: lay["record0"], "H", lambda lay: lay["m0"] + 1),
          "not a saved fastmwem index", timeout=60)
    b.bad("index_hnswlib_element_count", area,
          hnswlib_corrupt(lambda lay: 16, "Q", lambda lay: 301),
          "not a saved fastmwem index", timeout=60)

    # DuckDB: a NaN in a float Parquet column, hidden from the row group's statistics
    def duckdb_nan(schema: bool) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            import pyarrow as pa
            import pyarrow.parquet as pq

            rows = 1200
            values = np.tile(np.array([0.0, 1.0, 2.0]), rows // 3)
            values[rows - 3] = np.nan  # the last row group's statistics say max 2
            codes = np.random.default_rng(0).integers(0, 2, rows)
            path = ctx.path("nan.parquet")
            pq.write_table(pa.table({"a": values, "b": codes}), path, row_group_size=rows // 4)
            if schema:
                target = ["--schema", ctx.write("schema.json", json.dumps({"columns": [
                    {"name": "a", "type": "numeric", "lower": 0, "upper": 3, "bins": 3},
                    {"name": "b", "type": "integer", "lower": 0, "upper": 1}]}))]
            else:
                target = ["--domain", ctx.write("domain.json", json.dumps({"a": 3, "b": 2}))]
            return ctx.cli("synth", path, *target, "--engine", "duckdb", "--epsilon", "1",
                           "--out", ctx.path("out.csv"), "--no-progress")
        return run

    b.bad("synth_duckdb_parquet_nan_codes", "cli synth", duckdb_nan(False),
          ("NaN", "missing"), timeout=90)
    b.bad("synth_duckdb_parquet_nan_schema", "cli synth", duckdb_nan(True),
          ("NaN", "missing"), timeout=90)

    def duckdb_source_nan(ctx) -> object:  # noqa: ANN001
        import pyarrow as pa
        import pyarrow.parquet as pq

        from fastmwem.data import Domain
        from fastmwem.data.sources.duckdb import DuckDBSource
        from fastmwem.release import mwem
        from fastmwem.workloads import Marginals

        values = np.tile(np.array([0.0, 1.0, 2.0]), 400)
        values[1197] = np.nan
        path = ctx.path("nan.parquet")
        pq.write_table(pa.table({"a": values}), path, row_group_size=300)
        domain = Domain(["a"], [3])
        with DuckDBSource(path, domain) as source:
            return mwem(source, Marginals.all_kway(domain, 1), epsilon=1.0, rounds=1,
                        accountant=ctx.acc())

    b.bad("duckdb_source_parquet_nan", "api data", duckdb_source_nan, ("NaN", "missing"),
          timeout=90)

    # import with nowhere for numba to cache
    def unwritable_home(ctx) -> str:  # noqa: ANN001
        import shutil

        import fastmwem

        package = ctx.dir / "site" / "fastmwem"
        shutil.copytree(Path(fastmwem.__file__).parent, package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
            (folder / "__pycache__").write_bytes(b"")
        blocker = ctx.dir / "not-a-folder"
        blocker.write_bytes(b"")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
        env.update(HOME=str(blocker / "home"), XDG_CACHE_HOME=str(blocker / "cache"),
                   PYTHONPATH=str(ctx.dir / "site"), PYTHONDONTWRITEBYTECODE="1")
        script = ("import numpy as np\nimport fastmwem\n"
                  "import fastmwem.release._matching, fastmwem.release._passes\n"
                  "import fastmwem.indices._bitkernels_numba\n"
                  "from fastmwem.release._matching import match_marginals\n"
                  "rng = np.random.default_rng(0)\n"
                  "codes = np.stack([rng.integers(0, 3, 40), rng.integers(0, 4, 40)], axis=1)\n"
                  "match_marginals(codes, (3, 4), [(0, 1)], lambda s: np.full(12, 1 / 12), rng)\n"
                  "print('imported', fastmwem.__file__)\n")
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                text=True, timeout=170, cwd=ctx.dir)
        ctx.check(result.returncode == 0, f"exit {result.returncode}: {result.stderr[-400:]}",
                  "crash")
        ctx.check(str(package) in result.stdout, f"imported another copy: {result.stdout}")
        return "imported and compiled without a cache"

    b.good("import_with_unwritable_home", "valid api", unwritable_home, timeout=180)

    # the continuous exponential mechanism's loss, checked on public points before the charge
    from fastmwem.mechanisms.continuous import Box, ContinuousExponentialMechanism

    def loss_case(loss: Callable[[np.ndarray], object], method: str = "atom",
                  **options: object) -> Callable[[object], object]:
        def run(ctx) -> object:  # noqa: ANN001
            ctx.markers.extend(["3.7", "137", "QzLossSecret"])
            mech = ContinuousExponentialMechanism(loss=loss, sensitivity=0.1, epsilon=1.0,
                                                  space=Box(0, 1))
            # delta > 0: the Metropolis sampler is charged (epsilon, delta)
            return b.quiet(lambda: mech.sample_many(3, rng=0, method=method,
                                                    accountant=ctx.acc(100.0, delta=0.5),
                                                    **options))
        return run

    area = "api continuous"
    metropolis = {"steps": 5, "beta": 0.5}
    for name, loss, expect in [
        ("nan", lambda p: np.full(p.shape[0], np.nan), "finite"),
        ("negative", lambda p: np.full(p.shape[0], -3.7), ">= 0"),
        ("wrong_shape", lambda p: np.full(137, 0.5), "one value per point"),
        ("text", lambda p: np.full(p.shape[0], "QzLossSecret"), "real numbers"),
    ]:
        b.bad(f"cem_loss_{name}_before_charge", area, loss_case(loss), expect)
        b.bad(f"cem_loss_{name}_before_charge_metropolis", area,
              loss_case(loss, "metropolis", **metropolis), expect)

    def away_from_probes(points: np.ndarray) -> np.ndarray:
        x = points[:, 0]
        return np.where(np.abs(x - 0.6) < 0.1, -0.123, np.abs(x - 0.3))

    def found_while_sampling(ctx) -> object:  # noqa: ANN001
        ctx.markers.append("0.123")
        mech = ContinuousExponentialMechanism(loss=away_from_probes, sensitivity=0.1,
                                              epsilon=1.0, space=Box(0, 1))
        return b.quiet(lambda: mech.sample_many(200, rng=0, accountant=ctx.acc(1000.0)))

    # Documented: a loss negative only away from the public probe points is seen while
    # sampling, after the charge; the refusal must still name no loss value.
    b.add("cem_loss_negative_off_probes_after_charge", area, False, found_while_sampling, ">= 0",
          after_charge=True)

    def huge_batch(ctx) -> object:  # noqa: ANN001
        mech = ContinuousExponentialMechanism(loss=lambda p: np.abs(p[:, 0] - 0.3),
                                              sensitivity=0.1, epsilon=1.0, space=Box(0, 1))
        return mech.sample_many(10**9, rng=0, accountant=ctx.acc(10.0))

    b.bad("cem_sample_many_1e9", area, huge_batch, ("working memory", "several calls"))

    from fastmwem.data import Domain
    from fastmwem.workloads import Marginals

    domain = Domain(["a", "b", "ab"], [2, 3, 2])
    b.bad("marginals_bare_string", "api workloads", lambda c: Marginals(domain, "ab"),
          "bare")
    b.bad("marginals_bare_bytes", "api workloads", lambda c: Marginals(domain, b"ab"),
          "bare")
