"""Dense histogram or junction tree: which model a default run should keep, judged on held-out tables.

A domain small enough for a dense histogram can still be modelled by a junction tree, and a dense
model can anneal (the defaults' adaptive rounds) or keep fixed rounds. Three configurations of
:func:`fastmwem.release.mwem_with_defaults` are compared (``CONFIGS``): the dense model as the
defaults ran it before the zCDP default became a junction tree (``model="dense"``), the
junction tree (``model="junction-tree"``), and a dense model without annealing fitted by the
weighted final fit (``rounds="fixed"``, ``estimator="final-fit"``). Each run is scored as ``accuracy_suite.py`` scores one (mean L1
between normalised marginals over all 2-way and all 3-way marginals).

**Fitted without the scored tables.** Any choice is made on *derived* tables: column subsets of
the suite's tables that are too large for a dense model themselves (titanic, mroz, digits,
bundesliga, diamonds, adult, salary), each small enough for one (``DERIVED``; 38,400 to 1.8
million cells). Those full tables always get a junction tree, so a rule for dense-sized domains
never changes their runs. NLTCS and msq, the two suite tables with a dense-sized domain, are held
out (``HELD_OUT``). A configuration's score is its mean, over tables, epsilons, privacy
definitions and both orders, of ``log(its error / the best configuration's)`` (errors averaged
over seeds first); the one with the least score on the derived tables is the choice, and its
score on NLTCS and msq the held-out figure.

Run: ``nice -n 10 python benchmarks/model_choice.py [--privacy zcdp] [--configs dense]
[--report-only]``. Results (``results/model_choice.json``, cached run by run; two processes may
share the file) and a figure (``results/model_choice.png``: each configuration's 3-way error over
the dense default's, by records per cell).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
from collections import defaultdict
from typing import cast

import numpy as np
from _aim_common import RESULTS, machine, write_json_atomic
from accuracy_suite import load, run_once

from fastmwem.data import Dataset, Domain

OUT = os.path.join(RESULTS, "model_choice.json")
#: The configurations compared (options of ``mwem_with_defaults``), by name.
CONFIGS: dict[str, dict[str, object]] = {
    "dense": {"model": "dense"},
    "junction-tree": {"model": "junction-tree"},
    # the dense model without annealing, fitted by the weighted final fit (as a junction tree)
    "dense-fixed-fit": {"model": "dense", "rounds": "fixed", "estimator": "final-fit"},
}
MODELS = tuple(CONFIGS)
#: The derived tables the rule is fitted on: (name, suite table, columns).
DERIVED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("digits-16", "digits", tuple(f"p{r}{c}" for r in (2, 3, 4, 5) for c in (2, 3, 4, 5))),
    ("digits-20", "digits", tuple(f"p{r}{c}" for r in (2, 3, 4, 5) for c in (2, 3, 4, 5, 6))),
    ("mroz-8", "mroz", ("work", "child6", "child618", "agew", "educw", "educwm", "educwf",
                        "city")),
    ("mroz-7", "mroz", ("hoursw", "hearnw", "wagew", "hoursh", "ageh", "wageh", "income")),
    ("titanic-7", "titanic", ("Pclass", "Sex", "SibSp", "Parch", "Cabin", "Embarked",
                              "Survived")),
    ("bundesliga-4", "bundesliga", ("HomeGoals", "AwayGoals", "Round", "Year")),
    ("diamonds-6", "diamonds", ("carat", "cut", "color", "clarity", "depth", "price")),
    ("diamonds-5", "diamonds", ("carat", "cut", "color", "clarity", "price")),
    ("adult-8", "adult", ("workclass", "education-num", "marital-status", "occupation",
                          "relationship", "race", "sex", "income>50K")),
    ("salary-5", "salary", ("pay-rate", "system", "regular-earnings", "overtime-earning",
                            "ytd-gross")),
)
#: The suite's tables with a dense-sized domain: scored, never fitted on.
HELD_OUT = ("nltcs", "msq")
ORDERS = ("mean_l1_2way", "mean_l1_3way")


def table(name: str) -> Dataset:
    """A derived table (its suite table's records on some columns) or a held-out suite table."""
    for derived, base, columns in DERIVED:
        if derived == name:
            data = load(base)
            index = [data.domain.attributes.index(c) for c in columns]
            domain = Domain(list(columns), [data.domain.shape[i] for i in index])
            return Dataset(np.ascontiguousarray(data.records[:, index]), domain)
    return load(name)


def records_per_cell(data: Dataset) -> float:
    return len(data.records) / float(np.prod(data.domain.shape, dtype=np.float64))


def read(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return list(json.load(fh)["runs"])


def save(path: str, run: dict) -> None:
    """Append ``run`` to ``path`` under a lock (another process may be writing it too)."""
    with open(path + ".lock", "w", encoding="ascii") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runs = read(path) + [run]
        write_json_atomic(path, {
            "benchmark": "model_choice: dense histogram or junction tree, by records per cell",
            "machine": machine(), "runs": runs})


def mean_errors(runs: list[dict]) -> dict[tuple[str, str, float, str], dict[str, float]]:
    """Seed-averaged errors by (table, privacy, epsilon, model)."""
    found: dict[tuple[str, str, float, str], list[dict]] = defaultdict(list)
    for r in runs:
        if r["status"] == "ok":
            found[(r["table"], r["privacy"], r["epsilon"], r["model"])].append(r)
    return {key: {o: float(np.mean([r[o] for r in rs])) for o in ORDERS + ("cpu_seconds",)}
            for key, rs in found.items()}


def regret(errors: dict, names: list[str], config: str, privacy: str) -> float:
    """Mean log ratio of ``config``'s error to the best configuration's under ``privacy``, over
    ``names`` (their epsilons and both orders), where every configuration ran."""
    logs = []
    for (name, definition, eps, model), e in errors.items():
        if name not in names or model != config or definition != privacy:
            continue
        others = [errors.get((name, privacy, eps, m)) for m in MODELS]
        if any(o is None for o in others):
            continue
        logs += [math.log(e[o] / min(x[o] for x in others if x is not None)) for o in ORDERS]
    return float(np.mean(logs)) if logs else math.nan


#: Public or released features a rule may split on: the model is ``a`` when the feature is
#: at least the threshold, else ``b``.
FEATURES = {"records / cells": lambda n, c: n / c, "1 / records": lambda n, c: 1.0 / n,
            "1 / cells": lambda n, c: 1.0 / c}


def rules(errors: dict, privacy: str, names: list[str]) -> list[tuple[float, str]]:
    """Every split rule of one feature between two configurations, by its regret on ``names``
    (a rule's errors are the picked configuration's; the regret is against the best of all)."""
    sizes = {n: (float(len(table(n).records)),
                 float(np.prod(table(n).domain.shape, dtype=np.float64))) for n in names}
    found = []
    for feature, f in FEATURES.items():
        values = sorted({f(*sizes[n]) for n in names})
        cuts = [math.sqrt(a * b) for a, b in zip(values, values[1:])]
        for a in MODELS:
            for b in MODELS:
                if a == b:
                    continue
                for t in cuts:
                    logs = []
                    for n in names:
                        pick = a if f(*sizes[n]) >= t else b
                        logs.append(regret(errors, [n], pick, privacy))
                    kept = [x for x in logs if not math.isnan(x)]
                    found.append((float(np.mean(kept)) if kept else math.nan,
                                  f"{a} if {feature} >= {t:.4g} else {b}"))
    return sorted(found)


def report(runs: list[dict], out_png: str | None) -> dict:
    errors = mean_errors(runs)
    derived = [d[0] for d in DERIVED]
    scores = {p: {m: {"derived": regret(errors, derived, m, p),
                      "held_out": regret(errors, list(HELD_OUT), m, p)} for m in MODELS}
              for p in ("pure", "zcdp")}
    chosen = {p: min(MODELS, key=lambda m: scores[p][m]["derived"]) for p in scores}
    for p, by_config in scores.items():
        for m, score in by_config.items():
            print(f"{p:>4} {m:>16}: regret on the derived tables {score['derived']:.4f}, held "
                  f"out (nltcs, msq) {score['held_out']:.4f}")
        print(f"{p}: chosen on the derived tables: {chosen[p]}")
        for score, rule in rules(errors, p, derived)[:3]:
            print(f"{p}: split rule {rule}: regret on the derived tables {score:.4f}")
    rows = []
    for name in derived + list(HELD_OUT):
        data = table(name)
        for privacy in ("pure", "zcdp"):
            for eps in sorted({k[2] for k in errors if k[0] == name}):
                here = {m: errors.get((name, privacy, eps, m)) for m in MODELS}
                if any(v is None for v in here.values()):
                    continue
                base = cast(dict[str, float], here["dense"])
                row = {"table": name, "held_out": name in HELD_OUT, "privacy": privacy,
                       "epsilon": eps, "records_per_cell": records_per_cell(data),
                       "cells": float(np.prod(data.domain.shape, dtype=np.float64)),
                       **{f"{m}_{o}": v[o] for m, v in here.items() if v for o in ORDERS},
                       **{f"{m}_cpu_seconds": v["cpu_seconds"] for m, v in here.items() if v}}
                rows.append(row)
                ratios = "  ".join(f"{m} {v['mean_l1_3way'] / base['mean_l1_3way']:.2f} "
                                   f"({v['cpu_seconds']:.1f} s)" for m, v in here.items() if v)
                print(f"{name:>13} {'held out' if row['held_out'] else 'derived':>8} {privacy:>4} "
                      f"{eps:>4}  3-way error / dense: {ratios}")
    summary = {"scores": scores, "chosen": chosen, "rows": rows}
    if out_png:
        plot(rows, out_png)
    return summary


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, privacy in zip(axes, ("pure", "zcdp")):
        for config, colour in (("junction-tree", "tab:blue"), ("dense-fixed-fit", "tab:red")):
            for held, marker in ((False, "o"), (True, "*")):
                here = [r for r in rows if r["privacy"] == privacy and r["held_out"] == held]
                ax.scatter([r["records_per_cell"] for r in here],
                           [r[f"{config}_mean_l1_3way"] / r["dense_mean_l1_3way"] for r in here],
                           color=colour, marker=marker, s=90 if held else 25,
                           label=f"{config}{' (held out: nltcs, msq)' if held else ''}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("records / cells")
        ax.set_title(f"{privacy}: 3-way error over the dense defaults'")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("error ratio (< 1: better than the dense defaults)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=[d[0] for d in DERIVED] + list(HELD_OUT))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--privacy", nargs="+", choices=["pure", "zcdp"], default=["pure", "zcdp"])
    parser.add_argument("--configs", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    if not args.report_only:
        done = {(r["table"], r["privacy"], r["epsilon"], r["seed"], r["model"])
                for r in read(args.out)}
        run_once(table("titanic-7"), "zcdp", 1.0, 0, {})  # warm-up: compile the kernels
        for name in args.tables:
            data = table(name)
            for privacy in args.privacy:
                for eps in args.epsilons:
                    for seed in args.seeds:
                        for model in args.configs:
                            if (name, privacy, eps, seed, model) in done:
                                continue
                            run = {"table": name, "privacy": privacy, "epsilon": eps,
                                   "seed": seed, "model": model,
                                   "records": len(data.records),
                                   "cells": float(np.prod(data.domain.shape, dtype=np.float64)),
                                   **run_once(data, privacy, eps, seed, dict(CONFIGS[model]))}
                            save(args.out, run)
                            print(json.dumps({k: v for k, v in run.items()
                                              if k != "error"}), flush=True)
    summary = report(read(args.out), os.path.splitext(args.out)[0] + ".png")
    with open(args.out, encoding="utf-8") as fh:
        payload = json.load(fh)
    payload["summary"] = summary
    write_json_atomic(args.out, payload)


if __name__ == "__main__":
    main()
