"""Exact top-k oracles of structured workloads vs a full scan (one Fast-MWEM selection's search).

For each workload, ``k = ceil(sqrt(m))`` and a query vector shaped like an MWEM round's
``v = p - h`` (``p`` uniform, ``h`` the normalised histogram of 10,000 records drawn from a
random Dirichlet distribution over the cells; the benchmark's own seed). Timed side by side:

- ``oracle``: ``workload.top_k_oracle().search(v, k)`` (and the batch ``[v, -v]`` the lazy
  mechanism sends for absolute scores), built once outside the timing;
- ``scan``: ``workload.answer(v)`` then ``argpartition``: the full scan a round does today;
- ``dense``: the flat-index scan, float32 keys ``Q @ v`` then ``argpartition`` (keys of the
  workload's shape, random 0/1 entries: the product's time does not depend on them). When ``Q``
  would exceed ``--dense-mb``, a block of rows is timed and the time scaled linearly to ``m``
  rows (marked ``dense_extrapolated``).

Also the branch-and-bound oracle on explicit 0/1 keys: random counting queries (no structure),
all intervals of 256 cells as explicit keys, and noisy copies of 8 patterns (structure), with
the fraction of clusters it opened.

Each time is the best of ``--repeats`` runs after one warm-up (the median is recorded too,
``*_median_s``); in each repeat the methods take turns in a rotating order. On the shared 2-core
machine other jobs preempt a niced run at random, which makes single times bimodal (2 ms or
10 ms for the same call), so the best time is the stable figure and the ratios use it (the load
average is recorded). The
oracle's top-k scores are checked against the scan's before timing.

Run: ``nice python benchmarks/workload_oracles.py [--repeats 5] [--quick]``. Writes
benchmarks/results/workload_oracles.json and .png. Peak memory stays under about 1 GB (the full
scan of 8.4M intervals holds 67 MB of answers and its partition's temporaries).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Callable

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.workloads import (
    AllIntervals,
    BranchAndBoundOracle,
    Marginals,
    Parities,
    RandomCountingQueries,
)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def binary(bits: int) -> Domain:
    return Domain([f"b{i}" for i in range(bits)], [2] * bits)


def round_vector(cells: int, rng: np.random.Generator) -> np.ndarray:
    """``p - h``: uniform synthetic minus a sampled data histogram (both sum to one)."""
    probs = rng.dirichlet(np.full(cells, 0.3))
    h = rng.multinomial(10_000, probs) / 10_000
    return np.full(cells, 1.0 / cells) - h


def scan_top_k(answers: np.ndarray, k: int) -> np.ndarray:
    top = np.argpartition(-answers, k - 1)[:k]
    return top[np.argsort(-answers[top])]


def best_times(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best and (under ``name + "_median"``) median time of each function."""
    for fn in fns.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(repeats):
        # The order rotates: BLAS worker threads still spinning after the dense product would
        # otherwise always slow down the same next method.
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
    best = {name: float(np.min(ts)) for name, ts in times.items()}
    return best | {name + "_median": float(np.median(ts)) for name, ts in times.items()}


def dense_scan(m: int, v: np.ndarray, k: int, budget_mb: float,
               rng: np.random.Generator) -> tuple[Callable[[], object], float, bool]:
    """A flat float32 scan ``Q @ v`` over ``m`` keys, or over a block of rows to scale up.

    The keys are random 0/1 floats of the workload's shape: a dense product's time does not
    depend on the entries, and building the true rows of some workloads takes minutes.
    """
    cells = v.size
    rows = int(min(m, max(1, budget_mb * 2**20 // (4 * cells))))
    keys = (rng.random((rows, cells), dtype=np.float32) < 0.5).astype(np.float32)
    v32 = v.astype(np.float32)
    kk = min(k, rows)

    def run() -> object:
        s = keys @ v32
        return np.argpartition(-s, kk - 1)[:kk]

    return run, m / rows, rows < m


def workload_case(name: str, workload, rng: np.random.Generator, repeats: int,
                  dense_mb: float) -> dict:
    m, cells = workload.n_queries, workload.domain.size
    k = math.ceil(math.sqrt(m))
    v = round_vector(cells, rng)
    t = time.perf_counter()
    oracle = workload.top_k_oracle()
    built = time.perf_counter() - t
    answers = workload.answer(v)
    scores, ids = oracle.search(v, k)
    if not np.allclose(scores[0], answers[scan_top_k(answers, k)], rtol=1e-9, atol=1e-12):
        raise RuntimeError(f"{name}: oracle top-k differs from the scan")
    if not np.allclose(answers[ids[0]], scores[0], rtol=1e-9, atol=1e-12):
        raise RuntimeError(f"{name}: oracle scores differ from answer()")
    del answers
    both = np.stack([v, -v])
    dense_run, scale, extrapolated = dense_scan(m, v, k, dense_mb, rng)
    times = best_times({
        "oracle": lambda: oracle.search(v, k),
        "oracle_pm": lambda: oracle.search(both, k),
        "scan": lambda: scan_top_k(workload.answer(v), k),
        "dense_block": dense_run,
    }, repeats)
    row = {"case": name, "m": m, "cells": cells, "k": k, "oracle": type(oracle).__name__,
           "oracle_build_s": built, "oracle_s": times["oracle"], "oracle_pm_s": times["oracle_pm"],
           "scan_s": times["scan"], "dense_s": times["dense_block"] * scale,
           "oracle_median_s": times["oracle_median"], "scan_median_s": times["scan_median"],
           "dense_median_s": times["dense_block_median"] * scale,
           "dense_extrapolated": extrapolated}
    row["scan_over_oracle"] = row["scan_s"] / row["oracle_s"]
    row["dense_over_oracle"] = row["dense_s"] / row["oracle_s"]
    return row


def branch_bound_case(name: str, keys_packed: np.ndarray, cells: int, rng: np.random.Generator,
                      repeats: int, v: np.ndarray | None = None) -> dict:
    m = keys_packed.shape[0]
    k = math.ceil(math.sqrt(m))
    v = round_vector(cells, rng) if v is None else v
    t = time.perf_counter()
    oracle = BranchAndBoundOracle.from_packed(keys_packed, cells)
    built = time.perf_counter() - t
    dense = np.unpackbits(keys_packed, axis=1, count=cells).astype(np.float32)
    v32 = v.astype(np.float32)
    truth = np.sort(dense.astype(np.float64) @ v)[::-1][:k]
    scores, _ = oracle.search(v, k)
    if not np.allclose(scores[0], truth, rtol=1e-9, atol=1e-12):
        raise RuntimeError(f"{name}: branch and bound differs from brute force")
    times = best_times({
        "oracle": lambda: oracle.search(v, k),
        "dense": lambda: np.argpartition(-(dense @ v32), k - 1)[:k],
    }, repeats)
    oracle.search(v, k)
    return {"case": name, "m": m, "cells": cells, "k": k, "oracle": "BranchAndBoundOracle",
            "oracle_build_s": built, "oracle_s": times["oracle"], "dense_s": times["dense"],
            "oracle_median_s": times["oracle_median"], "dense_median_s": times["dense_median"],
            "dense_extrapolated": False, "clusters": oracle.n_clusters,
            "clusters_opened": oracle.clusters_opened,
            "dense_over_oracle": times["dense"] / times["oracle"]}


def clustered_packed(m: int, cells: int, rng: np.random.Generator) -> np.ndarray:
    centers = rng.random((8, cells)) < 0.5
    keys = centers[rng.integers(0, 8, size=m)] ^ (rng.random((m, cells)) < 0.02)
    return np.packbits(keys, axis=1)


def interval_packed(n: int) -> np.ndarray:
    lo, hi = np.triu_indices(n)
    cells = np.arange(n)
    return np.packbits((cells >= lo[:, None]) & (cells <= hi[:, None]), axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer cases")
    parser.add_argument("--dense-mb", type=float, default=64.0,
                        help="largest float32 key block for the dense scan (default 64 MB)")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    bits = (16,) if args.quick else (16, 18, 20)
    cases: list[tuple[str, Callable[[], object]]] = [
        ("ranges: all intervals, |X| = 4096",
         lambda: AllIntervals(Domain(["x"], [1024 if args.quick else 4096]), "x")),
        *[(f"parities <= 3-way, d = {b}", lambda b=b: Parities.all_kway(binary(b), 3)) for b in bits],
        ("parities all 2^16 subsets, d = 16", lambda: Parities.all_kway(binary(16), 16)),
        ("marginals all 3-way, 16 binary attributes", lambda: Marginals.all_kway(binary(16), 3)),
        *[(f"counting m = {m:.0e}, |X| = 256",
           lambda m=m: RandomCountingQueries(binary(8), m, rng=m))
          for m in ((10**5,) if args.quick else (10**5, 3 * 10**5, 10**6))],
    ]
    rows = []
    for name, build in cases:
        workload = build()
        row = workload_case(name, workload, rng, args.repeats, args.dense_mb)
        rows.append(row)
        print(f"{name:45s} m={row['m']:>9d} k={row['k']:5d}  oracle {row['oracle_s'] * 1e3:9.2f} ms"
              f"  [v,-v] {row['oracle_pm_s'] * 1e3:9.2f} ms  scan {row['scan_s'] * 1e3:9.2f} ms"
              f"  dense{'~' if row['dense_extrapolated'] else ' '}{row['dense_s'] * 1e3:11.1f} ms"
              f"  scan/oracle {row['scan_over_oracle']:6.1f}x", flush=True)
        del workload
    n_bb = 10**4 if args.quick else 10**5
    bb_cases = [
        ("B&B: random counting keys", RandomCountingQueries(binary(8), n_bb, rng=1).packed, 256, None),
        ("B&B: noisy copies of 8 patterns", clustered_packed(n_bb, 256, rng), 256, None),
        ("B&B: all intervals of 256 cells as keys", interval_packed(256), 256, None),
    ]
    for name, packed, cells, v in bb_cases:
        row = branch_bound_case(name, packed, cells, rng, args.repeats, v)
        rows.append(row)
        print(f"{name:45s} m={row['m']:>9d} k={row['k']:5d}  oracle {row['oracle_s'] * 1e3:9.2f} ms"
              f"  dense {row['dense_s'] * 1e3:9.2f} ms  opened {row['clusters_opened']}/{row['clusters']}"
              f"  (build {row['oracle_build_s']:.2f} s)", flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
            "repeats": args.repeats, "quick": args.quick, "dense_mb": args.dense_mb,
            "loadavg": os.getloadavg()}
    with open(os.path.join(RESULTS, "workload_oracles.json"), "w", encoding="utf-8") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=1)
    plot(rows)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.5))
    y = np.arange(len(rows))
    series = [("oracle_s", "top_k_oracle().search(v, k)", "tab:green"),
              ("scan_s", "answer(v) + argpartition", "tab:orange"),
              ("dense_s", "dense float32 scan (hatched: extrapolated)", "tab:gray")]
    width = 0.27
    for s, (key, label, color) in enumerate(series):
        vals = [r.get(key, np.nan) * 1e3 for r in rows]
        bars = ax.barh(y + (s - 1) * width, vals, height=width, color=color, label=label)
        if key == "dense_s":
            for bar, r in zip(bars, rows):
                if r["dense_extrapolated"]:
                    bar.set_hatch("//")
    ax.set_yticks(y, [f"{r['case']} (m={r['m']:,})" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time per search, ms (best of repeats; k = ceil(sqrt(m)))")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "workload_oracles.png"), dpi=120)


if __name__ == "__main__":
    main()
