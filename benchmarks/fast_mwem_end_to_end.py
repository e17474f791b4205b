"""Fast-MWEM end to end: ``mwem(selection="lazy")`` vs ``mwem(selection="exponential")``.

The end-to-end goal: over ``m = 10^6`` random counting queries
(:class:`~fastmwem.workloads.RandomCountingQueries`) on ``|X| = 256`` cells (8 binary
attributes), ``T = 100`` rounds, Fast-MWEM should be at least 10x faster than today's MWEM on the
same run, with the same error within noise.

The data: ``n`` records drawn from a Dirichlet-multinomial (cell weights ~ Dirichlet(0.5), then
``n`` iid cells), a fresh draw per seed; the workload is drawn once (public). Both methods run
the library call as a user would (``epsilon = 1``, single-query rounds, the default reuse
passes, a noisy record count), differing only in ``selection``; the lazy one uses the default
oracle, the bit-packed exact index built straight from the packed queries (numba, all cores).
The generator is the release default, ChaCha20 (keyed from the seed here so runs repeat;
``--rng pcg64`` for numpy's faster PCG64, which makes the classic round's ``m`` Gumbels cheaper).

Measured per run: the wall time of the whole ``mwem()`` call (the lazy run includes building its
index), the time inside the round's selection (``choose``, via a timing wrapper passed as a
``RoundSelection`` object, which the release accepts unchanged), the rest of the rounds
(measurement, MW update, reuse passes), and the max and mean absolute error over all ``m``
queries of the normalised answers. Seeds run in turn and the two methods alternate which goes
first, so machine load hits both alike; the load average is recorded. One tiny lazy run warms
numba's kernels first (their compile or cache load is reported, not counted).

Run: ``nice python benchmarks/fast_mwem_end_to_end.py [--records 10000 100000] [--seeds 3]
[--quick]``. Writes benchmarks/results/fast_mwem_end_to_end.json and .png. About 2 minutes per
seed and record count on the loaded 2-core machine (the classic run dominates).
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
    binary_domain,
    dirichlet_multinomial,
    error_scatter,
    machine,
    pyplot,
    release_generator,
    spread,
    write_json,
)

from fastmwem import mwem
from fastmwem.data import Dataset
from fastmwem.evaluation import workload_error
from fastmwem.release.selection import LazySelection, ScanSelection
from fastmwem.workloads import RandomCountingQueries


def selection_for(method: str) -> object:
    return LazySelection() if method == "lazy" else ScanSelection("exponential")


def run_once(method: str, dataset: Dataset, workload, args, seed: int, reuse: int) -> dict:
    timed = TimedSelection(selection_for(method))
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mwem(dataset, workload, epsilon=args.epsilon, rounds=args.rounds,
                      rng=release_generator(args.rng, 1000 + seed), selection=timed, progress=False,
                      reuse_passes=reuse)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    rounds_s = float(sum(r.seconds for r in result.trace))
    errors = workload_error(dataset.histogram(), result.histogram, workload)
    choose = np.asarray(timed.choose_s)
    return {
        "method": method, "seed": seed, "n": len(dataset), "reuse_passes": reuse,
        "wall_s": wall, "cpu_s": cpu,
        "setup_s": timed.check_s + timed.prepare_s, "rounds_s": rounds_s,
        "select_s": float(choose.sum()), "select_median_ms": 1e3 * float(np.median(choose)),
        "rest_of_rounds_s": rounds_s - float(choose.sum()),
        "max_abs_error": errors["max_abs_error"], "mean_abs_error": errors["mean_abs_error"],
        "distinct_selected": len(set(result.selected)),
    }


def warm_up(args) -> float:
    """One tiny lazy run: numba's compile (or cache load) is paid here, not in a timed run."""
    domain = binary_domain(8)
    started = time.perf_counter()
    small = RandomCountingQueries(domain, 50_000, rng=1)
    data = dirichlet_multinomial(domain, 100, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mwem(data, small, epsilon=1.0, rounds=2, rng=0, selection="lazy", progress=False)
    return time.perf_counter() - started


def summarise(rows: list[dict]) -> list[dict]:
    """Per configuration: mean and spread of each figure per method, the ratios (of the means
    and per seed) and the paired error differences (same data and seed, lazy minus classic)."""
    out = []
    for n, reuse in dict.fromkeys((r["n"], r["reuse_passes"]) for r in rows):
        entry: dict = {"n": n, "reuse_passes": reuse}
        mine = [r for r in rows if r["n"] == n and r["reuse_passes"] == reuse]
        for method in ("exponential", "lazy"):
            for key in ("wall_s", "cpu_s", "select_s", "rest_of_rounds_s", "setup_s",
                        "max_abs_error", "mean_abs_error"):
                entry[f"{method}_{key}_mean"], entry[f"{method}_{key}_std"] = spread(
                    [r[key] for r in mine if r["method"] == method])
        pairs = [(e, lz) for e in mine for lz in mine if e["seed"] == lz["seed"]
                 and e["method"] == "exponential" and lz["method"] == "lazy"]
        for key in ("wall_s", "cpu_s", "select_s"):
            name = key[:-2]
            entry[f"{name}_ratio_per_seed"] = [e[key] / lz[key] for e, lz in pairs]
            entry[f"{name}_ratio"] = (entry[f"exponential_{key}_mean"]
                                      / entry[f"lazy_{key}_mean"])
        for key in ("max_abs_error", "mean_abs_error"):
            entry[f"{key}_diff_mean"], entry[f"{key}_diff_std"] = spread(
                [lz[key] - e[key] for e, lz in pairs])
        for method in ("exponential", "lazy"):
            entry[f"{method}_select_share"] = (entry[f"{method}_select_s_mean"]
                                               / entry[f"{method}_wall_s_mean"])
        out.append(entry)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=["10000:20", "100000:20", "100000:0"],
                        help="runs as n:reuse_passes (records and MWEM's reuse passes)")
    parser.add_argument("--queries", type=float, default=1e6)
    parser.add_argument("--bits", type=int, default=8, help="binary attributes (|X| = 2**bits)")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rng", choices=["chacha", "pcg64"], default="chacha")
    parser.add_argument("--same-data", action="store_true",
                        help="one dataset for every seed (only the generator varies): the "
                             "run-to-run noise of the error on fixed data")
    parser.add_argument("--quick", action="store_true",
                        help="m = 1e5, T = 30, n = 1e4 (reuse 20), 2 seeds")
    parser.add_argument("--output", default="fast_mwem_end_to_end")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.rounds, args.configs, args.seeds = 1e5, 30, ["10000:20"], 2
    configs = [tuple(int(x) for x in c.split(":")) for c in args.configs]
    load_before = os.getloadavg()
    warm = warm_up(args)
    domain = binary_domain(args.bits)
    started = time.perf_counter()
    workload = RandomCountingQueries(domain, int(args.queries), rng=12345)
    workload_s = time.perf_counter() - started
    print(f"warm-up {warm:.1f} s; workload of {workload.n_queries} queries over {domain.size} "
          f"cells drawn in {workload_s:.1f} s", flush=True)
    rows = []
    for n, reuse in configs:
        for seed in range(args.seeds):
            dataset = dirichlet_multinomial(domain, n, 0 if args.same_data else seed,
                                            args.alpha)
            order = ("exponential", "lazy") if seed % 2 == 0 else ("lazy", "exponential")
            for method in order:
                row = run_once(method, dataset, workload, args, seed, reuse)
                row["loadavg"] = os.getloadavg()[0]
                rows.append(row)
                print(f"n={n:6d} reuse={reuse:2d} seed={seed} {method:11s} wall "
                      f"{row['wall_s']:6.1f} s  cpu {row['cpu_s']:6.1f} s  select "
                      f"{row['select_s']:6.1f} s (median {row['select_median_ms']:6.1f} ms)  "
                      f"rest {row['rest_of_rounds_s']:5.1f} s  setup {row['setup_s']:4.1f} s  "
                      f"max err {row['max_abs_error']:.4f}  mean err {row['mean_abs_error']:.5f}"
                      f"  load {row['loadavg']:.1f}", flush=True)
    summary = summarise(rows)
    for e in summary:
        print(f"n={e['n']} reuse={e['reuse_passes']}: wall ratio {e['wall_ratio']:.1f}x "
              f"(per seed {', '.join(f'{r:.1f}' for r in e['wall_ratio_per_seed'])}), cpu "
              f"ratio {e['cpu_ratio']:.1f}x, selection-only ratio {e['select_ratio']:.1f}x; "
              f"selection share of wall time: exponential {e['exponential_select_share']:.0%}, "
              f"lazy {e['lazy_select_share']:.0%}; max error {e['exponential_max_abs_error_mean']:.4f}"
              f" vs {e['lazy_max_abs_error_mean']:.4f} (paired diff "
              f"{e['max_abs_error_diff_mean']:+.4f} +- {e['max_abs_error_diff_std']:.4f}), mean "
              f"error {e['exponential_mean_abs_error_mean']:.5f} vs "
              f"{e['lazy_mean_abs_error_mean']:.5f} (paired diff "
              f"{e['mean_abs_error_diff_mean']:+.5f} +- {e['mean_abs_error_diff_std']:.5f})",
              flush=True)
    meta = {**machine(load_before), "warm_up_s": warm, "workload_draw_s": workload_s,
            "cells": domain.size, "args": vars(args),
            "note": "wall_s and cpu_s are the whole mwem() call; the lazy run includes its "
                    "index build (setup_s). Reduced sizes only with --quick."}
    stem = write_json(args.output, {"meta": meta, "summary": summary, "runs": rows})
    plot(rows, summary, stem + ".png", args)



def plot(rows: list[dict], summary: list[dict], path: str, args) -> None:
    plt = pyplot()
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(13, 4.8))
    labels = [f"n={e['n']:,}\nreuse {e['reuse_passes']}" for e in summary]
    x = np.arange(len(summary))
    for offset, method in ((-0.2, "exponential"), (0.2, "lazy")):
        sel = [e[f"{method}_select_s_mean"] for e in summary]
        rest = [e[f"{method}_wall_s_mean"] - e[f"{method}_select_s_mean"] for e in summary]
        ax_t.bar(x + offset, sel, 0.38, color=COLORS[method], label=f"{method}: selection")
        ax_t.bar(x + offset, rest, 0.38, bottom=sel, color=COLORS[method], alpha=0.35,
                 label=f"{method}: set-up, measure, MW update, reuse")
    for i, e in enumerate(summary):
        ax_t.annotate(f"{e['wall_ratio']:.1f}x wall\n{e['select_ratio']:.1f}x selection",
                      (i + 0.2, e["lazy_wall_s_mean"]), textcoords="offset points",
                      xytext=(0, 4), ha="center", fontsize=8)
    ax_t.set_xticks(x, labels)
    ax_t.set_ylabel("seconds per mwem() run (mean over seeds)")
    ax_t.set_title(f"m = {int(args.queries):,} random counting queries, |X| = "
                   f"{2 ** args.bits}, T = {args.rounds}")
    ax_t.legend(fontsize=7)
    error_scatter(ax_e, [(i + offset, method, [
        r for r in rows if (r["n"], r["reuse_passes"], r["method"])
        == (e["n"], e["reuse_passes"], method)])
        for i, e in enumerate(summary) for offset, method in ((-0.15, "exponential"),
                                                            (0.15, "lazy"))],
        "error over all m queries (classic left, lazy right)")
    ax_e.set_xticks(x, labels)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
