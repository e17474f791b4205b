"""Figure 3 of Gillenwater et al. (2022): time of every top-k method vs k at d = 166,000.

Counts are a Foods-like heavy-tailed vector, ``ceil(exp(N(1.0, 1.4)))`` drawn with
``numpy.random.default_rng(7)`` (about 1.3M total count, a top count near
1,500-2,000, a quarter of the items at count 1). epsilon = 1, add-remove neighbours, CDP-Peel at
delta = 1e-6. Each point is the median wall time (``time.perf_counter``) of ``--repeats`` calls
after one warm-up call, single process; in each repeat the methods take turns, so changes in the
load of a shared machine hit them alike (the load average is recorded).

Peak memory of Joint (and PNF-Joint) at k = 200 is measured in a fresh Python subprocess per
method: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after one call, which includes the
interpreter, numpy, the imports of fastmwem and the 166,000 counts. The current RSS just before
the call, and the peak of the call's own allocations (``tracemalloc``, which numpy reports to)
in a second call, are recorded too.

Run: ``python benchmarks/topk_time.py [--repeats 5] [--quick]``. Writes
benchmarks/results/topk_time.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

from fastmwem.mechanisms.topk import METHODS

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
D = 166_000
EPSILON = 1.0
DELTA = 1e-6

#: Figures measured once, separately, with the peers' own code on a 2-core machine (numpy 2.2.6),
#: same counts recipe; not re-run here.
PEERS = {
    "reference Joint (google-research dp_topk)": {
        "k=5": {"seconds": 1.18, "peak_mb": 92}, "k=50": {"seconds": 51.4, "peak_mb": 548},
        "k=200": {"seconds": 171.5, "peak_mb": 2067}},
    "reference PNF-Joint": {"k=5": {"seconds": 0.96, "peak_mb": 113},
                            "k=50": {"seconds": 68.7, "peak_mb": 747},
                            "k=200": "fails (RuntimeError: MaxExpo inf)"},
    "Wu & Zhang FastTopk (pruned joint)": {"k=200": {"seconds": 0.35, "peak_mb": 120}},
}

_CHILD = r"""
import resource, sys, time, json, tracemalloc
import numpy as np
from fastmwem.mechanisms.topk import METHODS
rng = np.random.default_rng(7)
counts = np.ceil(np.exp(rng.normal(1.0, 1.4, {d}))).astype(np.int64)
mech = METHODS[{method!r}]({k}, {eps})
def current_rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
before = current_rss_mb()
max_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
out = mech.select(counts, rng=1)
secs = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
assert len(set(out.tolist())) == {k}
tracemalloc.start()
mech.select(counts, rng=2)
traced = tracemalloc.get_traced_memory()[1] / 2**20
tracemalloc.stop()
print(json.dumps({{"rss_before_call_mb": before, "max_rss_before_call_mb": max_before,
                  "peak_rss_mb": peak, "call_peak_traced_alloc_mb": traced,
                  "cold_call_seconds": secs}}))
"""


def foods_like(d: int = D, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.ceil(np.exp(rng.normal(1.0, 1.4, d))).astype(np.int64)


def make(method: str, k: int):
    cls = METHODS[method]
    if method == "cdp-peel":
        return cls(k, EPSILON, DELTA)
    return cls(k, EPSILON)


def time_all(k: int, counts: np.ndarray, repeats: int) -> dict[str, dict]:
    """Median wall time of every method at one k; the methods take turns in each repeat, so a
    change in the machine's load (it is shared) affects them alike."""
    mechs = {method: make(method, k) for method in METHODS}
    for mech in mechs.values():
        mech.select(counts, rng=0)  # warm-up
    times: dict[str, list[float]] = {method: [] for method in METHODS}
    for r in range(repeats):
        for method, mech in mechs.items():
            t = time.perf_counter()
            out = mech.select(counts, rng=r + 1)
            times[method].append(time.perf_counter() - t)
            if len(set(out.tolist())) != k:
                raise RuntimeError(f"{method} returned a repeated item")
    return {method: {"k": k, "median": float(np.median(ts)), "min": float(np.min(ts)),
                     "max": float(np.max(ts)), "runs": ts} for method, ts in times.items()}


def peak_memory(method: str, k: int) -> dict:
    code = _CHILD.format(d=D, method=method, k=k, eps=EPSILON)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for method, rows in result["times"].items():
        ks = [r["k"] for r in rows]
        ax.plot(ks, [r["median"] for r in rows], marker="o", ms=3, label=method)
    ref = PEERS["reference Joint (google-research dp_topk)"]
    ax.plot([5, 50, 200], [ref["k=5"]["seconds"], ref["k=50"]["seconds"],
                           ref["k=200"]["seconds"]], "k--", marker="x",
            label="reference Joint (spec, 2-core)")
    ax.plot([200], [0.35], "r*", ms=10, label="Wu & Zhang (spec, 2-core)")
    ax.set_yscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"Top-k time, d = {D:,}, eps = {EPSILON}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="k in {5, 50, 200} only")
    args = parser.parse_args()
    counts = foods_like()
    ks = [5, 50, 200] if args.quick else [5] + list(range(25, 201, 25))
    result: dict = {
        "d": D, "epsilon": EPSILON, "cdp_delta": DELTA, "ks": ks, "repeats": args.repeats,
        "counts": {"recipe": "ceil(exp(N(1.0, 1.4))), numpy default_rng(7)",
                   "total": int(counts.sum()), "max": int(counts.max()),
                   "share_of_ones": float(np.mean(counts == 1))},
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_at_start": list(os.getloadavg())},
        "times": {}, "peak_memory_k200": {}, "peers_from_spec": PEERS,
    }
    result["times"] = {method: [] for method in METHODS}
    for k in ks:
        for method, row in time_all(k, counts, args.repeats).items():
            result["times"][method].append(row)
            print(f"{method:13s} k={k:3d} median {row['median']:.4f} s", flush=True)
    result["machine"]["load_average_after_timing"] = list(os.getloadavg())
    for method in ("joint", "pnf-joint", "pruned-joint"):
        result["peak_memory_k200"][method] = peak_memory(method, 200)
        print(method, "peak", result["peak_memory_k200"][method], flush=True)
    joint_rows = {r["k"]: r["median"] for r in result["times"]["joint"]}
    pnf_rows = {r["k"]: r["median"] for r in result["times"]["pnf-joint"]}
    result["goals"] = {
        "joint_k200_seconds": joint_rows.get(200), "joint_k200_goal_seconds": 0.3,
        "joint_k50_seconds": joint_rows.get(50), "joint_k50_goal_seconds": 0.1,
        "joint_k200_peak_mb": result["peak_memory_k200"]["joint"]["peak_rss_mb"],
        "joint_k200_goal_mb": 200,
        "pnf_joint_over_joint_k200": pnf_rows[200] / joint_rows[200],
        "pnf_joint_goal_ratio": 2.0,
    }
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "topk_time.json"), "w") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    plot(result, os.path.join(RESULTS, "topk_time.png"))
    print(json.dumps(result["goals"], indent=2))


if __name__ == "__main__":
    main()
