"""Where the lazy selection does not pay: MWEM over marginals, lazy vs scan (same run otherwise).

The case ``docs/fast-mwem.md`` warns about. With ``measure="group"`` (the default for
marginals) the classic round scores each marginal by its whole L1 error (minus the cell penalty)
and samples among ``C(d, k)`` groups; the lazy round instead samples one *cell* by its absolute
error (the exponential mechanism over single queries, exactly) through the marginals' oracle,
which projects the round's vector onto every marginal: as much work as answering every marginal.
So the lazy round is exact for its own score, but neither faster nor the same selection rule.

Data: the bundled NLTCS table (21,574 records, 16 binary attributes, 65,536 cells); workload:
all 3-way marginals (560 marginals, 4,480 cells); ``epsilon = 1``, ``T = 25`` rounds (the CLI
default cap), the release-default ChaCha20 generator keyed from the seed, seeds in turn with
the methods alternating. Per run: median round time, median selection time and the mean L1
error per marginal (normalised).

Run: ``nice python benchmarks/fast_mwem_marginals.py [--seeds 3]``. Writes
benchmarks/results/fast_mwem_marginals.json and .png. About a minute.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _fast_common import TimedSelection, machine, pyplot, release_generator, spread, write_json

from fastmwem import mwem
from fastmwem.datasets import load_nltcs
from fastmwem.evaluation import workload_error
from fastmwem.release.selection import LazySelection, ScanSelection
from fastmwem.workloads import Marginals

METHODS = ("exponential", "lazy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=3, help="marginal order")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--output", default="fast_mwem_marginals")
    args = parser.parse_args()
    load_before = os.getloadavg()
    data = load_nltcs()
    workload = Marginals.all_kway(data.domain, args.k)
    hist = data.histogram()
    rows = []
    for seed in range(args.seeds):
        for method in METHODS if seed % 2 == 0 else METHODS[::-1]:
            timed = TimedSelection(LazySelection() if method == "lazy"
                                   else ScanSelection("exponential"))
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = mwem(data, workload, epsilon=args.epsilon, rounds=args.rounds,
                              rng=release_generator("chacha", 3000 + seed), selection=timed,
                              progress=False)
            errors = workload_error(hist, result.histogram, workload)
            row = {"method": method, "seed": seed, "wall_s": time.perf_counter() - started,
                   "round_median_ms": 1e3 * float(np.median([r.seconds for r in result.trace])),
                   "select_median_ms": 1e3 * float(np.median(timed.choose_s)),
                   "setup_s": timed.check_s + timed.prepare_s,
                   "mean_group_l1": errors["mean_group_l1"],
                   "max_group_l1": errors["max_group_l1"], "loadavg": os.getloadavg()[0]}
            rows.append(row)
            print(f"seed {seed} {method:11s} round {row['round_median_ms']:7.1f} ms  selection "
                  f"{row['select_median_ms']:7.1f} ms  wall {row['wall_s']:5.1f} s  mean L1 "
                  f"{row['mean_group_l1']:.4f}  max L1 {row['max_group_l1']:.4f}", flush=True)
    summary = {"marginals": workload.n_groups, "cells": workload.n_queries}
    for method in METHODS:
        for key in ("round_median_ms", "select_median_ms", "wall_s", "mean_group_l1",
                    "max_group_l1"):
            summary[f"{method}_{key}"] = spread([r[key] for r in rows if r["method"] == method])
    print(" ".join(f"{k}={v}" for k, v in summary.items()), flush=True)
    meta = {**machine(load_before), "args": vars(args), "records": len(data)}
    stem = write_json(args.output, {"meta": meta, "summary": summary, "runs": rows})
    plt = pyplot()
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(10, 4))
    for i, method in enumerate(METHODS):
        mine = [r for r in rows if r["method"] == method]
        ax_t.scatter([i] * len(mine), [r["round_median_ms"] for r in mine], label="round")
        ax_t.scatter([i + 0.1] * len(mine), [r["select_median_ms"] for r in mine], marker="x",
                     label="selection" if i == 0 else None)
        ax_e.scatter([i] * len(mine), [r["mean_group_l1"] for r in mine])
    for ax, label in ((ax_t, "median ms"), (ax_e, "mean L1 per 3-way marginal")):
        ax.set_xticks([0, 1], ["scan (group score)", "lazy (single cells)"])
        ax.set_ylabel(label)
    ax_t.set_title(f"NLTCS, all {args.k}-way marginals, T = {args.rounds}")
    ax_t.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=120)


if __name__ == "__main__":
    main()
