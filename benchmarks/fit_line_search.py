"""The weighted fit's line search: when to try a doubled step, on tables kept out of the suite.

The final fit (``fastmwem.models.fit.fit``) backtracks from a trial step until the Armijo
condition holds. Doubling the step before every step makes most steps pay for a failed trial
(the acceptable step of these fits is about constant); ``_GROW_AFTER = k`` doubles it only
after ``k`` steps in a row were accepted at their first trial. The defaults run, whole, on
synthetic tables (a random Bayesian network of two parents a column, generated here: no table
of the accuracy suite, so the choice of ``k`` made on them is not scored there), under pure DP
and zCDP at epsilon 0.3, 1 and 3, for each ``k`` in turn (the order rotating between inputs).
Recorded per run: the final fit's trials, steps and loss, its CPU seconds and the run's, and
the mean L1 error of all 2-way and 3-way marginals. Reported per ``k``: the ratios to ``k = 0``
(the line search before) of the final fit's trials, CPU and loss, median and worst over the
inputs. Results: ``results/fit_line_search.json`` / ``.png``.

Run: ``nice python benchmarks/fit_line_search.py [--tables A B C] [--grow 0 1 2 3 5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _aim_common import RESULTS, cpu, machine, mean_marginal_l1, write_json_atomic

from fastmwem.data import Dataset, Domain
from fastmwem.models import fit as fit_module
from fastmwem.release import mwem_with_defaults
from fastmwem.release.mwem import rounds as rounds_module
from fastmwem.workloads import Marginals

OUT = os.path.join(RESULTS, "fit_line_search.json")

#: name: (generator seed, column sizes, records).
TABLES = {"A": (101, (2, 3, 4, 5, 2, 6, 3, 8, 2, 4), 40_000),
          "B": (202, (4,) * 9, 120_000),
          "C": (303, (2,) * 14, 20_000)}



def synthetic(seed: int, sizes: tuple[int, ...], n: int) -> Dataset:
    """Records of a random Bayesian network: each column drawn given up to two earlier ones,
    from Dirichlet(0.3) conditionals (skewed, correlated columns)."""
    rng = np.random.default_rng(seed)
    columns: list[np.ndarray] = []
    for j, size in enumerate(sizes):
        parents = rng.choice(j, size=min(2, j), replace=False) if j else []
        key = np.zeros(n, dtype=np.int64)
        for p in parents:
            key = key * sizes[p] + columns[p]
        keys = int(np.prod([sizes[p] for p in parents]))
        cdf = np.cumsum(rng.dirichlet(np.full(size, 0.3), size=keys), axis=1)
        draw = (rng.random(n)[:, None] > cdf[key]).sum(axis=1)
        columns.append(np.minimum(draw, size - 1))
    domain = Domain.from_dict({f"c{j}": size for j, size in enumerate(sizes)})
    return Dataset(np.stack(columns, axis=1), domain)


def run(data: Dataset, privacy: str, epsilon: float, grow: int) -> dict[str, Any]:
    """The defaults, whole, with the line search waiting for ``grow`` clean steps."""
    reports: list[Any] = []
    fit_cpu = [0.0]
    original: Callable[..., Any] = rounds_module.fit

    def recorded(*args: Any, **kwargs: Any) -> Any:
        started = cpu()
        report = original(*args, **kwargs)
        fit_cpu[0] += cpu() - started
        reports.append(report)
        return report

    budget: dict[str, Any] = {"delta": 1e-9} if privacy == "zcdp" else {}
    workload = Marginals.all_kway(data.domain, 3)
    saved = fit_module._GROW_AFTER
    fit_module._GROW_AFTER = grow
    rounds_module.fit = recorded  # type: ignore[assignment]
    try:
        started = cpu()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a seeded run warns that it is not private
            result = mwem_with_defaults(data, workload, rng=0, epsilon=epsilon,
                                        privacy=privacy, **budget)
        run_cpu = cpu() - started
    finally:
        rounds_module.fit = original  # type: ignore[assignment]
        fit_module._GROW_AFTER = saved
    if not reports:
        raise SystemExit(f"no weighted fit ran ({privacy}, epsilon {epsilon})")
    last = reports[-1]

    def estimate(attrs: tuple[str, ...]) -> np.ndarray:
        return result.answer(Marginals(data.domain, [attrs]))

    return {"grow_after": grow, "trials": last.trials, "steps": last.iterations,
            "loss": last.objective, "fit_cpu_seconds": fit_cpu[0], "cpu_seconds": run_cpu,
            "mean_l1_2way": mean_marginal_l1(data, estimate, 2),
            "mean_l1_3way": mean_marginal_l1(data, estimate, 3)}


def summary(runs: list[dict[str, Any]], grows: list[int]) -> list[dict[str, Any]]:
    """Per ``k``: its ratios to ``k = 0`` over the inputs, median and worst (the largest)."""
    inputs = sorted({(r["table"], r["privacy"], r["epsilon"]) for r in runs})
    by = {(r["table"], r["privacy"], r["epsilon"], r["grow_after"]): r for r in runs}
    rows = []
    for k in grows:
        row: dict[str, Any] = {"grow_after": k}
        for metric in ("trials", "fit_cpu_seconds", "cpu_seconds", "loss", "mean_l1_3way"):
            ratios = [by[(*i, k)][metric] / by[(*i, 0)][metric] for i in inputs]
            row[f"{metric}_median"] = float(np.median(ratios))
            row[f"{metric}_worst"] = float(np.max(ratios))
        row["trials_per_step"] = float(np.median([by[(*i, k)]["trials"] / by[(*i, k)]["steps"]
                                                  for i in inputs]))
        rows.append(row)
    return rows


def plot(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(rows))
    for shift, metric, label in ((-0.27, "trials", "final fit's trials"),
                                 (0.0, "fit_cpu_seconds", "final fit's CPU"),
                                 (0.27, "loss", "final fit's loss")):
        ax.bar(x + shift, [r[f"{metric}_median"] for r in rows], 0.25, label=f"{label}, median")
        ax.scatter(x + shift, [r[f"{metric}_worst"] for r in rows], color="black", s=12,
                   zorder=3)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(x, [f"k = {r['grow_after']}" for r in rows])
    ax.set_ylabel("ratio to doubling before every step (k = 0)")
    ax.set_title("Line search: double after k clean steps (dots: worst input)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=sorted(TABLES), choices=sorted(TABLES))
    parser.add_argument("--grow", nargs="+", type=int, default=[0, 1, 2, 3, 5])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    if 0 not in args.grow or min(args.grow) < 0:
        raise SystemExit("--grow must hold 0 (the reference) and no negative value")
    runs: list[dict[str, Any]] = []
    turn = 0
    for table in args.tables:
        data = synthetic(*TABLES[table])
        for privacy in ("pure", "zcdp"):
            for epsilon in args.epsilons:
                order = args.grow[turn % len(args.grow):] + args.grow[:turn % len(args.grow)]
                turn += 1
                for grow in order:
                    measured = run(data, privacy, epsilon, grow)
                    runs.append({"table": table, "privacy": privacy, "epsilon": epsilon,
                                 **measured})
                    print(f"{table} {privacy:>4} eps {epsilon:<4g} k {grow}: "
                          f"{measured['trials']} trials / {measured['steps']} steps, loss "
                          f"{measured['loss']:.6g}, fit {measured['fit_cpu_seconds']:.1f} of "
                          f"{measured['cpu_seconds']:.1f} CPU-s, 3-way "
                          f"{measured['mean_l1_3way']:.4g}", flush=True)
    rows = summary(runs, args.grow)
    write_json_atomic(args.out, {
        "benchmark": "fit_line_search: doubling the step after k clean steps (k = 0: before)",
        "machine": machine(), "tables": {t: {"seed": TABLES[t][0], "sizes": TABLES[t][1],
                                             "records": TABLES[t][2]} for t in args.tables},
        "runs": runs, "summary": rows})
    for r in rows:
        print(f"k {r['grow_after']}: {r['trials_per_step']:.2f} trials a step; ratios to k 0 "
              f"(median, worst): trials {r['trials_median']:.2f} {r['trials_worst']:.2f}, fit "
              f"CPU {r['fit_cpu_seconds_median']:.2f} {r['fit_cpu_seconds_worst']:.2f}, loss "
              f"{r['loss_median']:.4f} {r['loss_worst']:.4f}, 3-way error "
              f"{r['mean_l1_3way_median']:.3f} {r['mean_l1_3way_worst']:.3f}")
    plot(rows, os.path.splitext(args.out)[0] + ".png")


if __name__ == "__main__":
    sys.exit(main())
