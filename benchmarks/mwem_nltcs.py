"""The MWEM paper's (arXiv:1012.4763) Figure 4 on NLTCS: error of MWEM vs epsilon for T in {20, 30, 40}, with wall time.

MWEM is fitted to all 2-way and, separately, all 3-way marginals of the bundled NLTCS data; the
synthetic distribution is scored by relative entropy to the real data (the paper's metric) and by
the mean L1 distance between normalised marginals. Two data-independent baselines run in the same
process: a product of noisy 1-way marginals, and the paper's "Barak et al." stand-in that measures
every marginal of the workload with uniform noise and fits them with multiplicative weights.
Finally the command-line default (``fastmwem synth --demo --epsilon 1 --workload marginals:3``) is
timed end to end in a subprocess.

Run: ``python benchmarks/mwem_nltcs.py [--seeds 3] [--quick]``. Writes
benchmarks/results/mwem_nltcs.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from fastmwem.datasets import load_nltcs
from fastmwem.evaluation import relative_entropy, workload_error
from fastmwem.mechanisms import Laplace
from fastmwem.release import MWState, mwem
from fastmwem.workloads import Marginals

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def product_of_one_way(data, epsilon, rng):
    """Independent attributes from noisy 1-way marginals (all measured at once: L1 sens. d)."""
    w = Marginals.all_kway(data.domain, 1)
    noisy = Laplace(epsilon=epsilon, sensitivity=float(w.n_groups)).release(
        w.answer(data.histogram()), rng=rng)
    dist = np.ones(1)
    for g in range(w.n_groups):
        m = np.clip(noisy[w.group_queries(g)], 1e-9, None)
        dist = np.multiply.outer(dist, m / m.sum())
    return dist.reshape(-1)


def measure_everything(data, workload, epsilon, rng, passes=50):
    """Every marginal of the workload measured with equal noise, then fitted by MW passes."""
    hist = data.histogram()
    noisy = Laplace(epsilon=epsilon, sensitivity=float(workload.n_groups)).release(
        workload.answer(hist), rng=rng)
    total = float(noisy.sum() / workload.n_groups)  # each marginal sums to n; no extra budget
    state = MWState.uniform(data.domain, max(total, 1.0))
    for _ in range(passes):
        for g in range(workload.n_groups):
            state.update_group(workload, g, noisy[workload.group_queries(g)])
    return state.histogram


def score(true_hist, synthetic, w2, w3):
    return {
        "relative_entropy": relative_entropy(true_hist, synthetic),
        "mean_l1_2way": workload_error(true_hist, synthetic, w2)["mean_group_l1"],
        "mean_l1_3way": workload_error(true_hist, synthetic, w3)["mean_group_l1"],
    }


def cli_default(seeds):
    """The command-line default on the bundled data, end to end in a fresh interpreter."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            out, report = os.path.join(tmp, "syn.csv"), os.path.join(tmp, "report.json")
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "fastmwem", "synth", "--demo", "--epsilon", "1",
                 "--workload", "marginals:3", "--out", out, "--report", report,
                 "--evaluate", "--seed", str(seed), "--no-progress"],
                check=True, capture_output=True,
            )
            seconds = time.perf_counter() - started
            with open(report, encoding="utf-8") as fh:
                evaluation = json.load(fh)["evaluation"]
            runs.append({"seed": seed, "seconds": seconds,
                         "mean_l1_3way": evaluation["mean_group_l1"]})
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer settings (a smoke run)")
    args = parser.parse_args()

    data = load_nltcs()
    true_hist = data.histogram()
    w2, w3 = Marginals.all_kway(data.domain, 2), Marginals.all_kway(data.domain, 3)
    epsilons = [0.05, 0.1, 0.25, 0.5, 1.0]
    rounds_list = [20, 30, 40]
    if args.quick:
        epsilons, rounds_list = [0.1, 1.0], [20]

    rows = []
    for name, workload in (("marginals:2", w2), ("marginals:3", w3)):
        for eps in epsilons:
            for rounds in rounds_list:
                for seed in range(args.seeds):
                    started = time.perf_counter()
                    result = mwem(data, workload, epsilon=eps, rounds=rounds, rng=seed)
                    seconds = time.perf_counter() - started
                    rows.append({"method": "mwem", "workload": name, "epsilon": eps,
                                 "rounds": rounds, "seed": seed, "seconds": seconds,
                                 **score(true_hist, result.histogram, w2, w3)})
                    print(json.dumps(rows[-1]), flush=True)
            for seed in range(args.seeds):
                rng = np.random.default_rng(1000 + seed)
                started = time.perf_counter()
                fitted = measure_everything(data, workload, eps, rng)
                rows.append({"method": "measure-all+MW", "workload": name, "epsilon": eps,
                             "rounds": None, "seed": seed,
                             "seconds": time.perf_counter() - started,
                             **score(true_hist, fitted, w2, w3)})
                print(json.dumps(rows[-1]), flush=True)
    for eps in epsilons:
        for seed in range(args.seeds):
            rng = np.random.default_rng(2000 + seed)
            started = time.perf_counter()
            dist = product_of_one_way(data, eps, rng)
            rows.append({"method": "product-of-1-way", "workload": "marginals:1",
                         "epsilon": eps, "rounds": None, "seed": seed,
                         "seconds": time.perf_counter() - started,
                         **score(true_hist, dist * len(data), w2, w3)})

    cli = cli_default(args.seeds)
    summary = summarise(rows)
    payload = {
        "benchmark": "mwem_nltcs (the MWEM paper's (arXiv:1012.4763) Figure 4)",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "seeds": args.seeds,
        "rows": rows,
        "summary": summary,
        "cli_default": {"command": "fastmwem synth --demo --epsilon 1 --workload marginals:3",
                        "runs": cli,
                        "mean_seconds": float(np.mean([r["seconds"] for r in cli])),
                        "mean_l1_3way": float(np.mean([r["mean_l1_3way"] for r in cli]))},
    }
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "mwem_nltcs.json"), "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=1)
    plot(summary, epsilons, rounds_list)
    print(json.dumps(payload["cli_default"], indent=1))


def summarise(rows):
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["method"], r["workload"], r["epsilon"], r["rounds"]), []).append(r)
    out = []
    for (method, workload, eps, rounds), rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        entry = {"method": method, "workload": workload, "epsilon": eps, "rounds": rounds}
        for key in ("relative_entropy", "mean_l1_2way", "mean_l1_3way", "seconds"):
            values = np.array([r[key] for r in rs], dtype=float)
            entry[key] = float(values.mean())
            entry[key + "_sd"] = float(values.std())
        out.append(entry)
    return out


def plot(summary, epsilons, rounds_list):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("marginals:2", "relative_entropy"), ("marginals:2", "mean_l1_2way"),
              ("marginals:3", "relative_entropy"), ("marginals:3", "mean_l1_3way")]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.2))
    for ax, (workload, metric) in zip(axes, panels):
        for rounds in rounds_list:
            pts = [s for s in summary if s["method"] == "mwem" and s["workload"] == workload
                   and s["rounds"] == rounds]
            pts.sort(key=lambda s: s["epsilon"])
            x = [s["epsilon"] for s in pts]
            y = np.array([s[metric] for s in pts])
            sd = np.array([s[metric + "_sd"] for s in pts])
            ax.plot(x, y, marker="o", label=f"MWEM T={rounds}")
            ax.fill_between(x, y - sd, y + sd, alpha=0.15)
        for method in ("measure-all+MW", "product-of-1-way"):
            wl = workload if method == "measure-all+MW" else "marginals:1"
            pts = sorted((s for s in summary if s["method"] == method and s["workload"] == wl),
                         key=lambda s: s["epsilon"])
            ax.plot([s["epsilon"] for s in pts], [s[metric] for s in pts], ls="--", marker="x",
                    label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epsilon")
        ax.set_title(f"NLTCS, fitted to {workload}")
        ax.set_ylabel(metric.replace("_", " "))
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "mwem_nltcs.png"), dpi=110)


if __name__ == "__main__":
    main()
