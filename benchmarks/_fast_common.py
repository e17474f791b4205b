"""Helpers shared by the Fast-MWEM benchmarks (fast_mwem_*.py): data, generators, timing, output.

Not a benchmark itself. The scripts run as ``python benchmarks/<script>.py``, which puts this
directory on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle numba/faiss workers must not spin

import numpy as np  # noqa: E402
from randomgen import ChaCha  # noqa: E402

from fastmwem.data import Dataset, Domain  # noqa: E402
from fastmwem.indices import numba_available  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


@dataclass
class TimedSelection:
    """A ``RoundSelection`` wrapping another: adds up the seconds of set-up and of ``choose``.

    ``mwem(selection=TimedSelection(...))`` runs exactly the wrapped selection (same privacy
    event, same chooser), so the release is timed through its public seam, unmodified.
    """

    inner: object
    check_s: float = 0.0
    prepare_s: float = 0.0
    choose_s: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    def event(self, epsilon):
        return self.inner.event(epsilon)

    def bind(self, workload):
        """The wrapped selection's ``bind`` (a lazy selection builds its oracle there, once
        per release), timed as set-up; without it the release would build the oracle in
        ``check`` and again in ``prepare``."""
        bind = getattr(self.inner, "bind", None)
        if callable(bind):
            started = time.perf_counter()
            self.inner = bind(workload)
            self.check_s += time.perf_counter() - started
        return self

    def check(self, workload, **kwargs) -> None:
        started = time.perf_counter()
        self.inner.check(workload, **kwargs)
        self.check_s += time.perf_counter() - started

    def prepare(self, workload, private, **kwargs):
        started = time.perf_counter()
        chooser = self.inner.prepare(workload, private, **kwargs)
        self.prepare_s += time.perf_counter() - started
        return _TimedChooser(chooser, self.choose_s)


@dataclass
class _TimedChooser:
    chooser: object
    times: list[float]

    def choose(self, state, available, rng) -> int:
        started = time.perf_counter()
        out = self.chooser.choose(state, available, rng)
        self.times.append(time.perf_counter() - started)
        return out

    def true_answers(self, queries):
        return self.chooser.true_answers(queries)


def binary_domain(bits: int) -> Domain:
    return Domain([f"b{i}" for i in range(bits)], [2] * bits)


def dirichlet_multinomial(domain: Domain, n: int, seed: int, alpha: float = 0.5) -> Dataset:
    """``n`` iid records from cell weights drawn from Dirichlet(``alpha``) (seeded)."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(domain.size, size=n, p=rng.dirichlet(np.full(domain.size, alpha)))
    return Dataset(np.column_stack(np.unravel_index(cells, domain.shape)), domain)


def release_generator(kind: str, seed: int) -> np.random.Generator:
    """The release default (ChaCha20), keyed from ``seed`` so runs repeat; or numpy's PCG64."""
    if kind == "pcg64":
        return np.random.default_rng(seed)
    key = np.random.default_rng(seed).integers(0, 2**63, size=4, dtype=np.uint64)
    return np.random.Generator(ChaCha(key=key, counter=0, rounds=20))


def spread(values) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def machine(load_before: tuple[float, float, float]) -> dict:
    return {"python": platform.python_version(), "numpy": np.__version__,
            "cpus": os.cpu_count(), "numba": numba_available(), "loadavg_before": load_before,
            "loadavg_after": os.getloadavg()}


def write_json(name: str, payload: dict) -> str:
    """Write ``results/<name>.json`` atomically; return the path stem for the plot."""
    os.makedirs(RESULTS, exist_ok=True)
    target = os.path.join(RESULTS, f"{name}.json")
    with open(target + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=1)
    os.replace(target + ".tmp", target)
    return os.path.join(RESULTS, name)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: Colours of the two selections in every plot.
COLORS = {"exponential": "tab:red", "lazy": "tab:blue"}


def error_scatter(ax, groups, title: str) -> None:
    """Each run's max (filled) and mean (open) abs. error; ``groups`` holds
    ``(x position, method, runs)``."""
    labelled = set()
    for x, method, runs in groups:
        for key, marker, offset in (("max_abs_error", "o", -0.04), ("mean_abs_error", "s", 0.04)):
            label = None if (method, key) in labelled else f"{method}: {key.split('_')[0]}"
            labelled.add((method, key))
            ax.scatter([x + offset] * len(runs), [r[key] for r in runs], marker=marker,
                       facecolors=COLORS[method] if key == "max_abs_error" else "none",
                       edgecolors=COLORS[method], label=label)
    ax.set_yscale("log")
    ax.set_ylabel("abs. error of normalised answers, each run")
    ax.set_title(title)
    ax.legend(fontsize=7)
