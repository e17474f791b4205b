"""kill -9 at random moments while a client asks: no answer is lost, nothing is spent twice.

A client thread asks queries in a loop; each request id is retried until the server answers
(the retry returns the stored answer if the first attempt was committed). The server is killed
with SIGKILL at random points and restarted. After every restart: every answer the client
received is in the state's answer log, the ledger adds up to the budget rows, and the total
spent is at least the sum of the charges the client was told about. The kill times are random
(seeded) but the outcome checked is deterministic. The default run kills 3 times; the slow
tier kills 100 times (bounded to 15 minutes).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from fractions import Fraction

import numpy as np
import pytest

from fastmwem.service.client import Client, ServiceError


def _state_figures(state: str) -> tuple[set[str], Fraction, Fraction]:
    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as conn:
        ids = {r for (r,) in conn.execute("SELECT request_id FROM answers")}
        spent = Fraction(conn.execute("SELECT spent FROM budgets WHERE scope = 'global'")
                         .fetchone()[0])
        ledger = sum((Fraction(json.loads(r)["cost"][0])
                      for (r,) in conn.execute("SELECT record FROM ledger")), Fraction(0))
    return ids, spent, ledger


class Asker(threading.Thread):
    """Asks queries until told to stop, retrying each request id until it is answered."""

    def __init__(self, url: str, token: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.client = Client(url, token, timeout=5)
        self.rng = np.random.default_rng(seed)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answered: dict[str, float] = {}  # request id -> charged, as acknowledged
        self.refused: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            rid = uuid.uuid4().hex
            query = {"cell": {"a": int(self.rng.integers(2)), "c": int(self.rng.integers(4))}}
            while not self.stop.is_set():
                try:
                    ans = self.client.ask(query, request_id=rid)
                except ServiceError as exc:  # a refusal is an answer too: no retry
                    self.refused.append(exc.message)
                    self.stop.wait(0.05)
                    break
                except OSError:  # the server is down: retry the same id
                    self.stop.wait(0.05)
                    continue
                with self.lock:
                    self.answered[rid] = ans["charged"]
                break

    def snapshot(self) -> dict[str, float]:
        with self.lock:
            return dict(self.answered)


def _kill_loop(server_factory, kills: int, budget_seconds: float, seed: int) -> int:
    server = server_factory("--alpha", "0.001", "--max-updates", "5000", "--total", "400",
                            "--rate", "100000", "--burst", "100000", epsilon=5.0).start()
    token = server.admin().add_analyst("kim", 5.0)["token"]
    asker = Asker(server.url, token, seed)
    asker.start()
    rng = np.random.default_rng(seed)
    deadline = time.monotonic() + budget_seconds
    done = 0
    try:
        for _ in range(kills):
            if time.monotonic() > deadline:
                break
            time.sleep(float(rng.uniform(0.05, 0.6)))
            server.kill9()
            acknowledged = asker.snapshot()  # all of these were received before the kill
            server.start()
            ids, spent, ledger = _state_figures(server.state)
            missing = set(acknowledged) - ids
            assert not missing, f"answers released but not in the log: {sorted(missing)[:3]}"
            assert ledger == spent <= 5
            assert float(spent) >= sum(acknowledged.values()) - 1e-9
            done += 1
    finally:
        asker.stop.set()
        asker.join(timeout=30)
    # The session resumed each time: answers kept coming after the restarts.
    assert len(asker.answered) > done and not asker.is_alive()
    return done


def test_kill_minus_nine_short(server_factory):
    assert _kill_loop(server_factory, kills=3, budget_seconds=60, seed=71) == 3


@pytest.mark.slow
def test_kill_minus_nine_hundred_times(server_factory):
    assert _kill_loop(server_factory, kills=100, budget_seconds=900, seed=72) == 100
