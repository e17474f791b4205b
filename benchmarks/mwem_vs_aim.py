"""fastmwem beside AIM on all 3-way marginals: error, CPU seconds and peak memory vs epsilon.

The AIM side is read from ``results/aim_reference.json`` (written by ``aim_reference.py``;
``--run-aim`` runs or resumes it first with the same epsilons, repeats and data). The fastmwem
side runs here: ``fastmwem synth`` (the command line, with its defaults) on the same data,
workload and epsilons, one child process per run so that CPU time and peak RSS are measured the
same way as AIM's (``os.wait4`` of the run's process). Its error is the report's ``--evaluate``
figure, :func:`fastmwem.evaluation.workload_error`'s ``mean_group_l1`` over the workload, the
function the AIM side is scored with.

Each ``--config`` is a fastmwem configuration: ``pure`` (the defaults, pure epsilon-DP),
``zcdp`` (``--privacy zcdp --delta DELTA``, the (epsilon, delta) AIM gets), or
``NAME=FLAGS`` with any ``fastmwem synth`` flags. A configuration the installed fastmwem does
not accept is reported as ``rejected`` with the command line's message.

Writes ``results/mwem_vs_aim.json`` (runs, summaries, the ratio table: fastmwem / AIM error and
AIM / fastmwem CPU) and ``results/mwem_vs_aim.png``, and prints the ratio table.

Run: ``nice -n 10 python benchmarks/mwem_vs_aim.py --config pure [--config zcdp] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile

from _aim_common import RESULTS, machine, run_child, summarise, write_json_atomic

METRICS = ("mean_l1_3way", "cpu_seconds", "wall_seconds", "peak_rss_mb")
PRESETS = {"pure": lambda delta: [],
           "zcdp": lambda delta: ["--privacy", "zcdp", "--delta", repr(delta)]}
# argparse's words for a flag or value it does not know (exit status 2).
REJECTED = ("unrecognized arguments", "invalid choice", "no such option")


def parse_config(text: str, delta: float) -> tuple[str, list[str]]:
    if text in PRESETS:
        return text, PRESETS[text](delta)
    name, sep, flags = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"--config must be one of {sorted(PRESETS)} or NAME=FLAGS, got {text!r}")
    return name, shlex.split(flags)


def synth_argv(args: argparse.Namespace, epsilon: float, seed: int, flags: list[str],
               tmp: str) -> list[str]:
    source = (["--demo"] if args.data is None else [args.data, "--domain", args.domain])
    return [sys.executable, "-m", "fastmwem", "synth", *source, "--epsilon", repr(epsilon),
            "--workload", f"marginals:{args.workload}", "--out", os.path.join(tmp, "syn.csv"),
            "--report", os.path.join(tmp, "report.json"), "--evaluate", "--seed", str(seed),
            "--no-progress", *flags]


def run_fastmwem(args: argparse.Namespace, epsilon: float, seed: int,
                 flags: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        argv = synth_argv(args, epsilon, seed, flags, tmp)
        measured = run_child(argv, args.timeout)
        if measured["status"] == "ok":
            with open(os.path.join(tmp, "report.json"), encoding="utf-8") as fh:
                report = json.load(fh)
            measured[f"mean_l1_{args.workload}way"] = report["evaluation"]["mean_group_l1"]
            measured["rounds"] = len(report.get("rounds", []))
            measured["privacy"] = {k: v for k, v in report["privacy"].items() if k != "ledger"}
        elif measured["returncode"] == 2 and any(w in measured["stderr_tail"] for w in REJECTED):
            measured["status"] = "rejected"
    measured["command"] = shlex.join(["fastmwem", *argv[3:]])
    return measured


def aim_summary(path: str, dataset: str, workload: int) -> list[dict]:
    if not os.path.exists(path):
        raise SystemExit(f"{path} does not exist: run benchmarks/aim_reference.py or --run-aim")
    with open(path, encoding="utf-8") as fh:
        aim = json.load(fh)
    return [{**row, "method": "AIM"} for row in aim["summary"]
            if row["dataset"] == dataset and row["workload"] == f"marginals:{workload}"]


def ratios(fast: list[dict], aim: list[dict], metric: str) -> list[dict]:
    by_eps = {row["epsilon"]: row for row in aim if metric in row}
    table = []
    for row in fast:
        ref = by_eps.get(row["epsilon"])
        if ref is None or metric not in row:
            continue
        table.append({
            "config": row["method"], "epsilon": row["epsilon"],
            "fastmwem_error": row[metric]["mean"], "aim_error": ref[metric]["mean"],
            "error_ratio": row[metric]["mean"] / ref[metric]["mean"],
            "fastmwem_cpu_s": row["cpu_seconds"]["mean"], "aim_cpu_s": ref["cpu_seconds"]["mean"],
            "cpu_ratio": ref["cpu_seconds"]["mean"] / row["cpu_seconds"]["mean"],
            "rss_ratio": ref["peak_rss_mb"]["mean"] / row["peak_rss_mb"]["mean"],
        })
    return table


def plot(rows: list[dict], metric: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_err, ax_cpu) = plt.subplots(1, 2, figsize=(11, 4.2))
    for method in sorted({r["method"] for r in rows}, key=lambda m: (m != "AIM", m)):
        mine = sorted((r for r in rows if r["method"] == method and metric in r),
                      key=lambda r: r["epsilon"])
        if not mine:
            continue
        eps = [r["epsilon"] for r in mine]
        for ax, key in ((ax_err, metric), (ax_cpu, "cpu_seconds")):
            mean = [r[key]["mean"] for r in mine]
            line, = ax.plot(eps, mean, marker="o", label=method)
            ax.fill_between(eps, [r[key]["min"] for r in mine], [r[key]["max"] for r in mine],
                            color=line.get_color(), alpha=0.2)
    ax_err.set(xscale="log", yscale="log", xlabel="epsilon",
               ylabel=f"{metric} (min/max over repeats)", title="error (lower is better)")
    ax_cpu.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="CPU seconds per run",
               title="CPU time")
    for ax in (ax_err, ax_cpu):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", default=None,
                        help="pure, zcdp or NAME=FLAGS (repeatable; default pure)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0])
    parser.add_argument("--delta", type=float, default=1e-9, help="delta of the zcdp config")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--dataset", default="nltcs")
    parser.add_argument("--data", default=None, help="CSV of integer codes (not for nltcs)")
    parser.add_argument("--domain", default=None, help='domain JSON {"column": size}')
    parser.add_argument("--workload", type=int, default=3, help="k of all k-way marginals")
    parser.add_argument("--timeout", type=float, default=None, help="wall seconds per run")
    parser.add_argument("--aim", default=os.path.join(RESULTS, "aim_reference.json"))
    parser.add_argument("--run-aim", action="store_true",
                        help="run (or resume) aim_reference.py first with these settings")
    parser.add_argument("--out", default=os.path.join(RESULTS, "mwem_vs_aim.json"))
    parser.add_argument("--quick", action="store_true", help="epsilon 1, one seed")
    args = parser.parse_args(argv)
    if args.quick:
        args.epsilons, args.seeds = [1.0], [0]
    if (args.data is None) != (args.domain is None):
        parser.error("--data and --domain go together")
    args.config = args.config or ["pure"]
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    configs = [parse_config(c, args.delta) for c in args.config]
    if args.run_aim:
        import aim_reference

        source = [] if args.data is None else ["--data", args.data, "--domain", args.domain]
        aim_reference.main(["--epsilons", *map(repr, args.epsilons), "--seeds",
                            *map(str, args.seeds), "--dataset", args.dataset, "--delta",
                            repr(args.delta), "--workloads", str(args.workload),
                            "--out", args.aim, *source]
                           + ([] if args.timeout is None else ["--timeout", repr(args.timeout)]))
    aim = aim_summary(args.aim, args.dataset, args.workload)
    metric = f"mean_l1_{args.workload}way"
    runs: list[dict] = []
    payload: dict = {}

    def save() -> None:
        fast = summarise(runs, ("method", "epsilon"), (metric, *METRICS[1:]))
        payload.update({
            "benchmark": "mwem_vs_aim: fastmwem synth beside AIM, all k-way marginals",
            "machine": machine(), "dataset": args.dataset, "workload": f"marginals:{args.workload}",
            "aim_source": os.path.relpath(args.aim, os.path.dirname(args.out)),
            "configs": {name: shlex.join(flags) for name, flags in configs},
            "notes": ["cpu_seconds = user + system time of the run's process (all threads)",
                      "error_ratio = fastmwem / AIM mean error; cpu_ratio and rss_ratio = "
                      "AIM / fastmwem means"],
            "runs": runs, "summary": fast + aim, "ratios": ratios(fast, aim, metric)})
        write_json_atomic(args.out, payload)

    def run_config(name: str, flags: list[str]) -> None:
        for eps in args.epsilons:
            for seed in args.seeds:
                measured = run_fastmwem(args, eps, seed, flags)
                runs.append({"method": name, "dataset": args.dataset, "epsilon": eps,
                             "seed": seed, **measured})
                save()
                if measured["status"] == "rejected":
                    print(f"the installed fastmwem rejects config {name!r} "
                          f"({shlex.join(flags)}): {measured['stderr_tail'].strip()[-600:]}",
                          flush=True)
                    return
                if measured["status"] != "ok":
                    print(f"config {name!r} at epsilon {eps}: {measured['status']}: "
                          f"{measured['stderr_tail'].strip()[-600:]}", flush=True)

    for name, flags in configs:
        run_config(name, flags)
    save()
    plot(payload["summary"], metric, os.path.splitext(args.out)[0] + ".png")
    print(f"{'config':>10} {'eps':>5} {'fastmwem':>9} {'AIM':>9} {'err x':>6} "
          f"{'fm CPU-s':>9} {'AIM CPU-s':>9} {'CPU /':>7}")
    for r in payload["ratios"]:
        print(f"{r['config']:>10} {r['epsilon']:>5g} {r['fastmwem_error']:>9.4f} "
              f"{r['aim_error']:>9.4f} {r['error_ratio']:>6.2f} {r['fastmwem_cpu_s']:>9.2f} "
              f"{r['aim_cpu_s']:>9.1f} {r['cpu_ratio']:>7.0f}")
    missing = sorted({r["epsilon"] for r in runs} - {r["epsilon"] for r in aim if metric in r})
    if missing:
        print(f"no AIM result yet at epsilon {missing}", flush=True)


if __name__ == "__main__":
    main()
