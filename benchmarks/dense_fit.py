"""The weighted fit on a dense state: the tree of marginals against the group-by-group path.

A fit of ``--steps`` mirror-descent steps (tolerance 0, so both paths take the same steps) from
the uniform distribution to ``k`` measured 3-way marginals of a suite table, each measured with
Gaussian noise of standard deviation ``--std`` (rounded numpy normals: a benchmark input, never a
release). Both paths run in one process, turn about, on the same measurements; the CPU seconds of
each, their ratio per input (median and worst over tables, ``k`` and seeds), and the largest
relative difference of the fitted histograms. Results: ``results/dense_fit.json`` / ``.png``.

Run: ``nice python benchmarks/dense_fit.py [--tables msq nltcs] [--k 12 40] [--seeds 0 1 2]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys

import numpy as np
from _aim_common import RESULTS, cpu, machine, paired_bars, write_json_atomic
from accuracy_suite import load

from fastmwem.models import fit as fit_module
from fastmwem.models.fit import FitMeasurement, fit
from fastmwem.models.state import MWState
from fastmwem.workloads import Marginals

OUT = os.path.join(RESULTS, "dense_fit.json")



def measurements(table: str, k: int, std: float, seed: int
                 ) -> tuple[Marginals, list[FitMeasurement], float, MWState]:
    """``k`` 3-way marginals of the table (chosen by ``seed``), noisy, and a uniform state."""
    data = load(table)
    rng = np.random.default_rng(seed)
    triples = list(itertools.combinations(range(len(data.domain)), 3))
    chosen = sorted(rng.choice(len(triples), size=min(k, len(triples)), replace=False))
    attributes = list(data.domain)
    names = [tuple(attributes[a] for a in triples[i]) for i in chosen]
    workload = Marginals(data.domain, names)
    histogram = data.histogram()
    measured = []
    for g in range(workload.n_groups):
        true = workload.answer_group(histogram, g)
        noisy = np.rint(true + rng.normal(0.0, std, size=true.shape))
        measured.append(FitMeasurement.of_group(workload, g, noisy, std))
    return workload, measured, float(len(data)), MWState.uniform(data.domain, float(len(data)))


def timed(trie: bool, workload: Marginals, measured: list[FitMeasurement], total: float,
          domain: object, steps: int) -> tuple[float, np.ndarray, int]:
    fit_module._MARGINAL_TRIE = trie
    state = MWState.uniform(domain, total)  # type: ignore[arg-type]
    started = cpu()
    report = fit(state, workload, measured, tolerance=0.0, max_iterations=steps)
    return cpu() - started, state.histogram, report.iterations


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=["msq", "nltcs"])
    parser.add_argument("--k", nargs="+", type=int, default=[12, 40])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--std", type=float, default=20.0)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    rows = []
    for table, k, seed in itertools.product(args.tables, args.k, args.seeds):
        workload, measured, total, state = measurements(table, k, args.std, seed)
        timed(True, workload, measured, total, state.domain, 2)  # compiles outside the timing
        tree_cpu, tree_h, tree_steps = timed(True, workload, measured, total, state.domain,
                                             args.steps)
        group_cpu, group_h, group_steps = timed(False, workload, measured, total, state.domain,
                                                args.steps)
        scale = np.maximum(np.abs(group_h), 1e-300)
        rows.append({"table": table, "k": k, "seed": seed, "cells": int(state.domain.size),
                     "tree_cpu_seconds": tree_cpu, "group_cpu_seconds": group_cpu,
                     "ratio": group_cpu / max(tree_cpu, 1e-9), "steps": [tree_steps, group_steps],
                     "max_relative_difference": float(np.max(np.abs(tree_h - group_h) / scale))})
        print(f"{table:>6} k={k:<3} seed {seed}: tree {tree_cpu:.2f} s, groups {group_cpu:.2f} s, "
              f"{rows[-1]['ratio']:.1f}x, steps {tree_steps}/{group_steps}, "
              f"max rel diff {rows[-1]['max_relative_difference']:.1e}", flush=True)
    fit_module._MARGINAL_TRIE = True
    ratios = [r["ratio"] for r in rows]
    summary = {"median_ratio": float(np.median(ratios)), "worst_ratio": float(min(ratios)),
               "max_relative_difference": max(r["max_relative_difference"] for r in rows)}
    print(summary)
    write_json_atomic(args.out, {"benchmark": "dense_fit: tree of marginals vs group by group",
                                 "machine": machine(), "steps": args.steps, "std": args.std,
                                 "rows": rows, "summary": summary})
    plot(rows, os.path.splitext(args.out)[0] + ".png")


def plot(rows: list[dict], path: str) -> None:
    paired_bars(path, [f"{r['table']}\nk={r['k']} s{r['seed']}" for r in rows],
                [("group by group", [r["group_cpu_seconds"] for r in rows]),
                 ("tree of marginals", [r["tree_cpu_seconds"] for r in rows])],
                "CPU seconds", "dense weighted fit, same steps")


if __name__ == "__main__":
    sys.exit(main())
