"""Fixtures of the service tests: real servers on loopback, PostgreSQL, headless Chromium.

Where a binary is missing (PostgreSQL, Chromium and its driver) the tests skip with the reason;
under CI (``CI=true``) a missing binary fails instead, since CI installs them (.ci/run).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from fastmwem.service.client import Client
from tests._browser import headless_chrome

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def unavailable(reason: str) -> None:
    """Skip locally; fail under CI, which must run every service test for real."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test, but {reason}")
    pytest.skip(reason, allow_module_level=True)


try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError:
    unavailable("the service extra is not installed (pip install '.[service]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_data(directory: Path, n: int = 400, seed: int = 0) -> tuple[Path, Path]:
    """A small CSV of codes over a {a: 2, b: 2, c: 4} domain, and its domain file."""
    rng = np.random.default_rng(seed)
    rows = np.column_stack([rng.integers(0, 2, n), (rng.random(n) < 0.3).astype(int),
                            rng.integers(0, 4, n)])
    csv = directory / "data.csv"
    csv.write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    domain = directory / "domain.json"
    domain.write_text(json.dumps({"a": 2, "b": 2, "c": 4}))
    return csv, domain


#: The labels of the test domain's codes, for a server started with a schema.
LABELS = {"a": ["no", "yes"], "b": ["F", "M"], "c": ["north", "east", "south", "west"]}


def write_raw_data(directory: Path, n: int = 400, seed: int = 0) -> tuple[Path, Path]:
    """The data of :func:`write_data` as raw labels, and its schema file."""
    csv, _ = write_data(directory, n, seed)
    lines = csv.read_text().splitlines()
    raw = [lines[0]] + [",".join(LABELS[name][int(code)] for name, code in
                                 zip("abc", line.split(","))) for line in lines[1:]]
    csv = directory / "raw.csv"
    csv.write_text("\n".join(raw) + "\n")
    schema = directory / "schema.json"
    schema.write_text(json.dumps({"columns": [
        {"name": name, "type": "categorical", "categories": labels}
        for name, labels in LABELS.items()]}))
    return csv, schema


class Server:
    """``fastmwem serve`` in a child process on a free loopback port (``schema``: on raw labels
    with a schema, else on codes with a domain)."""

    def __init__(self, directory: Path, state: str, *extra: str, epsilon: float = 1.0,
                 schema: bool = False) -> None:
        self.directory = directory
        if schema:
            self.csv, self.schema = write_raw_data(directory)
            source = ["--schema", str(self.schema)]
        else:
            self.csv, self.domain = write_data(directory)
            source = ["--domain", str(self.domain)]
        self.state = state
        self.admin_file = directory / "admin.token"
        self.args = [str(self.csv), *source, "--epsilon", str(epsilon),
                     "--state", state, "--admin-token-file", str(self.admin_file), *extra]
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Server:
        log = open(self.directory / "server.log", "ab")  # noqa: SIM115 - the child's stderr
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fastmwem", "serve", *self.args, "--port", str(self.port)],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited: "
                                   + (self.directory / "server.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the server did not come up in time")

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill9()

    def admin(self) -> Client:
        return Client(self.url, self.admin_file.read_text().strip(), timeout=30)

    def analyst(self, name: str, budget: float) -> Client:
        token = self.admin().add_analyst(name, budget)["token"]
        return Client(self.url, token, timeout=30)


def _factory(directory: Path):
    servers: list[Server] = []

    def make(*extra: str, state: str | None = None, epsilon: float = 1.0,
             schema: bool = False) -> Server:
        server = Server(directory, state or str(directory / "state.db"), *extra, epsilon=epsilon,
                        schema=schema)
        servers.append(server)
        return server

    return make, servers


@pytest.fixture
def server_factory(tmp_path):
    make, servers = _factory(tmp_path)
    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def module_server_factory(tmp_path_factory):
    """Like ``server_factory``, for a server shared by a module's tests."""
    make, servers = _factory(tmp_path_factory.mktemp("server"))
    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url():
    """A throw-away PostgreSQL 15 server on loopback (Debian's package), for the whole run."""
    if not (PG_BIN / "initdb").exists() or shutil.which("runuser") is None:
        unavailable(f"PostgreSQL 15 is not installed ({PG_BIN}/initdb missing; "
                    "apt-get install postgresql)")
    if os.geteuid() != 0:
        unavailable("starting PostgreSQL as the postgres user needs root")
    root = Path(tempfile.mkdtemp(prefix="fastmwem-pg-"))
    shutil.chown(root, "postgres")
    data, log, port = root / "data", root / "log", free_port()

    def as_postgres(*cmd: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)

    as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o",
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def fresh_database(postgres_url):
    """A new empty database on the session's server; its URL."""
    import psycopg

    name = f"t{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def chrome():
    yield from headless_chrome()
