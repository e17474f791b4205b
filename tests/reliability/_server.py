"""A process that runs the battery's cases for the test suite, two at a time.

The tests do not fork the pytest process itself: by the time they run it may hold threads (a
Spark gateway, a server of another test), and a fork of a threaded process can deadlock. This
server is a fresh, single-threaded interpreter with every fastmwem module imported and the
cases registered. It reads the names of the cases to run on stdin (one a line, to its end), runs
them in forked children (``_runner.run_cases``) and writes each result as a line of JSON as soon
as it has it. On SIGTERM it kills the children still running and stops.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType, TracebackType

# Numerical libraries run one thread a case; set before numpy is first imported.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
#: Cases run at the same time (they share nothing; see ``run_cases``).
WORKERS = min(2, os.cpu_count() or 1)


class CaseServer:
    """The test side: starts the server with the cases to run and hands out their results."""

    def __init__(self, names: list[str], workdir: Path) -> None:
        import fastmwem

        root = Path(__file__).resolve().parents[2]
        paths = [str(root), str(Path(fastmwem.__file__).resolve().parents[1])]
        if os.environ.get("PYTHONPATH"):
            paths.append(os.environ["PYTHONPATH"])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "TMPDIR": str(workdir)}
        env.update(dict.fromkeys(THREAD_VARIABLES, "1"))
        self._proc = subprocess.Popen([sys.executable, "-m", "tests.reliability._server"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                      cwd=root, text=True, encoding="utf-8")
        self._proc.stdin.write("".join(f"{name}\n" for name in names))  # type: ignore[union-attr]
        self._proc.stdin.close()  # type: ignore[union-attr]
        self._pending = set(names)
        self._results: dict[str, dict[str, object]] = {}

    def result(self, name: str) -> dict[str, object]:
        """The result (category, message, seconds) of the case ``name``, once it has run."""
        if name not in self._pending:
            raise KeyError(f"the case {name!r} was not given to the server")
        while name not in self._results:
            line = self._proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError(f"the case server stopped (exit status {self._proc.wait()})")
            answer = json.loads(line)
            self._results[answer.pop("name")] = answer
        self._pending.discard(name)
        return self._results.pop(name)

    def close(self) -> None:
        if self._pending:  # stopped early: the cases still running are not wanted
            self._proc.terminate()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()  # type: ignore[union-attr]

    def __enter__(self) -> CaseServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds run_cases, which kills its children


def serve() -> None:
    """The server (stdin: case names; stdout: one JSON result a line, with the case's name)."""
    from . import all_cases
    from ._runner import preload, run_cases

    signal.signal(signal.SIGTERM, _stop)
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed by accident goes to stderr, not among the answers
    preload()
    cases = {case.name: case for case in all_cases()}
    wanted = [cases[line.strip()] for line in sys.stdin if line.strip()]
    logs = Path(tempfile.mkdtemp(prefix="battery-logs-"))
    try:
        for case, result in run_cases(wanted, logs, workers=WORKERS):
            answers.write(json.dumps({"name": case.name, **result}) + "\n")
            answers.flush()
    finally:
        shutil.rmtree(logs, ignore_errors=True)


if __name__ == "__main__":
    for _var in THREAD_VARIABLES:
        os.environ.setdefault(_var, "1")
    serve()
