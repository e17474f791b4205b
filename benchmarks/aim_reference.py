"""AIM (McKenna et al., arXiv:2201.12677) as the reference for MWEM: error, CPU time, peak memory.

AIM is OpenDP's ``dp.mbi.AIM`` through its contingency-table API (``pip install -e ".[bench]"``
brings ``opendp[mbi]``, which fits Private-PGM's ``mbi`` graphical models with JAX), fitted to
the workload of all k-way marginals at (epsilon, delta). OpenDP accounts AIM in zCDP; the budget
``rho`` is the largest whose conversion to (epsilon, delta)-DP fits, by the tight conversion of
Canonne, Kamath and Steinke ("The Discrete Gaussian for Differential Privacy", arXiv:2004.00010,
the one AIM's paper uses; ``--conversion bun-steinke`` gives the looser one fastmwem's accountant
uses). Every column is given as ordinal cuts ``0 .. size - 2`` (left-open bins, one per code, so
the model's domain is exactly the data's, without the null category OpenDP adds to keyed
columns), and 1-way marginals
get ``--oneway-split`` of the budget (default 0.9/16, AIM's own initialisation: every 1-way
marginal measured at a 1/T share of 90% of the budget with T = 16 d rounds). The rest follows
OpenDP's defaults (T = 16 d, 90% of each round for the measurement, a model of at most 80 MB,
budget annealing by 4x when a measurement moved the model less than its noise).

Each run is a child process (CPU seconds of every thread and peak RSS from ``os.wait4``); its
error is the mean L1 distance between normalised marginals over all 2-way and all 3-way
marginals, scored by :func:`fastmwem.evaluation.workload_error` marginal by marginal (the
function fastmwem's own benchmarks use). OpenDP draws its noise from its own unseeded generator:
"seed" is a repeat number. Results go to ``results/aim_reference.json`` after every run
(atomically); rerunning resumes, skipping finished runs of the same configuration.

Long runs need ``vm.max_map_count`` above Linux's default 65,530 (JAX maps memory for every
compiled kernel; the script warns when it is lower).

Run: ``nice -n 10 python benchmarks/aim_reference.py [--epsilons 0.1 0.3 1 3] [--seeds 0 1 2]
[--quick]``; adult: ``--dataset adult --data adult.csv --domain adult-domain.json --workloads 2 3
--timeout 3600``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import warnings
from importlib import metadata

import numpy as np
from _aim_common import (
    RESULTS,
    load_dataset,
    machine,
    mean_marginal_l1,
    run_child,
    script_argv,
    summarise,
    write_json_atomic,
)
from scipy.optimize import brentq, minimize_scalar

from fastmwem.accounting import approx_dp_to_zcdp_budget

METRICS = ("mean_l1_3way", "mean_l1_2way", "cpu_seconds", "wall_seconds", "peak_rss_mb")
RUN_KEYS = ("dataset", "workload", "epsilon")


def _log_delta_tight(rho: float, epsilon: float) -> float:
    """log delta of rho-zCDP at epsilon: min over alpha > 1 of the CKS bound (arXiv:2004.00010).

    ``delta = exp((a - 1)(a rho - eps)) (1 - 1/a)^a / (a - 1)``, minimised over ``a`` on a grid
    in ``log(a - 1)`` and then refined.
    """
    def f(t: float) -> float:
        a = 1.0 + math.exp(t)
        return (a - 1.0) * (a * rho - epsilon) + a * math.log1p(-1.0 / a) - t

    hi = math.log(epsilon / rho + 2.0) + 1.0
    grid = np.linspace(-20.0, hi, 2001)
    values = [f(t) for t in grid]
    i = int(np.argmin(values))
    lo_t, hi_t = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    best = minimize_scalar(f, bounds=(lo_t, hi_t), method="bounded")
    return float(min(best.fun, values[i]))


def rho_for(epsilon: float, delta: float, conversion: str) -> float:
    """The largest zCDP rho that gives (epsilon, delta)-DP under the named conversion."""
    if conversion == "bun-steinke":
        return float(approx_dp_to_zcdp_budget(epsilon, delta))
    target = math.log(delta)
    rho = brentq(lambda r: _log_delta_tight(r, epsilon) - target, 1e-12, epsilon, xtol=1e-14)
    return rho * (1.0 - 1e-9)  # stay on the safe side of the root


# -- the child: one AIM run ----------------------------------------------------------------------

def child(spec_path: str, out_path: str) -> None:
    warnings.simplefilter("ignore")
    import opendp.prelude as dp
    import polars as pl

    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    data = load_dataset(spec["dataset"], spec["data"], spec["domain"])
    cols = list(data.domain.attributes)
    frame = pl.LazyFrame({c: data.records[:, i].astype(np.int64) for i, c in enumerate(cols)})
    # Ordinal cuts between consecutive codes: the model's domain is exactly the data's.
    cuts = {c: list(range(data.domain.size_of(c) - 1)) for c in cols}
    dp.enable_features("contrib")
    context = dp.Context.compositor(data=frame, privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(rho=spec["rho"]))
    algorithm = dp.mbi.AIM(queries=spec["workload"], rounds=spec["rounds"],
                           max_size=spec["max_size"], oneway_split=spec["oneway_split"])
    table = (context.query(rho=spec["rho"])
             .contingency_table(cuts=cuts, algorithm=algorithm).release())
    fit_cpu = time.process_time()  # every thread of this process: loading and fitting
    if spec.get("fit_done"):  # tells the parent that a CPU cap on the fit no longer applies
        with open(spec["fit_done"], "w", encoding="ascii") as fh:
            fh.write(f"{fit_cpu}\n")
    sizes = dict(table.model.domain.config)
    if sizes != data.domain.to_dict():
        raise SystemExit(f"the model's domain {sizes} is not the data's {data.domain.to_dict()}")

    def estimate(attrs: tuple[str, ...]) -> np.ndarray:
        return np.asarray(table.project(list(attrs)))

    measured = [tuple(m.clique) for m in table.marginals.flatten()]
    result = {"mean_l1_2way": mean_marginal_l1(data, estimate, 2),
              "mean_l1_3way": mean_marginal_l1(data, estimate, 3),
              "measurements": len(measured),
              "multiway_measurements": sum(len(c) > 1 for c in measured),
              "fit_cpu_seconds": fit_cpu, "score_cpu_seconds": time.process_time() - fit_cpu}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


# -- the parent: every run, in a fresh process each ------------------------------------------------

def run_one(spec: dict, timeout: float | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        measured = run_child(script_argv(__file__, "--child", spec_path, out_path), timeout)
        if measured["status"] == "ok":
            with open(out_path, encoding="utf-8") as fh:
                measured.update(json.load(fh))
    return measured


def versions() -> dict[str, str]:
    out = {}
    for name in ("opendp", "mbi", "jax", "jaxlib", "polars", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def load_previous(path: str, config: dict) -> list[dict]:
    """Finished runs of the same configuration in an earlier output (to resume)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        previous = json.load(fh)
    if previous.get("config") != config:
        print(f"{path} holds another configuration; starting afresh", flush=True)
        return []
    return [r for r in previous.get("runs", []) if r["status"] in ("ok", "timeout")]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0])
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="repeat numbers (OpenDP's noise is unseeded)")
    parser.add_argument("--dataset", default="nltcs")
    parser.add_argument("--data", default=None, help="CSV of integer codes (not for nltcs)")
    parser.add_argument("--domain", default=None, help='domain JSON {"column": size}')
    parser.add_argument("--workloads", type=int, nargs="+", default=[3],
                        help="k of the all-k-way workloads AIM fits (one run each)")
    parser.add_argument("--conversion", choices=["tight", "bun-steinke"], default="tight")
    parser.add_argument("--rounds", type=int, default=None, help="AIM's T (default 16 d)")
    parser.add_argument("--max-size", type=float, default=80.0, help="model size cap in MB")
    parser.add_argument("--oneway-split", type=float, default=0.9 / 16)
    parser.add_argument("--timeout", type=float, default=None, help="wall seconds per run")
    parser.add_argument("--out", default=None, help="output JSON (default results/aim_reference"
                        ".json, or aim_reference_quick.json with --quick)")
    parser.add_argument("--fresh", action="store_true", help="do not resume an earlier output")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: epsilon 1, one repeat, T = 3 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.epsilons, args.seeds, args.rounds = [1.0], [0], 3
    if args.out is None:
        name = "aim_reference_quick.json" if args.quick else "aim_reference.json"
        args.out = os.path.join(RESULTS, name)
    return args


# JAX maps memory for every kernel it compiles: AIM's longer runs pass Linux's default limit
# of 65,530 mappings (NLTCS at epsilon 3 held 47,788 after 32 CPU-minutes; twice it failed with
# "LLVM compilation error: Cannot allocate memory" after 50 CPU-minutes at 6.8 GB).
MIN_MAP_COUNT = 262_144


def check_map_count(path: str = "/proc/sys/vm/max_map_count") -> None:
    """Warn (stderr) when the kernel's limit on memory mappings is below ``MIN_MAP_COUNT``."""
    try:
        with open(path, encoding="ascii") as fh:
            limit = int(fh.read().strip())
    except (OSError, ValueError):
        return
    if limit < MIN_MAP_COUNT:
        print(f"warning: vm.max_map_count is {limit}: long AIM runs fail when JAX's compiled "
              f"kernels exceed it; raise it as root (sysctl -w vm.max_map_count=1048576)",
              file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    check_map_count()
    config = {"dataset": args.dataset, "delta": args.delta, "conversion": args.conversion,
              "rounds": args.rounds, "max_size_mb": args.max_size,
              "oneway_split": args.oneway_split, "timeout": args.timeout}
    runs = [] if args.fresh else load_previous(args.out, config)
    done = {(r["workload"], r["epsilon"], r["seed"]) for r in runs}

    def save() -> None:
        write_json_atomic(args.out, {
            "benchmark": "aim_reference: AIM (OpenDP dp.mbi.AIM) on all k-way marginals",
            "machine": machine(), "packages": versions(), "config": config,
            "data": {"dataset": args.dataset, "csv": args.data, "domain": args.domain},
            "notes": ["seed is a repeat number: OpenDP's noise is unseeded",
                      "cpu_seconds = user + system time of the run's process (all threads)",
                      "errors: mean over marginals of L1 between normalised marginals"],
            "runs": runs, "summary": summarise(runs, RUN_KEYS, METRICS)})

    # Every epsilon once before any is repeated, so a partial output covers them all.
    for seed in args.seeds:
        for eps in args.epsilons:
            for k in args.workloads:
                if (f"marginals:{k}", eps, seed) in done:
                    continue
                rho = rho_for(eps, args.delta, args.conversion)
                spec = {"dataset": args.dataset, "data": args.data, "domain": args.domain,
                        "workload": k, "rho": rho, "rounds": args.rounds,
                        "max_size": args.max_size, "oneway_split": args.oneway_split}
                measured = run_one(spec, args.timeout)
                runs.append({"dataset": args.dataset, "workload": f"marginals:{k}",
                             "epsilon": eps, "delta": args.delta, "rho": rho, "seed": seed,
                             **measured})
                save()
                shown = {k2: v for k2, v in runs[-1].items() if k2 != "stderr_tail"}
                print(json.dumps(shown), flush=True)
                if measured["status"] == "failed":
                    print(measured["stderr_tail"], file=sys.stderr, flush=True)
    save()
    for row in summarise(runs, RUN_KEYS, METRICS):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
