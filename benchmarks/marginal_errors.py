"""Where the error is: fastmwem's defaults and AIM marginal by marginal on one suite table.

The accuracy suite (``accuracy_suite.py``) scores a run by its mean L1 error over all 2-way and
all 3-way marginals; this script keeps every marginal's error apart, for one run of the
library's defaults (:func:`fastmwem.release.mwem_with_defaults`) and one of OpenDP's
``dp.mbi.AIM`` (as ``aim_reference.py`` runs it: (epsilon, 1e-9) by the tight conversion, 16 d
rounds, a model of at most 80 MB, all 3-way marginals as the workload), on the same table and
epsilon. It also records which marginals each measured, the cliques of fastmwem's junction tree,
and the largest cliques that AIM's measured sets need (a greedy elimination order that keeps
each new clique smallest: an upper bound on what a junction tree holding them all needs).

Run: ``nice -n 10 python benchmarks/marginal_errors.py salary 3 [--seed 0]``; AIM takes 5-10
CPU-minutes on salary (set ``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1"`` to keep it on one core). Output:
``results/marginal_errors_TABLE_EPS.json``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _aim_common import RESULTS, machine, write_json_atomic
from accuracy_suite import DELTA, load, order_of

from fastmwem.data import Dataset
from fastmwem.workloads import Marginals


def errors(data: Dataset, estimate: Callable[[tuple[str, ...]], Any]) -> dict[str, float]:
    """L1 distance between normalised marginals, for every 2-way and 3-way marginal."""
    out = {}
    for k in (2, 3):
        for attrs in Marginals.all_kway(data.domain, k).attribute_sets:
            est = np.clip(np.asarray(estimate(attrs), dtype=np.float64).reshape(-1), 0.0, None)
            true = data.marginal(attrs).reshape(-1).astype(np.float64)
            out["|".join(attrs)] = float(np.abs(est / est.sum() - true / true.sum()).sum())
    return out


def ours(data: Dataset, epsilon: float, seed: int) -> dict[str, Any]:
    from fastmwem.release import mwem_with_defaults

    workload = Marginals.all_kway(data.domain, order_of(data))
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded run warns that it is not private
        result = mwem_with_defaults(data, workload, epsilon=epsilon, privacy="zcdp",
                                    delta=DELTA, rng=seed)
    cpu = time.process_time() - started
    measured = result.measured_workload or result.workload
    return {"cpu_seconds": cpu,
            "selected": [measured.describe_group(int(g)) for g in result.selected],
            "cliques": [list(c) for c in getattr(result.model, "cliques", [])],
            "errors": errors(data, lambda a: result.answer(Marginals(data.domain, [a])))}


def aim(data: Dataset, epsilon: float) -> dict[str, Any]:
    import opendp.prelude as dp
    import polars as pl
    from aim_reference import rho_for

    cols = list(data.domain.attributes)
    frame = pl.LazyFrame({c: data.records[:, i].astype(np.int64) for i, c in enumerate(cols)})
    cuts = {c: list(range(data.domain.size_of(c) - 1)) for c in cols}
    dp.enable_features("contrib")
    rho = rho_for(epsilon, DELTA, "tight")
    context = dp.Context.compositor(data=frame, privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(rho=rho))
    algorithm = dp.mbi.AIM(queries=order_of(data), rounds=None, max_size=80.0,
                           oneway_split=0.9 / 16)
    started = time.process_time()
    table = context.query(rho=rho).contingency_table(cuts=cuts, algorithm=algorithm).release()
    cpu = time.process_time() - started
    measured = [list(m.clique) for m in table.marginals.flatten()]
    return {"cpu_seconds": cpu, "measured": measured,
            "largest_cliques": cliques_needed(data, measured)[:6],
            "errors": errors(data, lambda a: np.asarray(table.project(list(a))))}


def cliques_needed(data: Dataset, measured: list[list[str]]) -> list[tuple[int, list[str]]]:
    """Cliques of a triangulation of the measured sets' graph (greedy: smallest clique first)."""
    size = dict(zip(data.domain.attributes, data.domain.shape))
    graph: dict[str, set[str]] = {a: set() for a in data.domain.attributes}
    for attrs in measured:
        for u, v in itertools.combinations(attrs, 2):
            graph[u].add(v)
            graph[v].add(u)
    found = []
    while graph:
        v = min(graph, key=lambda a: (math.prod(size[u] for u in graph[a] | {a}), a))
        clique = graph[v] | {v}
        found.append((math.prod(size[u] for u in clique), sorted(clique)))
        for u in graph[v]:
            graph[u] |= graph[v] - {u}
            graph[u].discard(v)
        del graph[v]
    return sorted(found, reverse=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("epsilon", type=float)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-aim", action="store_true")
    args = parser.parse_args(argv)
    data = load(args.table)
    out = os.path.join(RESULTS, f"marginal_errors_{args.table}_{args.epsilon:g}.json")
    runs: dict[str, dict[str, Any]] = {"fastmwem": ours(data, args.epsilon, args.seed)}
    if not args.skip_aim:
        runs["aim"] = aim(data, args.epsilon)
    for name, run in runs.items():
        errs = run["errors"]
        for k in (2, 3):
            values = [v for key, v in errs.items() if key.count("|") == k - 1]
            print(f"{name}: mean {k}-way L1 {np.mean(values):.4f}  ({run['cpu_seconds']:.0f} CPU-s)")
    if "aim" in runs:
        gap = sorted(runs["aim"]["errors"], key=lambda key: runs["aim"]["errors"][key]
                     - runs["fastmwem"]["errors"][key])
        for key in gap[:10]:
            print(f"  {key:55s} fastmwem {runs['fastmwem']['errors'][key]:.3f}  "
                  f"AIM {runs['aim']['errors'][key]:.3f}")
        print("AIM's largest cliques (cells, attributes):", runs["aim"]["largest_cliques"][:3])
    write_json_atomic(out, {"benchmark": "marginal_errors", "machine": machine(),
                            "table": args.table, "epsilon": args.epsilon, "seed": args.seed,
                            "delta": DELTA, "runs": runs})


if __name__ == "__main__":
    main()
