"""Tails of the lazy selection: median and WORST time per selection against the classic scan,
the code before this change beside the code after it, in one run.

Fast-MWEM's lazy exponential mechanism (Fast-MWEM, arXiv:2602.03732) samples the exponential
mechanism's law from an exact top-k search. Goals: at ``m = 10^6`` the median selection at least
20x faster than the classic scan, and the WORST at least 5x, for

* the bit-packed index of ``m`` random counting queries (``RandomCountingQueries``) at
  ``|X| = 256`` and ``1,024``, over ``--vectors`` query vectors of each of four kinds: the
  difference of two Dirichlet distributions times 10^4 (like MWEM's rounds, ``h - n a``),
  Gaussian times 10, 8 non-zero coordinates times 100 (scores with huge ties), and the
  ``h - n a`` of the rounds of a real MWEM run (epsilon 1, lazy selection, single queries over
  the same ``m`` queries) on the public NLTCS table's first 8 (10) binary attributes, and
  (``mwem-digits``, held out: no constant of the search was chosen on them) on the digits
  table's 8 (10) central pixels (``benchmarks/data/suite/digits.csv.gz``). One
  selection per vector: the lazy mechanism with MWEM's round law (``|score|``,
  ``k = ceil(sqrt(m))``, epsilon 0.05, sensitivity 1); the classic one computes all ``m``
  answers as MWEM's classic round does (``workload.answer``, byte tables) and draws the same
  law by Gumbel-max over them (``ExponentialMechanism``);
* the scalar LP's warm-start index (``WarmStartIndex``, ``m = 10^6`` constraints, ``d = 50``,
  the instance of ``lp_time.py``), over the ``--rounds`` queries of a multiplicative-weights
  run (its own iterates: what the index is for), against the classic selection over float64
  ``A`` (the faster classic variant of ``lp_time.py``). The first round has no reference yet
  (a full scan in both codes) and is reported apart.

Old and new code each run in a child process: the old from ``git archive <--old-rev> src``
(extracted to ``--old-src``, default ``/tmp/lazy-old``), the new from this checkout's ``src``;
each child measures the lazy and the classic selections interleaved (a classic selection every
few vectors, then a few untimed lazy ones so the keys are back in cache), so each ratio is
taken under the same load. ``--repeat N`` runs the old and the new child N times each,
alternating (the same vectors and rounds every time); the summary then pools the selections of
all runs (the worst is the worst of all), and ``runs`` keeps each run's own summary. Every
child runs with ONE thread for numba, OpenBLAS and OpenMP (``NUMBA_NUM_THREADS=1``...),
classic and lazy alike, at the caller's priority (run it at
normal priority: other jobs of the machine run at nice 19, which autogroup scheduling does not
always honour). Wall time (``perf_counter``) and the thread's CPU time are both recorded; the
ratios are computed on both. The worst ratio is the classic median over the lazy worst. The new
code's search counters are kept per kind: searches, second looks, keys those rescanned, and
searches on 16 bit planes (queries whose 10-bit window is wide against their scores' spread,
as in MWEM's first rounds on NLTCS, a skewed table).

Run: ``python benchmarks/lazy_selection_tails.py [--quick]``. Writes
benchmarks/results/lazy_selection_tails.json and .png. About 8 minutes (``--quick``: m = 10^5,
20 vectors, a minute). The warm-start index alone, against another old revision, into other
files: ``--warm-only --old-rev 007fd4c --old-src /tmp/lazy-old-007fd4c --output
lazy_selection_tails_warm`` (about two minutes; pin it with ``taskset -c 0`` on a shared
machine).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREAD_ENV = {name: "1" for name in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
KINDS = ("dirichlet", "gaussian", "sparse", "mwem", "mwem-digits")
# The digits table's central pixels, centre outwards (chosen before any timing): the columns
# of the held-out MWEM vectors (no constant of the search was chosen on them).
DIGITS_PIXELS = ("p33", "p34", "p43", "p44", "p32", "p35", "p42", "p45", "p23", "p24")
# A classic selection every CLASSIC_EVERY lazy ones, then SETTLE untimed lazy selections.
CLASSIC_EVERY, SETTLE = 6, 3


# -- children ------------------------------------------------------------------------------
def _vector(kind: str, d: int, rng) -> object:
    import numpy as np

    if kind == "dirichlet":
        return (rng.dirichlet(np.full(d, 0.5)) - rng.dirichlet(np.ones(d))) * 1e4
    if kind == "gaussian":
        return rng.normal(size=d) * 10.0
    v = np.zeros(d)
    v[rng.choice(d, 8, replace=False)] = rng.normal(size=8) * 100.0
    return v


class _RecordingChooser:
    """A round's chooser that records ``h - n a`` (the vector the round's scores are the inner
    products with) before each ``choose``; everything else is the inner chooser's."""

    def __init__(self, inner: object, histogram: object, vectors: list) -> None:
        self.inner, self.histogram, self.vectors = inner, histogram, vectors

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def choose(self, state, available, rng):
        self.vectors.append(self.histogram - state.total * state.distribution)
        return self.inner.choose(state, available, rng)


def _table_bits(table: str, bits: int):
    """The records' first ``bits`` binary columns: NLTCS's, or the digits' central pixels."""
    import gzip

    import numpy as np

    if table == "nltcs":
        from fastmwem.datasets import load_nltcs

        return load_nltcs().records[:, :bits]
    with gzip.open(os.path.join(HERE, "data", "suite", "digits.csv.gz"), "rt") as f:
        header = f.readline().strip().split(",")
        rows = np.loadtxt(f, delimiter=",", dtype=np.int64)
    return rows[:, [header.index(p) for p in DIGITS_PIXELS[:bits]]]


def _mwem_vectors(workload: object, d: int, count: int, seed: int,
                  table: str = "nltcs") -> list:
    """The ``h - n a`` of the ``count`` rounds of a real MWEM run (lazy selection, epsilon 1,
    single queries) on ``log2 d`` binary attributes of a public table (NLTCS's first, or the
    held-out digits' central pixels), over ``workload``."""
    import warnings

    import numpy as np
    from _fast_common import TimedSelection  # the release runs the wrapped selection as is

    from fastmwem import Domain, mwem
    from fastmwem.data import Dataset
    from fastmwem.release.selection import LazySelection

    class Recording(TimedSelection):
        def prepare(self, workload, private, **kwargs):
            return _RecordingChooser(super().prepare(workload, private, **kwargs), histogram,
                                     vectors)

    bits = int(round(math.log2(d)))
    records = _table_bits(table, bits)
    cells = records @ (1 << np.arange(bits - 1, -1, -1))  # row-major code of the projection
    data = Dataset(cells.reshape(-1, 1), Domain(["x"], [d]))
    histogram, vectors = data.histogram().astype(np.float64), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded run warns that it is not private
        mwem(data, workload, epsilon=1.0, rounds=count, selection=Recording(LazySelection()),
             rng=seed, progress=False)
    return vectors


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.thread_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def child_bitpacked(spec: dict) -> dict:
    import numpy as np

    from fastmwem import Domain
    from fastmwem.indices import BitPackedIndex
    from fastmwem.mechanisms import ExponentialMechanism, LazyExponentialMechanism
    from fastmwem.workloads import RandomCountingQueries

    m, d = spec["m"], spec["d"]
    started = time.perf_counter()
    workload = RandomCountingQueries(Domain(["x"], [d]), m, rng=12345)
    index = BitPackedIndex(d, threads=1, progress=False)
    index.add_packed(workload.packed)
    build_s = time.perf_counter() - started
    lazy = LazyExponentialMechanism(index, epsilon=0.05, sensitivity=1.0, absolute=True)
    classic = ExponentialMechanism(epsilon=0.05, sensitivity=1.0)
    generator = np.random.default_rng(7)
    vectors = {kind: [_vector(kind, d, np.random.default_rng([spec["seed"], i, k]))
                      for i in range(spec["vectors"])] for k, kind in enumerate(KINDS)
               if not kind.startswith("mwem")}
    vectors["mwem"] = _mwem_vectors(workload, d, spec["vectors"], spec["seed"])
    vectors["mwem-digits"] = _mwem_vectors(workload, d, spec["vectors"], spec["seed"],
                                           table="digits")
    started = time.perf_counter()
    for v in vectors["dirichlet"][:5]:  # warm-up: numba's compile or cache load, the caches
        lazy.select(v, rng=generator)
    warm_up_s = time.perf_counter() - started

    def select_classic(v: object) -> tuple[float, float]:
        start = _clock()
        classic.select(np.abs(workload.answer(v)), rng=generator)
        return _since(start)

    out: dict = {"build_s": build_s, "warm_up_s": warm_up_s, "kinds": {}}
    for kind in KINDS:
        lazy_wall, lazy_cpu, classic_wall, classic_cpu, counters = [], [], [], [], []
        before = _counters(index)
        for i, v in enumerate(vectors[kind]):
            if i % CLASSIC_EVERY == 0 and len(classic_wall) < spec["classic"]:
                wall, cpu = select_classic(v)
                classic_wall.append(wall)
                classic_cpu.append(cpu)
                for j in range(1, SETTLE + 1):  # untimed: the keys back in cache
                    lazy.select(vectors[kind][i - j], rng=generator)
            start = _clock()
            lazy.select(v, rng=generator)
            wall, cpu = _since(start)
            lazy_wall.append(wall)
            lazy_cpu.append(cpu)
            counters.append(_counters(index))
        out["kinds"][kind] = {"lazy_wall_s": lazy_wall, "lazy_cpu_s": lazy_cpu,
                              "classic_wall_s": classic_wall, "classic_cpu_s": classic_cpu,
                              "counters": _counter_deltas(before, counters)}
    return out


def _counters(index: object) -> list[int] | None:
    """The new code's search counters (searches, second looks, rescanned keys, searches on the
    wide planes); None before they existed (-1 for the wide ones before those existed)."""
    names = ("searches", "second_looks", "rescanned_keys")
    if not all(hasattr(index, n) for n in names):
        return None
    return [int(getattr(index, n)) for n in names] + [int(getattr(index, "wide_searches", -1))]


def _counter_deltas(before: list[int] | None, after: list) -> dict | None:
    if before is None:
        return None
    last = after[-1]
    out = {"searches": last[0] - before[0], "second_looks": last[1] - before[1],
           "rescanned_keys": last[2] - before[2]}
    if last[3] >= 0:
        out["wide_searches"] = last[3] - before[3]
    return out


def child_warm(spec: dict) -> dict:
    import numpy as np

    sys.path.insert(0, HERE)
    from lp_time import DELTA, EPSILON, SENS, T_PLAN, D, instance

    from fastmwem.lp.oracles import scalar_oracle
    from fastmwem.lp.plan import plan_privacy
    from fastmwem.lp.scalar import objective_rows, scalar_selector

    A, b = instance(spec["m"])
    width = 1.0 + float(b.max())
    eps0 = plan_privacy(EPSILON, DELTA, em_rounds=T_PLAN).epsilon0
    started = time.perf_counter()
    oracle = scalar_oracle(A, b, "warm")
    getattr(oracle, "_main_rows", oracle._key_stats)()  # part of the build (as lp_time.py)
    build_s = time.perf_counter() - started
    rows64 = objective_rows(A.astype(np.float64), b, None, None)
    lazy = scalar_selector(objective_rows(A, b, None, None), epsilon0=eps0, sensitivity=SENS,
                           selection="lazy", oracle=oracle)
    classic = scalar_selector(rows64, epsilon0=eps0, sensitivity=SENS, selection="exponential")
    eta = math.sqrt(math.log(D) / T_PLAN)
    logw = np.zeros(D)
    generator = np.random.default_rng(spec["seed"])
    classic_generator = np.random.default_rng(spec["seed"] + 1)
    lazy_wall, lazy_cpu, classic_wall, classic_cpu, events = [], [], [], [], []
    for t in range(spec["rounds"]):
        x = np.exp(logw - logw.max())
        x /= x.sum()
        if t % 10 == 5:  # the classic selection of the same query, not used by the run
            start = _clock()
            classic(x, classic_generator)
            wall, cpu = _since(start)
            classic_wall.append(wall)
            classic_cpu.append(cpu)
        rescans, region = oracle.rescans, oracle.region_rescans
        parts = getattr(oracle, "part_rescans", 0)  # scans of a part's keys (new code)
        start = _clock()
        i = lazy(x, generator)
        wall, cpu = _since(start)
        lazy_wall.append(wall)
        lazy_cpu.append(cpu)
        events.append([oracle.rescans - rescans, oracle.region_rescans - region,
                       getattr(oracle, "part_rescans", 0) - parts])
        logw -= eta * (A[i].astype(np.float64) - b[i]) / width
    return {"build_s": build_s, "kinds": {"lp_iterates": {
        "lazy_wall_s": lazy_wall[1:], "lazy_cpu_s": lazy_cpu[1:], "classic_wall_s": classic_wall,
        "classic_cpu_s": classic_cpu, "first_round_wall_s": lazy_wall[0],
        "first_round_cpu_s": lazy_cpu[0], "full_rescans": int(sum(e[0] for e in events[1:])),
        "region_rescans": int(sum(e[1] for e in events[1:])),
        "part_rescans": int(sum(e[2] for e in events[1:])),
        "parts": len(getattr(oracle, "_part_list", [])) or None,
        "full_rescan_rounds": [t for t, e in enumerate(events) if t and e[0]],
        "events": events[1:]}}}


def child(path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        spec = json.load(fh)
    import numba

    result = child_warm(spec) if spec["index"] == "warm" else child_bitpacked(spec)
    result["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    result["fastmwem_from"] = os.path.dirname(os.path.dirname(
        __import__("fastmwem").__file__))
    with open(spec["out"], "w", encoding="utf-8") as fh:
        json.dump(result, fh)


# -- driver --------------------------------------------------------------------------------
def summarise(kinds: dict) -> dict:
    import numpy as np

    out = {}
    for kind, r in kinds.items():
        entry: dict = {}
        for clock in ("wall", "cpu"):
            lazy = np.asarray(r[f"lazy_{clock}_s"])
            classic = float(np.median(r[f"classic_{clock}_s"]))
            entry[clock] = {
                "lazy_median_ms": 1e3 * float(np.median(lazy)),
                "lazy_p90_ms": 1e3 * float(np.percentile(lazy, 90)),
                "lazy_worst_ms": 1e3 * float(lazy.max()),
                "classic_median_ms": 1e3 * classic,
                "median_ratio": classic / float(np.median(lazy)),
                "worst_ratio": classic / float(lazy.max())}
        entry["selections"] = len(r["lazy_wall_s"])
        entry["classic_selections"] = len(r["classic_wall_s"])
        for key in ("counters", "full_rescans", "region_rescans", "part_rescans", "parts",
                    "full_rescan_rounds", "first_round_wall_s", "first_round_cpu_s"):
            if r.get(key) is not None:
                entry[key] = r[key]
        out[kind] = entry
    return out


def report(per_kind: dict) -> None:
    for kind, e in per_kind.items():
        w, c = e["wall"], e["cpu"]
        print(f"  {kind:12s} lazy median {w['lazy_median_ms']:7.2f} ms worst "
              f"{w['lazy_worst_ms']:7.2f} ms | classic {w['classic_median_ms']:7.1f} ms"
              f" | ratio median {w['median_ratio']:5.1f}x worst {w['worst_ratio']:5.1f}x"
              f" (cpu {c['median_ratio']:5.1f}x / {c['worst_ratio']:5.1f}x)", flush=True)


def pooled(runs: list[dict]) -> dict:
    """The selections of several runs together, kind by kind (lists joined, counts added)."""
    out: dict = {}
    for kinds in runs:
        for kind, r in kinds.items():
            into = out.setdefault(kind, {})
            for key, value in r.items():
                if isinstance(value, list):  # per selection (or event): run after run
                    into.setdefault(key, []).extend(value)
                elif key in ("full_rescans", "region_rescans", "part_rescans"):
                    into[key] = into.get(key, 0) + value
                elif key not in into:
                    into[key] = value
    return out


def run_child(spec: dict, src: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec = {**spec, "out": os.path.join(tmp, "out.json")}
        path = os.path.join(tmp, "spec.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        env = {**os.environ, **THREAD_ENV, "PYTHONPATH": src}
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path], env=env,
                       check=True, cwd=ROOT)
        with open(spec["out"], encoding="utf-8") as fh:
            return json.load(fh)


def old_source(rev: str, target: str) -> str:
    """``git archive <rev> src`` extracted under ``target`` (reused when present)."""
    src = os.path.join(target, "src")
    if not os.path.isdir(os.path.join(src, "fastmwem")):
        os.makedirs(target, exist_ok=True)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "src"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return src


def plot(summary: dict, path: str, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, rows = [], []
    for config, per_kind in summary["configs"].items():
        for kind in per_kind["new"]:
            short = config.replace("bitpacked ", "").replace(" (LP, d=50)", "\n(LP)")
            labels.append(f"{short}\n{kind}")
            rows.append((per_kind["old"][kind]["wall"], per_kind["new"][kind]["wall"]))
    fig, axes = plt.subplots(1, 2, figsize=(max(10.0, 5 + 1.2 * len(labels)), 4.8), sharey=True)
    x = range(len(labels))
    for ax, key, goal, title in ((axes[0], "median_ratio", 20, "median"),
                                 (axes[1], "worst_ratio", 5, "WORST")):
        ax.bar([i - 0.2 for i in x], [r[0][key] for r in rows], 0.4,
               label=f"before ({args.old_rev})",
               color="tab:gray")
        ax.bar([i + 0.2 for i in x], [r[1][key] for r in rows], 0.4, label="after",
               color="tab:blue")
        ax.axhline(goal, color="tab:red", linestyle="--", label=f"goal {goal}x")
        ax.set_yscale("log")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_title(f"classic median / lazy {title} (wall time, one thread)", fontsize=9)
        for i, r in zip(x, rows):  # the ratios on the bars
            for dx, value in ((-0.2, r[0][key]), (0.2, r[1][key])):
                ax.annotate(f"{value:.1f}x", (i + dx, value), ha="center", va="bottom",
                            fontsize=8)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("speed-up over the classic selection")
    fig.suptitle(f"Lazy selection at m = {args.m:.0e}: "
                 + "; ".join(([] if args.warm_only else [f"{args.vectors} vectors per kind"])
                             + ([f"LP warm-start index over {args.rounds} MWU rounds"]
                                if "warm-start (LP, d=50)" in summary["configs"] else []))
                 + (f" ({args.repeat} runs of each code pooled)" if args.repeat > 1 else ""),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--m", type=int, default=10**6)
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--vectors", type=int, default=100, help="per kind")
    parser.add_argument("--classic", type=int, default=15,
                        help="classic selections per kind (its time hardly varies)")
    parser.add_argument("--rounds", type=int, default=200, help="MWU rounds of the LP run")
    parser.add_argument("--no-warm", action="store_true")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each code, alternating (the summary pools their rounds)")
    parser.add_argument("--warm-only", action="store_true",
                        help="only the warm-start index (no bit-packed configurations)")
    parser.add_argument("--old-rev", default="e2f81e2")
    parser.add_argument("--old-src", default="/tmp/lazy-old")
    parser.add_argument("--quick", action="store_true",
                        help="m = 1e5, 20 vectors per kind, 60 LP rounds")
    parser.add_argument("--output", default="lazy_selection_tails")
    parser.add_argument("--replot", action="store_true", help="redraw the PNG from the JSON")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if args.replot:
        stem = os.path.join(RESULTS, args.output)
        with open(stem + ".json", encoding="utf-8") as fh:
            saved = json.load(fh)
        for key in ("m", "vectors_per_kind", "lp_rounds", "old_rev"):
            setattr(args, {"vectors_per_kind": "vectors", "lp_rounds": "rounds"}.get(key, key),
                    saved["meta"][key])
        args.repeat = saved["meta"].get("repeat", 1)
        args.warm_only = not saved["meta"].get("dims", True)
        plot(saved["summary"], stem + ".png", args)
        return
    if args.quick:
        args.m, args.vectors, args.classic, args.rounds = 10**5, 20, 6, 60
    sources = {"old": old_source(args.old_rev, args.old_src), "new": os.path.join(ROOT, "src")}
    configs = [(f"bitpacked |X|={d}", {"index": "bitpacked", "m": args.m, "d": d,
                                      "vectors": args.vectors, "classic": args.classic,
                                      "seed": d}) for d in args.dims]
    if args.warm_only:
        configs, args.dims = [], []
    if not args.no_warm:
        configs.append(("warm-start (LP, d=50)", {"index": "warm", "m": args.m,
                                                  "rounds": args.rounds, "seed": 1}))
    load_before = os.getloadavg()
    started = time.perf_counter()
    raw: dict = {}
    summary: dict = {"configs": {}}
    for name, spec in configs:
        for repeat in range(args.repeat):  # old, new, old, new...: each under its own classic
            for version in ("old", "new"):
                print(f"{name}: {version} code ...", flush=True)
                result = run_child(spec, sources[version])
                runs = raw.setdefault(name, {}).setdefault(version, [])
                runs.append(result)
                report(summarise(result["kinds"]))
                if repeat == args.repeat - 1:  # every run's rounds together
                    summary["configs"].setdefault(name, {})[version] = summarise(
                        pooled([r["kinds"] for r in runs]))
                    if args.repeat > 1:
                        print(f"  all {args.repeat} runs:")
                        report(summary["configs"][name][version])
                        summary.setdefault("runs", {}).setdefault(name, {})[version] = [
                            summarise(r["kinds"]) for r in runs]
        if args.repeat == 1:  # the layout of the earlier results: one run, not a list
            raw[name] = {version: runs[0] for version, runs in raw[name].items()}
    meta = {"m": args.m, "dims": args.dims, "vectors_per_kind": args.vectors,
            "classic_per_kind": args.classic, "lp_rounds": args.rounds,
            "old_rev": args.old_rev, "repeat": args.repeat, "threads": "one: " + ", ".join(
                f"{k}=1" for k in THREAD_ENV) + " in every child, classic and lazy alike",
            "priority": f"nice {os.nice(0)} (the caller's)", "cpus": os.cpu_count(),
            "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
            "cpu_affinity": sorted(os.sched_getaffinity(0)),
            "seconds": time.perf_counter() - started,
            "worst_ratio": "classic median / lazy worst; median_ratio: classic median / lazy "
                           "median; both on wall time and on the thread's CPU time",
            "note": "each child measures its lazy and classic selections interleaved; the old "
                    "and new children run one after the other"}
    os.makedirs(RESULTS, exist_ok=True)
    stem = os.path.join(RESULTS, args.output)
    with open(stem + ".json", "w", encoding="utf-8") as fh:
        json.dump({"meta": meta, "summary": summary, "raw": raw}, fh, indent=1)
    plot(summary, stem + ".png", args)
    print(f"wrote {stem}.json and .png in {meta['seconds']:.0f} s")


if __name__ == "__main__":
    main()
