"""Start-up cost of ``import fastmwem`` and ``fastmwem --help``, before and after lazy imports.

Each measurement is a fresh interpreter (``sys.executable``) with ``PYTHONPATH`` set to one
source tree: ``before`` (by default the sources of commit c146b85, the last one that imported
numba, pandas, scipy and tqdm at ``import fastmwem``, taken with ``git archive``) and ``after``
(this checkout's ``src``). For each tree and command the script records, over ``--runs`` runs:

* the wall time of the whole child process (interpreter start included), median and max;
* for ``import fastmwem``, the time of the import statement alone, measured inside the child;
* the child's peak resident memory (``ru_maxrss`` from ``os.wait4``, per child);
* which heavy dependencies the command left in ``sys.modules``.

``fastmwem --help`` runs what the installed console script runs (``from fastmwem.cli import
main``, then ``main()``). The runs of both trees take turns, one warm-up run each first (it
writes the bytecode caches), so load on the shared machine hits them alike; the load average is
recorded beside the figures. Nothing is asserted: speed is measured here, never in the tests.

Run: ``python benchmarks/import_time.py [--runs 10] [--before-rev c146b85 | --before-src DIR]``.
Writes benchmarks/results/import_time.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
HEAVY = ("numba", "pandas", "scipy", "duckdb", "pyspark", "faiss", "hnswlib", "fastapi", "tqdm")

_REPORT = ("import json, sys\n"
           "print(json.dumps({'file': sys.modules['fastmwem'].__file__, 'heavy': sorted("
           f"{{m.partition('.')[0] for m in sys.modules}} & {set(HEAVY)!r})}}), file=sys.stderr)")
COMMANDS = {
    "import fastmwem": ["-c", "import time\nt = time.perf_counter()\nimport fastmwem\n"
                              "print(time.perf_counter() - t)\n" + _REPORT],
    "fastmwem --help": ["-c", "from fastmwem.cli import main\ntry:\n    main()\n"
                              "except SystemExit:\n    pass\n" + _REPORT, "--help"],
}


def run_once(src: Path, args: list[str], cwd: str) -> dict:
    """One child: wall seconds, peak RSS (MB), its stdout and what it reported on stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP", "PYTHONHOME")}
    env["PYTHONPATH"] = str(src)
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=out, stderr=err)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage, not all children's
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    stdout, stderr = out.read().decode(), err.read().decode()
    if child.returncode != 0:
        raise RuntimeError(f"{args} failed with {src}:\n{stderr[-2000:]}")
    report = json.loads(stderr.strip().splitlines()[-1])
    if not report["file"].startswith(str(src)):
        raise RuntimeError(f"imported {report['file']}, not the tree under {src}")
    return {"wall": wall, "rss_mb": usage.ru_maxrss / 1024, "stdout": stdout,
            "heavy": report["heavy"]}


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "max": max(values), "min": min(values),
            "runs": values}


def before_tree(rev: str, workdir: Path) -> Path:
    """``src`` of ``rev`` from this repository's history, unpacked under ``workdir``."""
    archive = workdir / "before.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), rev,
                    "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(workdir / "before", filter="data")
    return workdir / "before" / "src"


def measure(trees: dict[str, Path], runs: int, cwd: str) -> dict:
    results = {name: {cmd: [] for cmd in COMMANDS} for name in trees}
    for src in trees.values():  # warm-up: bytecode caches
        for args in COMMANDS.values():
            run_once(src, args, cwd)
    for _ in range(runs):
        for cmd, args in COMMANDS.items():
            for name, src in trees.items():
                results[name][cmd].append(run_once(src, args, cwd))
    table = {}
    for name in trees:
        table[name] = {}
        for cmd, done in results[name].items():
            row = {"wall_s": summary([d["wall"] for d in done]),
                   "peak_rss_mb": summary([d["rss_mb"] for d in done]),
                   "heavy_modules": done[-1]["heavy"]}
            if cmd == "import fastmwem":
                row["import_statement_s"] = summary([float(d["stdout"]) for d in done])
            table[name][cmd] = row
    return table


def plot(table: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(table)
    panels = [("import fastmwem", "wall_s", "import fastmwem: process wall time (s)"),
              ("fastmwem --help", "wall_s", "fastmwem --help: process wall time (s)"),
              ("import fastmwem", "peak_rss_mb", "import fastmwem: peak RSS (MB)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 4))
    for ax, (cmd, key, title) in zip(axes, panels):
        med = [table[n][cmd][key]["median"] for n in names]
        top = [table[n][cmd][key]["max"] for n in names]
        bars = ax.bar(names, med, color=["#b55", "#58b"][:len(names)],
                      yerr=[[0] * len(names), [t - m for t, m in zip(top, med)]], capsize=6)
        for bar, m in zip(bars, med):
            ax.annotate(f"{m:.2f}" if key == "wall_s" else f"{m:.0f}",
                        (bar.get_x() + bar.get_width() / 2, m / 2), ha="center", va="center",
                        color="white", fontweight="bold")
        ax.set_title(title, fontsize=10)
    fig.suptitle("median (bar) and max (whisker) over the runs; before = eager imports, "
                 "after = lazy imports", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--before-rev", default="c146b85",
                        help="git revision whose src is 'before' (default: c146b85)")
    parser.add_argument("--before-src", type=Path, help="a source tree to use as 'before'")
    parser.add_argument("--after-src", type=Path, default=ROOT / "src")
    parser.add_argument("--name", default="import_time")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="import_time_") as tmp:
        before = args.before_src or before_tree(args.before_rev, Path(tmp))
        trees = {"before": before.resolve(), "after": args.after_src.resolve()}
        load = os.getloadavg()
        table = measure(trees, args.runs, tmp)
        load_after = os.getloadavg()
    out = {
        "runs": args.runs,
        "before": args.before_src and str(args.before_src) or f"git {args.before_rev}:src",
        "after": str(args.after_src),
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1_5_15_min": {"start": load, "end": load_after},
        "results": table,
    }
    (RESULTS / f"{args.name}.json").write_text(json.dumps(out, indent=2) + "\n")
    plot(table, RESULTS / f"{args.name}.png")
    print(f"{args.runs} runs each; load average {load[0]:.2f} at start, {load_after[0]:.2f} at end")
    print(f"{'':8} {'command':16} {'median s':>9} {'max s':>7} {'import s':>9} {'RSS MB':>7}  heavy")
    for name, rows in table.items():
        for cmd, row in rows.items():
            stmt = row.get("import_statement_s", {}).get("median")
            print(f"{name:8} {cmd:16} {row['wall_s']['median']:9.3f} {row['wall_s']['max']:7.3f} "
                  f"{'' if stmt is None else f'{stmt:9.3f}':>9} "
                  f"{row['peak_rss_mb']['max']:7.1f}  {','.join(row['heavy_modules']) or '-'}")


if __name__ == "__main__":
    main()
