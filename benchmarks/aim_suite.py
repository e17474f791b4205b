"""AIM on the accuracy suite: one (table, epsilon) at a time, each in its own capped child.

The reference run of the suite's accuracy benchmark: OpenDP's ``dp.mbi.AIM`` (McKenna, Mullins,
Sheldon and Miklau, "AIM: An Adaptive and Iterative Mechanism for Differentially Private
Synthetic Data", arXiv:2201.12677) on the ten tables of ``data/suite`` (built by
``suite_tables.py``), fitted to the workload of all 3-way marginals, or of all 2-way
marginals on a table of more than 20 columns (recorded in the run as ``workload`` and
``workload_note``). Each run is scored, like ``aim_reference.py``'s, by the mean L1 distance
between normalised marginals over all 2-way and all 3-way marginals, and it is fitted by
``aim_reference.py``'s child (same budget conversion, rounds, model size cap and 1-way split;
see that script).

Each run is a fresh child process whose fit is capped at ``--cpu-timeout`` CPU seconds (every
thread; default 3,600); a run past the cap is recorded with status ``timeout`` and
``limit: "cpu"`` (``--max-rss-gb`` likewise ends a run whose resident memory passes it:
``out_of_memory``). Scoring after the fit is not capped; ``fit_cpu_seconds`` and
``score_cpu_seconds`` split the child's CPU time. Each result is appended to ``--out``
(default ``results/aim_suite.json``) atomically, re-reading the file first, so the file always
holds every finished run; a rerun skips the (table, epsilon, repeat) runs it already holds.
``--reuse FILE`` copies matching NLTCS runs of ``aim_reference.py``'s output (same workload,
delta, conversion, rounds, model size and split) instead of running them again.

Run: ``nice -n 19 python benchmarks/aim_suite.py --runs mroz:1 titanic:1 ... [--seeds 0]``
(``TABLE:EPSILON`` pairs, in order) or ``--tables ... --epsilons ...`` (table by table). On a
shared machine limit JAX to one thread: ``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1" OMP_NUM_THREADS=1``; the run records these variables and the
CPUs it may use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from _aim_common import RESULTS, machine, run_child, script_argv, summarise, write_json_atomic
from aim_reference import check_map_count, rho_for, versions

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "data", "suite")
TABLES = ("mroz", "titanic", "digits", "msq", "bundesliga", "nltcs", "adult", "adult-hd",
          "diamonds", "salary")
MAX_3WAY_COLUMNS = 20  # wider tables get the all 2-way workload (3-way has too many queries)
METRICS = ("mean_l1_3way", "mean_l1_2way", "cpu_seconds", "fit_cpu_seconds", "wall_seconds",
           "peak_rss_mb")
RUN_KEYS = ("dataset", "workload", "epsilon")
# What makes two runs comparable (besides table, epsilon and repeat).
CONFIG_KEYS = ("delta", "conversion", "rounds", "max_size_mb", "oneway_split")
THREAD_VARIABLES = ("XLA_FLAGS", "OMP_NUM_THREADS")


def table_paths(name: str, data_dir: str = SUITE) -> tuple[str, str]:
    """The CSV of codes and the domain JSON of one suite table."""
    csv_path = os.path.join(data_dir, f"{name}.csv.gz")
    domain_path = os.path.join(data_dir, f"{name}-domain.json")
    for path in (csv_path, domain_path):
        if not os.path.exists(path):
            raise SystemExit(f"{path} is missing: run benchmarks/suite_tables.py, or pass the "
                             "folder that holds the table by --data-dir")
    return csv_path, domain_path


def workload_for(domain_path: str) -> tuple[int, str]:
    """k of the all-k-way workload for a table, and a note when it is 2 for width."""
    with open(domain_path, encoding="utf-8") as fh:
        columns = len(json.load(fh))
    if columns > MAX_3WAY_COLUMNS:
        return 2, f"{columns} columns > {MAX_3WAY_COLUMNS}: workload all 2-way marginals"
    return 3, ""


def parse_runs(args: argparse.Namespace) -> list[tuple[str, float]]:
    """The queue: ``--runs TABLE:EPS ...`` in order, else tables x epsilons table by table."""
    if args.runs:
        queue = []
        for item in args.runs:
            name, sep, eps = item.partition(":")
            if not sep:
                raise SystemExit(f"--runs takes TABLE:EPSILON pairs, got {item!r}")
            queue.append((name, float(eps)))
    else:
        queue = [(t, e) for t in args.tables for e in args.epsilons]
    unknown = sorted({t for t, _ in queue} - set(TABLES))
    if unknown:
        raise SystemExit(f"unknown tables {unknown}; the suite's are {list(TABLES)}")
    return queue


def read_runs(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return list(json.load(fh).get("runs", []))


def reusable(path: str | None, config: dict, epsilon: float) -> dict | None:
    """A finished NLTCS run of ``aim_reference.py``'s output that matches this configuration."""
    if path is None or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        previous = json.load(fh)
    old = previous.get("config", {})
    same = (old.get("dataset") == "nltcs" and old.get("delta") == config["delta"]
            and old.get("conversion") == config["conversion"]
            and old.get("rounds") == config["rounds"]
            and old.get("max_size_mb") == config["max_size_mb"]
            and old.get("oneway_split") == config["oneway_split"])
    if not same:
        return None
    for run in previous.get("runs", []):
        if (run.get("status") == "ok" and run.get("workload") == "marginals:3"
                and run.get("epsilon") == epsilon):
            opendp = (previous.get("packages") or {}).get("opendp", "unknown")
            return {**run, "workload_note": "", "aim": f"opendp {opendp} dp.mbi.AIM",
                    "reused_from": os.path.basename(path),
                    "reused_packages": previous.get("packages"),
                    "note": "run by aim_reference.py on fastmwem.datasets.load_nltcs() (the "
                            "same records); no CPU cap then (it used less than the cap)"}
    return None


def run_one(name: str, epsilon: float, seed: int, args: argparse.Namespace,
            config: dict) -> dict:
    csv_path, domain_path = table_paths(name, args.data_dir)
    k, note = workload_for(domain_path)
    rho = rho_for(epsilon, args.delta, args.conversion)
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        fit_done = os.path.join(tmp, "fit_done")
        spec = {"dataset": name, "data": csv_path, "domain": domain_path, "workload": k,
                "rho": rho, "rounds": args.rounds, "max_size": args.max_size,
                "oneway_split": args.oneway_split, "fit_done": fit_done}
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        reference = os.path.join(HERE, "aim_reference.py")
        measured = run_child(script_argv(reference, "--child", spec_path, out_path),
                             args.wall_timeout, cpu_timeout=args.cpu_timeout,
                             cpu_until=fit_done, max_rss_mb=args.max_rss_gb * 1024.0)
        if measured["status"] == "ok":
            with open(out_path, encoding="utf-8") as fh:
                measured.update(json.load(fh))
    return {"dataset": name, "workload": f"marginals:{k}", "workload_note": note,
            "epsilon": epsilon, "rho": rho, "seed": seed, **config,
            "cpu_timeout": args.cpu_timeout, "wall_timeout": args.wall_timeout,
            "max_rss_gb": args.max_rss_gb, "aim": f"opendp {versions()['opendp']} dp.mbi.AIM",
            "threads_env": {v: os.environ.get(v) for v in THREAD_VARIABLES},
            "cpus_allowed": sorted(os.sched_getaffinity(0)), "nice": os.nice(0), **measured}


def save(path: str, run: dict) -> None:
    """Append ``run`` to the output, re-read first so no earlier result is lost."""
    runs = read_runs(path) + [run]
    write_json_atomic(path, {
        "benchmark": "aim_suite: AIM (OpenDP dp.mbi.AIM) on the accuracy suite's tables",
        "machine": machine(), "packages": versions(),
        "notes": ["workload: all 3-way marginals, or all 2-way on tables of more than "
                  f"{MAX_3WAY_COLUMNS} columns (workload_note)",
                  "errors: mean over all 2-way (3-way) marginals of the L1 distance between "
                  "normalised marginals",
                  "cpu_seconds = user + system time of the run's process (all threads); the "
                  "CPU cap applies to the fit (fit_cpu_seconds), not to the scoring",
                  "seed is a repeat number: OpenDP's noise is unseeded"],
        "runs": runs, "summary": summarise(runs, RUN_KEYS, METRICS)})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=None, metavar="TABLE:EPS",
                        help="the queue, in order (overrides --tables/--epsilons)")
    parser.add_argument("--tables", nargs="+", default=list(TABLES))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="repeat numbers (OpenDP's noise is unseeded)")
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--conversion", choices=["tight", "bun-steinke"], default="tight")
    parser.add_argument("--rounds", type=int, default=None, help="AIM's T (default 16 d)")
    parser.add_argument("--max-size", type=float, default=80.0, help="model size cap in MB")
    parser.add_argument("--oneway-split", type=float, default=0.9 / 16)
    parser.add_argument("--cpu-timeout", type=float, default=3600.0,
                        help="CPU seconds of the fit before a run is ended as timed out")
    parser.add_argument("--wall-timeout", type=float, default=None,
                        help="wall seconds per run (default: none)")
    parser.add_argument("--max-rss-gb", type=float, default=12.0,
                        help="resident memory at which a run is ended")
    parser.add_argument("--data-dir", default=SUITE, help="folder of the suite's tables")
    parser.add_argument("--reuse", default=None,
                        help="aim_reference.py output whose NLTCS runs may stand in")
    parser.add_argument("--out", default=os.path.join(RESULTS, "aim_suite.json"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    check_map_count()
    queue = parse_runs(args)
    for name, _ in queue:
        table_paths(name, args.data_dir)  # every table present before the first hour-long run
    config = {"delta": args.delta, "conversion": args.conversion, "rounds": args.rounds,
              "max_size_mb": args.max_size, "oneway_split": args.oneway_split}
    for seed in args.seeds:
        for name, eps in queue:
            done = {(r["dataset"], r["epsilon"], r["seed"]) for r in read_runs(args.out)
                    if r["status"] in ("ok", "timeout", "out_of_memory")
                    and all(r.get(key) == config[key] for key in CONFIG_KEYS)}
            if (name, eps, seed) in done:
                print(f"{name} epsilon {eps} repeat {seed}: already in {args.out}", flush=True)
                continue
            run = reusable(args.reuse, config, eps) if name == "nltcs" and seed == 0 else None
            if run is None:
                print(f"{name} epsilon {eps} repeat {seed}: running", flush=True)
                run = run_one(name, eps, seed, args, config)
            else:
                run = {**run, **config, "seed": seed}
            save(args.out, run)
            shown = {k: v for k, v in run.items() if k not in ("stderr_tail", "reused_packages")}
            print(json.dumps(shown), flush=True)
            if run["status"] == "failed":
                print(run["stderr_tail"], file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
