"""A junction tree's reuse passes: compiled sweeps clique by clique against the plain steps.

Runs the defaults (``mwem_with_defaults``) of suite tables that take a junction tree, twice in
one process, turn about: with the reuse passes as compiled sweeps of each clique's table
(``fit_clique_marginals``) and with them declined, so that each measurement's step runs as
numpy calls. The two runs must release the same synthetic data bit for bit (checked on every
answer of the workload). Reported per input: the CPU seconds of the whole run and of the reuse
passes alone for each path, and their ratios; over all inputs the median and the worst ratio.
Results: ``results/clique_passes.json`` / ``.png``.

Run: ``nice python benchmarks/clique_passes.py [--tables msq nltcs] [--epsilons 1 3]
[--privacy zcdp pure] [--seeds 0]`` (about 10 CPU-minutes with the defaults).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _aim_common import RESULTS, cpu, machine, paired_bars, write_json_atomic
from accuracy_suite import DELTA, load, order_of

from fastmwem.models import marginal_passes
from fastmwem.release import mwem_with_defaults
from fastmwem.release.mwem import rounds, run
from fastmwem.workloads import Marginals

OUT = os.path.join(RESULTS, "clique_passes.json")
TABLES = ["titanic", "mroz", "bundesliga", "nltcs", "msq", "salary", "adult", "diamonds"]



class _ReuseClock:
    """Adds up the CPU seconds spent in the reuse passes (wraps the fixed rounds' ``reuse``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.original: Callable[..., int] = run.reuse

    def __call__(self, *args: Any, **kwargs: Any) -> int:
        started = cpu()
        try:
            return self.original(*args, **kwargs)
        finally:
            self.seconds += cpu() - started


def timed(compiled: bool, data: Any, workload: Marginals, options: dict[str, Any]
          ) -> tuple[float, float, np.ndarray, str]:
    """One default run: CPU seconds of the run and of its reuse passes, answers, model."""
    clock = _ReuseClock()
    run.reuse = clock
    if not compiled:
        rounds.fit_clique_marginals = lambda *args, **kwargs: None
    try:
        started = cpu()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = mwem_with_defaults(data, workload, **options)
        seconds = cpu() - started
    finally:
        run.reuse = clock.original
        rounds.fit_clique_marginals = marginal_passes.fit_clique_marginals
    model = type(result.model).__name__ if result.model is not None else "none"
    return seconds, clock.seconds, np.asarray(result.answer(workload), dtype=np.float64), model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=TABLES)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0])
    parser.add_argument("--privacy", nargs="+", default=["zcdp", "pure"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    rows = []
    warm = load("titanic")  # compiles the sweeps outside the timings
    timed(True, warm, Marginals.all_kway(warm.domain, 2), {"epsilon": 1.0, "rng": 0})
    for table, privacy, epsilon, seed in itertools.product(args.tables, args.privacy,
                                                           args.epsilons, args.seeds):
        data = load(table)
        workload = Marginals.all_kway(data.domain, order_of(data))
        options: dict[str, Any] = {"epsilon": epsilon, "privacy": privacy, "rng": seed}
        if privacy == "zcdp":
            options["delta"] = DELTA
        # turn about: every other input runs the plain steps first, so that neither path
        # always pays the first run's one-time costs (caches, compiled specialisations)
        compiled_first = len(rows) % 2 == 0
        first = timed(compiled_first, data, workload, options)
        if first[3] != "FactoredState":
            print(f"{table:>10} {privacy} eps {epsilon:g}: {first[3]}, not a junction tree; "
                  "skipped")
            continue
        second = timed(not compiled_first, data, workload, options)
        (fast, fast_reuse, fast_answers, _), (plain, plain_reuse, plain_answers, _) = (
            (first, second) if compiled_first else (second, first))
        rows.append({"table": table, "privacy": privacy, "epsilon": epsilon, "seed": seed,
                     "compiled_cpu_seconds": fast, "plain_cpu_seconds": plain,
                     "compiled_reuse_cpu_seconds": fast_reuse,
                     "plain_reuse_cpu_seconds": plain_reuse,
                     "run_ratio": plain / max(fast, 1e-9),
                     "reuse_ratio": plain_reuse / max(fast_reuse, 1e-9),
                     "same_answers": bool(np.array_equal(fast_answers, plain_answers)),
                     "compiled_first": compiled_first})
        r = rows[-1]
        print(f"{table:>10} {privacy} eps {epsilon:g} seed {seed}: run {plain:.1f} -> {fast:.1f} "
              f"CPU-s ({r['run_ratio']:.2f}x), reuse passes {plain_reuse:.1f} -> "
              f"{fast_reuse:.1f} ({r['reuse_ratio']:.2f}x), same answers {r['same_answers']}",
              flush=True)
    summary = {key: {"median": float(np.median([r[key] for r in rows])),
                     "worst": float(min(r[key] for r in rows))}
               for key in ("run_ratio", "reuse_ratio")}
    summary["all_same_answers"] = all(r["same_answers"] for r in rows)  # type: ignore[assignment]
    print(summary)
    write_json_atomic(args.out, {"benchmark": "clique_passes: compiled vs plain reuse passes "
                                              "on a junction tree (defaults)",
                                 "machine": machine(), "rows": rows, "summary": summary})
    plot(rows, os.path.splitext(args.out)[0] + ".png")


def plot(rows: list[dict], path: str) -> None:
    paired_bars(path, [f"{r['table']}\n{r['privacy']} {r['epsilon']:g}" for r in rows],
                [("plain steps", [r["plain_cpu_seconds"] for r in rows]),
                 ("compiled sweeps per clique", [r["compiled_cpu_seconds"] for r in rows])],
                "CPU seconds (whole default run)",
                "junction tree reuse passes, same released data", width=15.0)


if __name__ == "__main__":
    sys.exit(main())
