"""The PMW query service (``fastmwem serve``) on NLTCS.

1. Throughput: answered queries per second over HTTP on loopback with 1, 4 and 16 concurrent
   clients, SQLite (WAL) state vs PostgreSQL state (a throw-away server started here, as in the
   tests; skipped without Debian's postgresql package or root). Each run starts a fresh state
   and server; the clients ask random 2-way marginal cells. Every answer is two durable commits
   at most (the epoch's charge, then the answer), so the numbers are bound by fsync.
2. The fraction of a stream of random 2-way marginal cells answered without an update (from the
   synthetic distribution), for a few (epsilon, alpha, max_updates) settings, with the library's
   PMWSession directly; the stream stops when the updates run out. The mean error of the
   answers against the real data is reported too (an evaluation: not private).

Run: ``python benchmarks/pmw_service.py [--quick]``. Writes benchmarks/results/pmw_service.json
and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

from fastmwem.datasets import load_nltcs, nltcs_paths
from fastmwem.release.pmw import PMWSession
from fastmwem.release.pmw.queries import query_vector
from fastmwem.service.client import Client, ServiceError

RESULTS = Path(__file__).resolve().parent / "results"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
SERVE = ["--epsilon", "10", "--alpha", "0.02", "--max-updates", "2000",
         "--rate", "1000000", "--burst", "1000000"]


def random_cell(rng: np.random.Generator, attrs: tuple[str, ...]) -> dict:
    a, b = rng.choice(len(attrs), 2, replace=False)
    return {"cell": {attrs[a]: int(rng.integers(2)), attrs[b]: int(rng.integers(2))}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """A PostgreSQL 15 cluster in a temporary directory, run as the postgres user."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="pmw-bench-pg-"))
        shutil.chown(self.root, "postgres")
        self.port = free_port()
        self._pg("initdb", "-D", str(self.root / "data"), "-A", "trust", "-U", "postgres")
        self._pg("pg_ctl", "-D", str(self.root / "data"), "-l", str(self.root / "log"), "-w",
                 "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1", "start")
        self.count = 0

    def _pg(self, tool: str, *args: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / tool), *args],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def new_database(self) -> str:
        import psycopg

        self.count += 1
        url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE bench{self.count}")
        return url.rsplit("/", 1)[0] + f"/bench{self.count}"

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def serve(state: str, workdir: Path) -> tuple[subprocess.Popen, str, str]:
    csv, domain = nltcs_paths()
    port = free_port()
    admin = workdir / f"admin-{port}"
    proc = subprocess.Popen([sys.executable, "-m", "fastmwem", "serve", str(csv), "--domain",
                             str(domain), "--state", state, "--admin-token-file", str(admin),
                             "--port", str(port), *SERVE],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1).close()
            return proc, url, admin.read_text().strip()
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


def throughput(state: str, clients: int, queries: int, workdir: Path) -> dict[str, object]:
    proc, url, admin_token = serve(state, workdir)
    try:
        admin = Client(url, admin_token)
        tokens = [admin.add_analyst(f"c{i}", 10.0)["token"] for i in range(clients)]
        attrs = tuple(admin.domain())
        sources: list[str] = []
        lock = threading.Lock()

        def work(i: int) -> None:
            client, rng = Client(url, tokens[i]), np.random.default_rng(i)
            for _ in range(queries // clients):
                try:
                    source = client.ask(random_cell(rng, attrs))["source"]
                except ServiceError:
                    continue
                with lock:
                    sources.append(source)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"clients": clients, "answered": len(sources), "seconds": round(seconds, 3),
            "per_second": round(len(sources) / seconds, 1),
            "synthetic_fraction": round(sources.count("synthetic") / max(len(sources), 1), 3)}


def stream(epsilon: float, alpha: float, max_updates: int, length: int, reuse: int,
           seed: int) -> dict[str, object]:
    data = load_nltcs()
    hist = data.histogram()
    attrs = data.domain.attributes
    rng = np.random.default_rng(seed)
    session = PMWSession(data, epsilon=epsilon, alpha=alpha, max_updates=max_updates, rng=rng,
                         reuse_passes=reuse)
    synthetic, errors, curve = 0, [], []
    started = time.perf_counter()
    for _ in range(length):
        query = random_cell(rng, attrs)
        if session.updates_left == 0:
            break
        ans = session.answer(query)
        synthetic += ans.source == "synthetic"
        errors.append(abs(ans.value - float(query_vector(data.domain, query) @ hist)))
        curve.append(synthetic / len(errors))
    return {"epsilon": epsilon, "alpha": alpha, "max_updates": max_updates, "reuse_passes": reuse,
            "answered": len(errors), "synthetic_fraction": round(synthetic / len(errors), 4),
            "mean_abs_error_records": round(float(np.mean(errors)), 1),
            "mean_abs_error_fraction": round(float(np.mean(errors)) / len(data), 5),
            "seconds": round(time.perf_counter() - started, 2), "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    queries = 160 if args.quick else 800
    workdir = Path(tempfile.mkdtemp(prefix="pmw-bench-"))
    results: dict[str, object] = {"machine": platform.machine(), "cores": os.cpu_count(),
                                  "serve": " ".join(SERVE), "queries_per_run": queries}
    rows = []
    for clients in (1, 4, 16):
        rows.append({"store": "sqlite", **throughput(str(workdir / f"s{clients}.db"), clients,
                                                     queries, workdir)})
        print(rows[-1], flush=True)
    if (PG_BIN / "initdb").exists() and os.geteuid() == 0:
        pg = Postgres()
        try:
            for clients in (1, 4, 16):
                rows.append({"store": "postgresql",
                             **throughput(pg.new_database(), clients, queries, workdir)})
                print(rows[-1], flush=True)
        finally:
            pg.stop()
    results["throughput"] = rows
    settings = [(1.0, 0.05, 50, 0), (1.0, 0.05, 50, 5), (1.0, 0.1, 50, 5), (4.0, 0.05, 100, 5),
                (4.0, 0.02, 200, 5)]
    if args.quick:
        settings = settings[:2]
    results["streams"] = []
    for eps, alpha, updates, reuse in settings:
        row = stream(eps, alpha, updates, 3000, reuse, seed=5)
        print({k: v for k, v in row.items() if k != "curve"}, flush=True)
        results["streams"].append(row)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pmw_service.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(results)
    shutil.rmtree(workdir, ignore_errors=True)


def plot(results: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for store in ("sqlite", "postgresql"):
        rows = [r for r in results["throughput"] if r["store"] == store]
        if rows:
            left.plot([r["clients"] for r in rows], [r["per_second"] for r in rows], "o-",
                      label=store)
    left.set_xscale("log", base=2)
    left.set_xlabel("concurrent clients")
    left.set_ylabel("answered queries / s")
    left.set_title("HTTP on loopback, NLTCS")
    left.legend()
    for row in results["streams"]:
        right.plot(row["curve"], label=f"eps={row['epsilon']} alpha={row['alpha']} "
                                       f"T={row['max_updates']} reuse={row['reuse_passes']}")
    right.set_xlabel("queries answered (random 2-way marginal cells)")
    right.set_ylabel("fraction answered without an update")
    right.set_title("PMW on NLTCS")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "pmw_service.png", dpi=110)


if __name__ == "__main__":
    main()
