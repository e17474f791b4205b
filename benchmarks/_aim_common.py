"""Helpers shared by ``aim_reference.py``, ``aim_suite.py`` and ``mwem_vs_aim.py`` (no benchmark).

Each measured run is a fresh child process, so that its CPU time (user + system, every thread)
and its peak resident memory come from the kernel's accounting of that one process
(``os.wait4``), not from the parent's.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from fastmwem._files import replacement_mode
from fastmwem.data import Dataset, Domain
from fastmwem.datasets import load_nltcs
from fastmwem.evaluation import workload_error
from fastmwem.workloads import Marginals

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def cpu() -> float:
    """CPU seconds of this process so far, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine() -> dict[str, object]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "platform": platform.platform()}


def write_json_atomic(path: str, payload: object) -> None:
    """Write ``payload`` so that ``path`` always holds either the old or the whole new file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=1)
            fh.write("\n")
        os.chmod(tmp, replacement_mode(path))  # mkstemp's 0600 would carry over the target
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def paired_bars(path: str, labels: Sequence[str], pairs: Sequence[tuple[str, Sequence[float]]],
                ylabel: str, title: str, width: float = 8.0) -> None:
    """Two bars an input (the ``(label, values)`` of each ``pairs`` entry), saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, 4))
    x = np.arange(len(labels))
    for shift, (label, values) in zip((-0.2, 0.2), pairs):
        ax.bar(x + shift, list(values), 0.4, label=label)
    ax.set_xticks(x, list(labels), fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def load_dataset(name: str, csv_path: str | None, domain_path: str | None) -> Dataset:
    """The bundled NLTCS, or a CSV of codes with its domain JSON (both paths given).

    A CSV whose name ends in ``.gz`` (the suite's tables) is read through pandas.
    """
    if csv_path is None and domain_path is None:
        if name != "nltcs":
            raise SystemExit(f"dataset {name!r} needs --data CSV and --domain JSON")
        return load_nltcs()
    if csv_path is None or domain_path is None:
        raise SystemExit("--data and --domain go together")
    domain = Domain.from_json(domain_path)
    if csv_path.endswith(".gz"):
        import pandas as pd

        return Dataset.from_dataframe(pd.read_csv(csv_path)[list(domain.attributes)], domain)
    return Dataset.from_csv(csv_path, domain)


def mean_marginal_l1(data: Dataset, estimate: Callable[[tuple[str, ...]], np.ndarray],
                     k: int) -> float:
    """Mean over all k-way marginals of the L1 distance between normalised marginals.

    Each marginal is scored by :func:`fastmwem.evaluation.workload_error` on the marginal's own
    (projected) domain, so no full-domain histogram is needed; for a synthetic histogram over the
    whole domain this is exactly ``workload_error(...)["mean_group_l1"]`` of all k-way marginals.
    ``estimate(attrs)`` returns the synthetic counts of ``attrs`` in domain order, shaped by
    their sizes.
    """
    errors = []
    for attrs in Marginals.all_kway(data.domain, k).attribute_sets:
        sub = data.domain.project(attrs)
        workload = Marginals(sub, [attrs])
        est = np.clip(np.asarray(estimate(attrs), dtype=np.float64).reshape(-1), 0.0, None)
        errors.append(workload_error(data.marginal(attrs).reshape(-1), est,
                                     workload)["mean_group_l1"])
    return float(np.mean(errors))


@contextlib.contextmanager
def _terminate_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises SystemExit (so cleanup runs) in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _proc_usage(pid: int) -> tuple[float, float] | None:
    """CPU seconds (user + system, every thread) and resident MB of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # fields[0] is the stat file's 3rd field
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / ticks
    rss_mb = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return cpu, rss_mb


def run_child(argv: Sequence[str], timeout: float | None, *, cpu_timeout: float | None = None,
              cpu_until: str | None = None, max_rss_mb: float | None = None) -> dict[str, object]:
    """Run ``argv`` as a child process; its CPU seconds, wall seconds and peak RSS.

    The child runs in its own session, so a timeout ends it and everything it started; so
    does this process being interrupted or sent SIGTERM (the child, in another session, would
    not get the signal and would run on, orphaned, for an hour or more of AIM).
    ``timeout`` caps wall seconds; ``cpu_timeout`` caps the child's CPU seconds (polled from
    /proc every half second) until the file ``cpu_until`` exists (the child creates it when
    the capped part is done; without it the cap holds to the end); ``max_rss_mb`` ends a child
    whose resident memory passes it (to spare the other jobs on the machine).
    Returns ``status`` ("ok", "failed", "timeout" or "out_of_memory"), ``limit`` (which limit
    ended it: "wall", "cpu" or "rss"; None when none did), ``returncode``, ``cpu_seconds``,
    ``wall_seconds``, ``peak_rss_mb`` and the tail of its stderr.
    """
    with tempfile.TemporaryFile() as err, _terminate_raises():
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        limit = None
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if timeout is not None and time.perf_counter() - started > timeout:
                    limit = "wall"
                elif cpu_timeout is not None or max_rss_mb is not None:
                    now = _proc_usage(proc.pid)
                    capped = cpu_until is None or not os.path.exists(cpu_until)
                    if now is not None and cpu_timeout is not None and capped \
                            and now[0] > cpu_timeout:
                        limit = "cpu"
                    elif now is not None and max_rss_mb is not None and now[1] > max_rss_mb:
                        limit = "rss"
                if limit is not None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    _, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.5)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            raise
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-4000:]
    code = proc.returncode
    if limit is None:
        state = "ok" if code == 0 else "failed"
    else:
        state = "out_of_memory" if limit == "rss" else "timeout"
    return {
        "status": state,
        "limit": limit,
        "returncode": code,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "wall_seconds": wall,
        # ru_maxrss is in KiB on Linux.
        "peak_rss_mb": usage.ru_maxrss / 1024.0,
        "stderr_tail": tail if code != 0 or limit is not None else "",
    }


def summarise(runs: list[dict], keys: Sequence[str], metrics: Sequence[str]) -> list[dict]:
    """Mean, min and max of each metric over the ``ok`` runs sharing the values of ``keys``."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(tuple(run.get(k) for k in keys), []).append(run)
    rows = []
    for key, members in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        ok = [m for m in members if m["status"] == "ok"]
        row = {**dict(zip(keys, key)), "runs": len(members), "ok": len(ok),
               "statuses": sorted({m["status"] for m in members})}
        for metric in metrics:
            values = [m[metric] for m in ok if m.get(metric) is not None]
            if values:
                row[metric] = {"mean": float(np.mean(values)), "min": float(np.min(values)),
                               "max": float(np.max(values))}
        rows.append(row)
    return rows


def script_argv(script: str, *args: str) -> list[str]:
    """Command line that reruns ``script`` in this interpreter."""
    return [sys.executable, script, *args]
