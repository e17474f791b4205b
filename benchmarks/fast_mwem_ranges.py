"""Fast-MWEM over all ranges of |X| = 4096 cells: the exact interval oracle vs the classic scan.

All ``m = 4096 * 4097 / 2 = 8,390,656`` intervals
(:class:`~fastmwem.workloads.AllIntervals`) of one ordered attribute, ``mwem(selection="lazy")``
(the workload's own exact oracle, :class:`~fastmwem.workloads.IntervalOracle`: the ``k`` largest
subarray sums of ``v`` in ``O(|X| log |X| + k log k)``, ``k = ceil(sqrt(m)) = 2897``, searched for
``v`` and ``-v``) against ``mwem(selection="exponential")`` (every interval's answer from prefix
sums, then the exponential mechanism over all ``m``). Goal: a Fast-MWEM round under one second.

Both run the library call as a user would (``epsilon = 1``, ``T`` single-query rounds, default
reuse passes, a noisy record count, the release-default ChaCha20 generator keyed from the seed)
on ``n`` records of a Dirichlet-multinomial over the 4096 cells; seeds in turn, the two methods
alternating which goes first. Per run: the median time of a round (``RoundRecord.seconds``:
selection, measurement, update and reuse), the median time of the selection alone (``choose``,
via a timing wrapper passed as the selection object), the wall time of the whole call and the
max and mean absolute error over all ``m`` intervals of the normalised answers.

Run: ``nice python benchmarks/fast_mwem_ranges.py [--rounds 20] [--seeds 3] [--quick]``. Writes
benchmarks/results/fast_mwem_ranges.json and .png. About 3 minutes on the loaded 2-core machine
(the classic runs dominate); peak memory about 1 GB (the classic round's 8.4M answers, scores and
Gumbels).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _fast_common import (
    COLORS,
    TimedSelection,
    dirichlet_multinomial,
    error_scatter,
    machine,
    pyplot,
    release_generator,
    spread,
    write_json,
)

from fastmwem import mwem
from fastmwem.data import Domain
from fastmwem.evaluation import workload_error
from fastmwem.release.selection import LazySelection, ScanSelection
from fastmwem.workloads import AllIntervals

METHODS = ("exponential", "lazy")


def run_once(method: str, dataset, workload, args, seed: int) -> dict:
    timed = TimedSelection(LazySelection() if method == "lazy" else ScanSelection("exponential"))
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mwem(dataset, workload, epsilon=args.epsilon, rounds=args.rounds,
                      rng=release_generator(args.rng, 2000 + seed), selection=timed,
                      progress=False)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    rounds = np.array([r.seconds for r in result.trace])
    choose = np.array(timed.choose_s)
    errors = workload_error(dataset.histogram(), result.histogram, workload)
    return {"method": method, "seed": seed, "wall_s": wall, "cpu_s": cpu,
            "setup_s": timed.check_s + timed.prepare_s,
            "round_median_s": float(np.median(rounds)), "round_max_s": float(rounds.max()),
            "select_median_s": float(np.median(choose)), "select_max_s": float(choose.max()),
            "round_s": rounds.tolist(), "select_s": choose.tolist(),
            "max_abs_error": errors["max_abs_error"], "mean_abs_error": errors["mean_abs_error"],
            "loadavg": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=4096)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rng", choices=["chacha", "pcg64"], default="chacha")
    parser.add_argument("--quick", action="store_true", help="1024 cells, 10 rounds, 2 seeds")
    parser.add_argument("--output", default="fast_mwem_ranges")
    args = parser.parse_args()
    if args.quick:
        args.cells, args.rounds, args.seeds = 1024, 10, 2
    load_before = os.getloadavg()
    domain = Domain(["x"], [args.cells])
    workload = AllIntervals(domain, "x")
    rows = []
    for seed in range(args.seeds):
        dataset = dirichlet_multinomial(domain, args.records, seed)
        for method in METHODS if seed % 2 == 0 else METHODS[::-1]:
            row = run_once(method, dataset, workload, args, seed)
            rows.append(row)
            print(f"seed {seed} {method:11s} round median {row['round_median_s']:6.3f} s (max "
                  f"{row['round_max_s']:6.3f})  selection median {row['select_median_s']:6.3f} s"
                  f"  wall {row['wall_s']:6.1f} s  cpu {row['cpu_s']:6.1f} s  max err "
                  f"{row['max_abs_error']:.4f}  mean err {row['mean_abs_error']:.5f}  load "
                  f"{row['loadavg']:.1f}", flush=True)
    summary: dict = {"m": workload.n_queries, "cells": args.cells}
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        for key in ("round_median_s", "select_median_s", "wall_s", "cpu_s", "max_abs_error",
                    "mean_abs_error"):
            summary[f"{method}_{key}_mean"], summary[f"{method}_{key}_std"] = spread(
                [r[key] for r in mine])
        summary[f"{method}_round_median_all_s"] = float(np.median(
            np.concatenate([r["round_s"] for r in mine])))
    for key in ("round_median_s", "select_median_s", "wall_s", "cpu_s"):
        summary[f"{key[:-2]}_ratio"] = (summary[f"exponential_{key}_mean"]
                                       / summary[f"lazy_{key}_mean"])
    summary["lazy_round_under_1s"] = summary["lazy_round_median_all_s"] < 1.0
    print(f"m = {workload.n_queries}: round (median of all rounds) "
          f"exponential {summary['exponential_round_median_all_s']:.3f} s, lazy "
          f"{summary['lazy_round_median_all_s']:.3f} s; ratios: round "
          f"{summary['round_median_ratio']:.1f}x, selection {summary['select_median_ratio']:.1f}x,"
          f" wall {summary['wall_ratio']:.1f}x", flush=True)
    meta = {**machine(load_before), "args": vars(args),
            "note": "round_s: RoundRecord.seconds (selection, measurement, MW update, reuse "
                    "passes); select_s: the selection alone. Reduced sizes only with --quick."}
    stem = write_json(args.output, {"meta": meta, "summary": summary, "runs": rows})
    plot(rows, summary, stem + ".png")


def plot(rows: list[dict], summary: dict, path: str) -> None:
    plt = pyplot()
    fig, (ax_r, ax_e) = plt.subplots(1, 2, figsize=(12, 4.5))
    for row in rows:
        rounds = np.arange(1, len(row["round_s"]) + 1)
        first = row["seed"] == 0
        ax_r.plot(rounds, row["round_s"], color=COLORS[row["method"]], alpha=0.6,
                  label=f"{row['method']}: round" if first else None)
        ax_r.plot(rounds, row["select_s"], color=COLORS[row["method"]], alpha=0.6,
                  linestyle=":", label=f"{row['method']}: selection only" if first else None)
    ax_r.axhline(1.0, color="gray", linestyle="--", linewidth=0.8, label="goal: 1 s per round")
    ax_r.set_yscale("log")
    ax_r.set_xlabel("round")
    ax_r.set_ylabel("seconds")
    ax_r.set_title(f"all {summary['m']:,} intervals of {summary['cells']} cells "
                   f"(round {summary['round_median_ratio']:.1f}x, selection "
                   f"{summary['select_median_ratio']:.1f}x faster)", fontsize=9)
    ax_r.legend(fontsize=7)
    error_scatter(ax_e, [(i, method, [r for r in rows if r["method"] == method])
                         for i, method in enumerate(METHODS)], "error over all intervals")
    ax_e.set_xticks([0, 1], list(METHODS))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
