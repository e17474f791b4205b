"""Time ``answer`` (all queries at once) and ``answer_transpose`` of every workload family.

MWEM answers its whole workload on the synthetic histogram every round, so ``answer`` is on the
critical path. Each workload is timed on domains of 2^16 and 2^20 cells with a few thousand
queries where the family allows it (the best of ``--repeats`` runs; single process, numpy's
default BLAS threads). Correctness is spot-checked against ``row`` for a few queries.

Run: ``python benchmarks/workloads_answer.py [--repeats 3] [--quick]``. Writes
benchmarks/results/workloads_answer.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from fastmwem.data.domain import Domain
from fastmwem.workloads import (
    LinearWorkload,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def binary(bits: int) -> Domain:
    return Domain([f"b{i}" for i in range(bits)], [2] * bits)


def sparse_rows(n: int, cells: int, per_row: int, rng: np.random.Generator) -> sp.csr_array:
    """``n`` rows with ``per_row`` random columns (repeats summed) and normal values."""
    cols = rng.integers(0, cells, size=n * per_row)
    rows = np.repeat(np.arange(n), per_row)
    return sp.csr_array((rng.normal(size=n * per_row), (rows, cols)), shape=(n, cells))


def cases(bits: int, quick: bool) -> list[tuple[str, Callable[[], LinearWorkload]]]:
    """(name, builder) for a domain of 2^bits cells."""
    side = 1 << (bits // 2)
    n = 1000 if quick else 4000
    rng = np.random.default_rng(bits)
    out: list[tuple[str, Callable[[], LinearWorkload]]] = [
        ("marginals all 3-way (binary)", lambda: Marginals.all_kway(binary(bits), 3)),
        ("ranges 1-D (one attribute)",
         lambda: RangeQueries.random(Domain(["x"], [1 << bits]), "x", n, rng=1)),
        ("ranges 2-D boxes",
         lambda: RangeQueries.random(Domain(["x", "y"], [side, side]), ["x", "y"], n, rng=2)),
        ("ranges boxes over all binary attributes",
         lambda: RangeQueries.random(binary(bits), binary(bits).attributes, n, rng=3)),
        ("parities <= 3-way", lambda: Parities.all_kway(binary(bits), 3)),
        ("parities <= 4-way", lambda: Parities.all_kway(binary(bits), 4)),
        ("matrix sparse (64 nonzeros per row)",
         lambda: MatrixWorkload(binary(bits), sparse_rows(n, 1 << bits, 64, rng))),
        ("random counting (density 0.5)",
         lambda: RandomCountingQueries(binary(bits), n, rng=5)),
    ]
    if bits <= 16:
        out.append(("matrix dense", lambda: MatrixWorkload(binary(bits), rng.random((1000, 1 << bits)))))
    return out


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer queries, 2^16 only")
    args = parser.parse_args()
    rows = []
    for bits in ((16,) if args.quick else (16, 20)):
        h = np.random.default_rng(0).random(1 << bits)
        for name, build in cases(bits, args.quick):
            t = time.perf_counter()
            w = build()
            built = time.perf_counter() - t
            answers = w.answer(h)
            for q in np.random.default_rng(1).choice(w.n_queries, size=3, replace=False):
                if not np.isclose(answers[q], w.row(int(q)) @ h, rtol=1e-9):
                    raise RuntimeError(f"{name}: answer of query {q} disagrees with row")
            weights = np.random.default_rng(2).normal(size=w.n_queries)
            row = {
                "workload": name,
                "cells": 1 << bits,
                "n_queries": w.n_queries,
                "n_groups": w.n_groups,
                "build_s": built,
                "answer_s": best_of(lambda w=w, h=h: w.answer(h), args.repeats),
                "answer_transpose_s": best_of(lambda w=w, x=weights: w.answer_transpose(x), args.repeats),
            }
            rows.append(row)
            print(f"2^{bits:<2} {name:42s} n={row['n_queries']:6d}  answer {row['answer_s'] * 1e3:9.2f} ms"
                  f"  transpose {row['answer_transpose_s'] * 1e3:9.2f} ms  (build {built:.2f} s)",
                  flush=True)
            del w
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
            "repeats": args.repeats, "quick": args.quick}
    with open(os.path.join(RESULTS, "workloads_answer.json"), "w", encoding="utf-8") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=1)
    plot(rows)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["workload"] for r in rows))
    sizes = sorted({r["cells"] for r in rows})
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(sizes)
    for k, cells in enumerate(sizes):
        vals = [next((r["answer_s"] * 1e3 for r in rows if r["workload"] == n and r["cells"] == cells), np.nan)
                for n in names]
        ax.barh(np.arange(len(names)) + k * width, vals, height=width, label=f"|D| = 2^{cells.bit_length() - 1}")
    ax.set_yticks(np.arange(len(names)) + width * (len(sizes) - 1) / 2, names)
    ax.set_xscale("log")
    ax.set_xlabel("answer() time, ms (log scale; best of repeats)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "workloads_answer.png"), dpi=120)


if __name__ == "__main__":
    main()
