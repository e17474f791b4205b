"""Joint top-k at scale: wall time and peak memory of one call at d = 10^6 and 10^7, k = 1,000.

Counts: ``rint(lognormal(mean=3, sigma=2))`` as int64, drawn with ``numpy.random.default_rng(s)``
for ``s = 0 .. draws-1`` (10 by default), and three adversarial vectors: all distinct (a
permutation of ``0 .. d-1``, seed 100), all equal (every count 100) and heavy ties (uniform on
``0 .. 4``, seed 101). ``JointTopK(k=1000, epsilon=1)``, add-remove neighbours, ``rng=None``.

Each measurement is one fresh Python process that loads the counts (saved beforehand as
``.npy``), imports fastmwem and makes one ``select`` call: the wall time of that call (cold, as
on the command line: the first call in the process; its CPU time too, since the machine is
shared and wall time follows its load) and the process's peak RSS, ``getrusage(RUSAGE_SELF).ru_maxrss`` at its
end, which includes the interpreter, numpy, fastmwem and the ``8 d`` bytes of counts; the
``/usr/bin/time`` maximum resident set of the same process is recorded beside it when that tool
exists. ``RUSAGE_CHILDREN`` is not used: its ``ru_maxrss`` is the largest over every child
waited for so far, so a parent that runs several children reads an earlier, bigger child's peak.

The code before this change is run from a clean export of commit e2f81e2 when ``--old-src`` is
given (``git archive e2f81e2 src | tar -x -C /tmp/joint-old``, then
``--old-src /tmp/joint-old/src``); old and new alternate on each input, so a change in the load
of the (shared) machine hits both alike. The load average is recorded.

Run: ``python benchmarks/topk_joint_scale.py [--old-src DIR] [--sizes 1000000 10000000]
[--draws 10] [--merge]``. Writes benchmarks/results/topk_joint_scale.json and .png; with
``--merge`` the sizes run replace theirs in an existing JSON and the others are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
K = 1_000
EPSILON = 1.0
GOAL_SECONDS = 1.5
GOAL_MB = 400.0
OLD_COMMIT = "e2f81e2"

_CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
counts = np.load(sys.argv[1])
from fastmwem.mechanisms.topk import JointTopK
mech = JointTopK(int(sys.argv[2]), float(sys.argv[3]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), time.process_time()
out = mech.select(counts)
seconds, cpu = time.perf_counter() - t, time.process_time() - c
ok = len(set(out.tolist())) == int(sys.argv[2])
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "ok": ok,
                  "peak_rss_before_call_mb": before,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def inputs(d: int, draws: int) -> dict[str, np.ndarray]:
    """The count vectors of one size, by label."""
    out = {}
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        out[f"lognormal seed {seed}"] = np.rint(rng.lognormal(3.0, 2.0, d)).astype(np.int64)
    out["all distinct"] = np.random.default_rng(100).permutation(d).astype(np.int64)
    out["all equal"] = np.full(d, 100, dtype=np.int64)
    out["heavy ties (0..4)"] = np.random.default_rng(101).integers(0, 5, d).astype(np.int64)
    return out


def measure(src: str, path: str, workdir: str) -> dict:
    """One call in a fresh process running the sources under ``src``."""
    env = dict(os.environ, PYTHONPATH=src, PYTHONWARNINGS="ignore")
    cmd = [sys.executable, "-c", _CHILD, path, str(K), str(EPSILON)]
    timer = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    report = os.path.join(workdir, "time.txt")
    if timer:
        cmd = [timer, "-f", "%M", "-o", report] + cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    if timer:
        with open(report) as fh:
            row["time_max_rss_mb"] = int(fh.read().split()[-1]) / 1024
    return row


def summarize(rows: dict[str, dict]) -> dict:
    """Median and worst over the log-normal draws; every input's figures as they are."""
    draws = [r for label, r in rows.items() if label.startswith("lognormal") and "error" not in r]
    out: dict = {}
    if draws:
        out["lognormal"] = {"draws": len(draws)}
        for key, name in [("seconds", "seconds"), ("cpu_seconds", "cpu_seconds"),
                          ("peak_rss_mb", "peak_mb")]:
            vals = [r[key] for r in draws]
            out["lognormal"][f"median_{name}"] = float(np.median(vals))
            out["lognormal"][f"worst_{name}"] = float(np.max(vals))
    every = [r for r in rows.values() if "error" not in r]
    if every:
        out["every_input"] = {"worst_seconds": max(r["seconds"] for r in every),
                              "worst_cpu_seconds": max(r["cpu_seconds"] for r in every),
                              "worst_peak_mb": max(r["peak_rss_mb"] for r in every)}
    return out


def run_size(d: int, draws: int, old_src: str | None) -> dict:
    versions = {"new": SRC} if old_src is None else {"old": old_src, "new": SRC}
    rows: dict[str, dict[str, dict]] = {v: {} for v in versions}
    workdir = tempfile.mkdtemp(prefix="topk_joint_scale_")
    try:
        for label, counts in inputs(d, draws).items():
            path = os.path.join(workdir, "counts.npy")
            np.save(path, counts)
            del counts
            for version, src in versions.items():
                row = measure(src, path, workdir)
                row["load_average"] = os.getloadavg()[0]
                rows[version][label] = row
                shown = (f"{row['seconds']:6.2f} s (cpu {row['cpu_seconds']:5.2f} s) "
                         f"{row['peak_rss_mb']:7.1f} MB"
                         if "error" not in row else row["error"])
                print(f"d={d:>10,} {version:3s} {label:20s} {shown}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"d": d, "runs": rows, "summary": {v: summarize(r) for v, r in rows.items()}}


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(result["sizes"].values(), key=lambda s: s["d"])
    fig, axes = plt.subplots(len(sizes), 2, figsize=(12, 3.6 * len(sizes)), squeeze=False)
    for row_axes, size in zip(axes, sizes):
        versions = list(size["runs"])
        labels = list(size["runs"][versions[-1]])
        x = np.arange(len(labels))
        width = 0.8 / len(versions)
        for col, (key, unit, goal) in enumerate([("seconds", "seconds (one call, cold)",
                                                  GOAL_SECONDS),
                                                 ("peak_rss_mb", "peak RSS of the process, MB",
                                                  GOAL_MB)]):
            ax = row_axes[col]
            for j, version in enumerate(versions):
                vals = [size["runs"][version].get(lab, {}).get(key, np.nan) for lab in labels]
                name = f"before ({OLD_COMMIT})" if version == "old" else "this change"
                ax.bar(x + (j - (len(versions) - 1) / 2) * width, vals, width, label=name)
            if size["d"] == 10**7:
                ax.axhline(goal, color="k", ls="--", lw=0.8, label="goal at d = 10^7")
            ax.set_xticks(x)
            ax.set_xticklabels([lab.replace("lognormal seed ", "ln ") for lab in labels],
                               rotation=45, ha="right", fontsize=7)
            ax.set_ylabel(unit)
            ax.set_ylim(top=ax.get_ylim()[1] * 1.3)  # room for the legend
            ax.set_title(f"joint top-k, d = {size['d']:,}, k = {K:,}, eps = {EPSILON:g}",
                         fontsize=9)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-src", help=f"src/ of a clean export of commit {OLD_COMMIT}")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--merge", action="store_true",
                        help="keep the other sizes of an existing results file")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the PNG from the existing results file")
    args = parser.parse_args()
    json_path = os.path.join(RESULTS, "topk_joint_scale.json")
    if args.plot_only:
        with open(json_path) as fh:
            plot(json.load(fh), os.path.join(RESULTS, "topk_joint_scale.png"))
        return
    result: dict = {"sizes": {}}
    if args.merge and os.path.exists(json_path):
        with open(json_path) as fh:
            result = json.load(fh)
    result.update({
        "k": K, "epsilon": EPSILON, "neighbors": "add-remove", "old_commit": OLD_COMMIT,
        "goals_at_1e7": {"seconds": GOAL_SECONDS, "peak_rss_mb": GOAL_MB},
        "counts": "rint(lognormal(3, 2)) int64, default_rng(seed), seeds 0..draws-1; all "
                  "distinct = default_rng(100).permutation(d); all equal = 100; heavy ties = "
                  "default_rng(101).integers(0, 5, d)",
        "measure": "one fresh process per call: wall (and CPU) time of the first select() "
                   "(cold), "
                   "peak RSS = getrusage(RUSAGE_SELF).ru_maxrss of that process (counts "
                   "included), time_max_rss_mb = /usr/bin/time %M of the same process",
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "cpus": os.cpu_count(), "platform": platform.platform()},
    })
    for d in args.sizes:
        result["sizes"][f"d={d}"] = run_size(d, args.draws, args.old_src)
    os.makedirs(RESULTS, exist_ok=True)
    with open(json_path, "w") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    plot(result, os.path.join(RESULTS, "topk_joint_scale.png"))
    for key, size in result["sizes"].items():
        print(key, json.dumps(size["summary"], indent=1))


if __name__ == "__main__":
    main()
