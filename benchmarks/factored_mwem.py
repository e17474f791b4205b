"""Factored MWEM: error vs epsilon on adult and NLTCS, time vs number of attributes.

1. Error vs epsilon (0.1 to 10): MWEM fitted to all 3-way marginals with the default options
   (25 rounds, 20 reuse passes, pure DP), scored by the mean L1 distance between normalised
   true and synthetic marginals over all 2-way and all 3-way marginals. On adult (6.4e17 cells)
   MWEM keeps a factored model by itself: the junction tree (the default) and, for comparison,
   the disjoint product of the MWEM paper's s.4 (arXiv:1012.4763; ``model="product"``). On
   NLTCS (65,536 cells) the dense histogram (the default there) and the junction tree.
   Baseline: a product of noisy 1-way marginals (all measured at once, L1 sensitivity d).
2. Time vs number of attributes: 100,000 synthetic binary records driven by four latent bits
   (so that there is structure to find), all 2-way marginals, the default options; the junction
   tree at d = 10 to 160 attributes and the dense histogram while it fits. The whole run and
   its 25 rounds are timed apart: the rest is mostly reading the data's marginals (one pass of
   the in-memory records per marginal) and the final fitting passes.
3. The command line end to end (``fastmwem synth DATA --domain DOMAIN --epsilon 1``, the default
   workload marginals:3, in a fresh interpreter) on adult, titanic, salary and adult-hd: wall
   time, and the errors of the model (by inference) and of the written records.

The data sets are read from ``--data`` (a directory with ``adult.csv``, ``adult-domain.json``
and the others, integer-coded with their domain files; default ``../shared/data`` beside the
repository). Run: ``python benchmarks/factored_mwem.py [--seeds 2] [--quick]``. Writes
benchmarks/results/factored_mwem.json and .png.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from fastmwem.data import Dataset, Domain
from fastmwem.datasets import load_nltcs
from fastmwem.mechanisms import Laplace
from fastmwem.release import mwem, mwem_with_defaults
from fastmwem.workloads import Marginals

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
DEFAULT_DATA = os.path.join(HERE, "..", "..", "shared", "data")
EPSILONS = [0.1, 0.3, 1.0, 3.0, 10.0]
CLI_DATASETS = ["adult", "titanic", "salary", "adult-hd"]


def load(data_dir: str, name: str) -> Dataset:
    domain = Domain.from_json(os.path.join(data_dir, f"{name}-domain.json"))
    return Dataset.from_csv(os.path.join(data_dir, f"{name}.csv"), domain)


class Truth:
    """The true normalised 2-way and 3-way marginals of a dataset."""

    def __init__(self, data: Dataset) -> None:
        self.domain = data.domain
        n = len(data)
        names = data.domain.attributes
        self.tables = {k: {axes: data.marginal([names[a] for a in axes]) / n
                           for axes in itertools.combinations(range(len(names)), k)}
                       for k in (2, 3)}

    def errors(self, marginal) -> dict[str, float]:
        """Mean L1 over all 2-way and 3-way marginals; ``marginal(axes)`` gives a table."""
        return {f"mean_l1_{k}way": float(np.mean([np.abs(t - marginal(axes)).sum()
                                                  for axes, t in tables.items()]))
                for k, tables in self.tables.items()}


def result_marginal(result, domain: Domain):
    if result.model is not None:
        return result.model.marginal
    joint = result.histogram.reshape(domain.shape) / result.total

    def marginal(axes):
        return joint.sum(axis=tuple(a for a in range(len(domain)) if a not in axes))

    return marginal


def records_marginal(codes: np.ndarray, domain: Domain):
    def marginal(axes):
        cells = np.ravel_multi_index(tuple(codes[:, a] for a in axes),
                                     [domain.shape[a] for a in axes])
        counts = np.bincount(cells, minlength=int(np.prod([domain.shape[a] for a in axes])))
        return counts.reshape([domain.shape[a] for a in axes]) / len(codes)

    return marginal


def product_of_one_way(data: Dataset, epsilon: float, rng: np.random.Generator):
    """Independent attributes from noisy 1-way marginals (all at once: L1 sensitivity d)."""
    names = data.domain.attributes
    tables = [data.marginal([a]) for a in names]
    noisy = Laplace(epsilon=epsilon, sensitivity=float(len(names))).release(
        np.concatenate(tables), rng=rng)
    parts = np.split(np.clip(noisy, 1e-9, None), np.cumsum([t.size for t in tables])[:-1])
    parts = [p / p.sum() for p in parts]

    def marginal(axes):
        table = np.ones(())
        for a in axes:
            table = np.multiply.outer(table, parts[a])
        return table

    return marginal


def error_vs_epsilon(name: str, data: Dataset, models: list[str], seeds: int,
                     epsilons: list[float]) -> list[dict]:
    truth = Truth(data)
    workload = Marginals.all_kway(data.domain, 3)
    rows = []
    for eps in epsilons:
        for model in models:
            for seed in range(seeds):
                started = time.perf_counter()
                result = mwem(data, workload, epsilon=eps, rounds=25, rng=seed, model=model)
                seconds = time.perf_counter() - started
                cliques = result.model.cliques if result.model is not None else None
                rows.append({"data": name, "method": f"mwem ({model})", "epsilon": eps,
                             "seed": seed, "seconds": seconds,
                             "largest_clique": None if cliques is None else max(
                                 int(np.prod([data.domain.size_of(a) for a in c]))
                                 for c in cliques),
                             **truth.errors(result_marginal(result, data.domain))})
                print(json.dumps(rows[-1]), flush=True)
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            rows.append({"data": name, "method": "product of noisy 1-way", "epsilon": eps,
                         "seed": seed, "seconds": None,
                         **truth.errors(product_of_one_way(data, eps, rng))})
    return rows


def latent_binary(n: int, d: int, rng: np.random.Generator) -> Dataset:
    """Binary records: each attribute follows one of four latent bits (p = 0.8 vs 0.2)."""
    latent = rng.random((n, 4)) < 0.3
    group = np.arange(d) % 4
    p = np.where(latent[:, group], 0.8, 0.2)
    codes = (rng.random((n, d)) < p).astype(np.int64)
    return Dataset(codes, Domain([f"x{i}" for i in range(d)], [2] * d))


def time_vs_attributes(sizes: list[int], n: int) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for d in sizes:
        data = latent_binary(n, d, rng)
        workload = Marginals.all_kway(data.domain, 2)
        models = ["junction-tree"] + (["dense"] if d <= 20 else [])
        for model in models:
            started = time.perf_counter()
            result = mwem(data, workload, epsilon=1.0, rounds=25, rng=0, model=model)
            seconds = time.perf_counter() - started
            rows.append({"attributes": d, "cells": f"2^{d}", "model": model,
                         "groups": workload.n_groups, "seconds": seconds,
                         "rounds_seconds": float(sum(r.seconds for r in result.trace)),
                         "largest_clique": (None if result.model is None else
                                            max(2 ** len(c) for c in result.model.cliques))})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def cli_runs(data_dir: str, names: list[str], seeds: int) -> list[dict]:
    """``fastmwem synth`` with default options, end to end in a fresh interpreter."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            data = load(data_dir, name)
            truth = Truth(data)
            for seed in range(seeds):
                out, report = os.path.join(tmp, "syn.csv"), os.path.join(tmp, "report.json")
                started = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "fastmwem", "synth",
                     os.path.join(data_dir, f"{name}.csv"), "--domain",
                     os.path.join(data_dir, f"{name}-domain.json"), "--epsilon", "1",
                     "--out", out, "--report", report, "--seed", str(seed), "--no-progress"],
                    check=True, capture_output=True)
                seconds = time.perf_counter() - started
                synthetic = Dataset.from_csv(out, data.domain)
                with open(report, encoding="utf-8") as fh:
                    payload = json.load(fh)
                # The model's errors: the same run again in-process (same seed, same defaults).
                result = mwem_with_defaults(data, Marginals.all_kway(data.domain, 3), epsilon=1.0,
                                      rng=seed)
                rows.append({"data": name, "seed": seed, "seconds": seconds,
                             "cells": float(data.domain.size), "records": len(data),
                             "model": payload["model"]["kind"],
                             "cliques": payload["model"].get("cliques"),
                             "model_errors": truth.errors(result_marginal(result, data.domain)),
                             "record_errors": truth.errors(records_marginal(
                                 synthetic.records, data.domain))})
                print(json.dumps({k: v for k, v in rows[-1].items() if k != "cliques"}),
                      flush=True)
    return rows


def summarise(rows: list[dict], keys: tuple[str, ...], metrics: tuple[str, ...]) -> list[dict]:
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        entry = dict(zip(keys, key))
        for m in metrics:
            values = [r[m] for r in rs if r.get(m) is not None]
            if values:
                entry[m] = float(np.mean(values))
                entry[m + "_sd"] = float(np.std(values))
        out.append(entry)
    return out


def plot(errors: list[dict], timing: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(24, 4.4))
    panels = [("adult", "mean_l1_2way"), ("adult", "mean_l1_3way"), ("nltcs", "mean_l1_2way"),
              ("nltcs", "mean_l1_3way")]
    for ax, (name, metric) in zip(axes, panels):
        for method in sorted({e["method"] for e in errors if e["data"] == name}):
            pts = sorted((e for e in errors if e["data"] == name and e["method"] == method),
                         key=lambda e: e["epsilon"])
            x = [e["epsilon"] for e in pts]
            y = np.array([e[metric] for e in pts])
            sd = np.array([e[metric + "_sd"] for e in pts])
            ax.plot(x, y, marker="o", ls="--" if "noisy" in method else "-", label=method)
            ax.fill_between(x, y - sd, y + sd, alpha=0.15)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel(metric.replace("_", " "))
        ax.set_title(f"{name}: fitted to all 3-way marginals")
        ax.legend(fontsize=7)
    ax = axes[4]
    for model in ("junction-tree", "dense"):
        pts = sorted((t for t in timing if t["model"] == model), key=lambda t: t["attributes"])
        x = [t["attributes"] for t in pts]
        ax.plot(x, [t["seconds"] for t in pts], marker="o", label=f"{model}: whole run")
        ax.plot(x, [t["rounds_seconds"] for t in pts], marker="x", ls="--",
                label=f"{model}: the 25 rounds")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("binary attributes (all 2-way marginals, 25 rounds)")
    ax.set_ylabel("seconds")
    ax.set_title("time vs number of attributes")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "factored_mwem.png"), dpi=110)


PARTS = ("epsilon", "attributes", "cli")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA, help="directory of the data sets")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="fewer settings (a smoke run)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="which parts to run; the others keep their stored results")
    args = parser.parse_args()
    if not os.path.isfile(os.path.join(args.data, "adult.csv")):
        parser.error(f"--data {args.data!r} holds no adult.csv")
    warnings.simplefilter("ignore")  # seeded runs: this is a benchmark, not a release

    epsilons = [0.1, 1.0, 10.0] if args.quick else EPSILONS
    sizes = [10, 20, 40] if args.quick else [10, 20, 40, 80, 160]
    path = os.path.join(RESULTS, "factored_mwem.json")
    payload: dict = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    payload.update({"benchmark": "factored_mwem",
                    "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                "platform": platform.platform()},
                    "seeds": args.seeds})
    if "epsilon" in args.parts:
        rows = (error_vs_epsilon("adult", load(args.data, "adult"), ["junction-tree", "product"],
                                 args.seeds, epsilons)
                + error_vs_epsilon("nltcs", load_nltcs(), ["dense", "junction-tree"],
                                   args.seeds, epsilons))
        errors = summarise(rows, ("data", "method", "epsilon"),
                           ("mean_l1_2way", "mean_l1_3way", "seconds", "largest_clique"))
        payload["error_vs_epsilon"] = {"rows": rows, "summary": errors}
    if "attributes" in args.parts:
        payload["time_vs_attributes"] = time_vs_attributes(sizes,
                                                           n=20_000 if args.quick else 100_000)
    if "cli" in args.parts:
        payload["cli_default"] = cli_runs(args.data, ["adult"] if args.quick else CLI_DATASETS,
                                          args.seeds)
    os.makedirs(RESULTS, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=1)
    os.replace(path + ".tmp", path)
    plot(payload["error_vs_epsilon"]["summary"], payload["time_vs_attributes"])
    for e in payload["error_vs_epsilon"]["summary"]:
        print(json.dumps(e))


if __name__ == "__main__":
    main()
