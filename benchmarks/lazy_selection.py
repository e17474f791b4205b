"""Per-selection time of the exponential mechanism over m random counting queries: classic vs lazy.

Fast-MWEM's selection step (Fast-MWEM, arXiv:2602.03732, Fig. 4, App. I.1). The keys are ``m``
random 0/1 queries over ``|X| = d`` cells, complement-closed (``N = 2m`` candidates, the negations
never stored), the query vector is ``v = h - p`` (``h`` a histogram of ``n`` records drawn from a
Dirichlet(0.5) distribution, ``p`` a Dirichlet(1) synthetic distribution), the scores
``<q, v>`` have sensitivity ``1/n``, and every selection is one draw of the exponential mechanism
with ``epsilon0``:

* ``classic``: a float32 scan of all m scores (one BLAS product), then Gumbel-max over all 2m
  candidates (MWEM's selection today);
* ``lazy+<index>``: ``LazyExponentialMechanism(index, complement=True)``, ``k = ceil(sqrt(2m))``:
  an exact top-k search plus the lazy Gumbel tail. Exact indices: flat (float32 scan + exact
  rescoring), bitpacked (numba, and its numpy fallback), faiss:Flat. With ``--ann``: faiss IVF
  and HNSW and hnswlib, approximate (run with ``allow_uncertified``: no privacy guarantee).

Beside each time: recall@k of the top set against the exact one, the mean number of tail
candidates drawn against the bound ``(N - k) / (k + 1)``, where the time goes (the oracle's
search alone, the mechanism's top set, the lazy sampler given the top set), build time and key
memory. Every time is wall time, with the process's CPU time beside it (all its threads: BLAS
and numba workers included), which a busy machine inflates less. All methods run side by side
in one process on the same queries, so the ratios are measured, not projected. Median of
``--repeats`` selections (5 query vectors in turn), the methods interleaved round by round,
each timed selection right after ``--settle`` seconds (at least one run) of untimed selections
of the same method on other query vectors, as in an MWEM run, where the rounds' selections
follow one another (``--cold``: right after the other methods' selections instead, so that
the keys of a lazy index must come back from memory after the classic scan of gigabytes
evicted them). On this 2-core virtual machine the cores need tens of milliseconds of work to
come back to full speed after another method's run left one idle (a 70 ms classic selection
is mostly one core; measured: the lazy selection right after it took 6.4, 4.5, 4.5, 4.9 ...
ms, and 3.4 ms after about 50 ms of its own work), so one untimed run (5 ms) is not enough;
seeded PCG64 for every method (the library default, ChaCha20, is slower for the 2m Gumbels of
the classic method).

Run: ``nice python benchmarks/lazy_selection.py [--quick] [--ann]``. Writes
benchmarks/results/lazy_selection.json and .png.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
import warnings

# OpenMP workers (numba's parallel scan, faiss) otherwise spin after each parallel region and
# steal the cores from the BLAS threads of the next method measured; OpenBLAS's workers spin
# for 2^28 cycles (about 0.1 s) after each product, into the next method's time (measured:
# the lazy selection after a classic one took twice as long), unless told 2^4. Both are read
# when the libraries load.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402

from fastmwem.indices import make_index, numba_available  # noqa: E402
from fastmwem.mechanisms import LazyExponentialMechanism  # noqa: E402
from fastmwem.mechanisms.lazy import UncertifiedOracleWarning  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
N_QUERIES = 5


def random_packed(m: int, d: int, seed: int) -> np.ndarray:
    """``m`` random 0/1 keys of length ``d`` (a multiple of 8), bit-packed."""
    return np.random.default_rng(seed).integers(0, 256, size=(m, d // 8), dtype=np.uint8)


def unpacked_f32(packed: np.ndarray, d: int) -> np.ndarray:
    out = np.empty((packed.shape[0], d), dtype=np.float32)
    for s in range(0, packed.shape[0], 65536):
        out[s:s + 65536] = np.unpackbits(packed[s:s + 65536], axis=1, count=d)
    return out


def query_vectors(d: int, n_records: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N_QUERIES):
        h = rng.multinomial(n_records, rng.dirichlet(np.full(d, 0.5))) / n_records
        out.append(h - rng.dirichlet(np.ones(d)))
    return out


def classic_select(keys: np.ndarray, v: np.ndarray, scale: float,
                   rng: np.random.Generator) -> int:
    """MWEM's selection: every score by a float32 scan, then Gumbel-max over 2m candidates."""
    s = (keys @ v.astype(np.float32)).astype(np.float64)
    logits = np.concatenate([s, -s])
    logits -= logits.max()
    logits *= scale
    return int(np.argmax(logits + rng.gumbel(size=logits.size)))


def _mean_time(fn, *args, runs: int = 5) -> float:
    t = time.perf_counter()
    for _ in range(runs):
        fn(*args)
    return (time.perf_counter() - t) / runs


def lazy_quality(mech: LazyExponentialMechanism, queries: list[np.ndarray],
                 reference: list[np.ndarray]) -> dict:
    """Recall@k of the mechanism's top set against the exact one, and where a selection's time
    goes: the oracle's search alone, the mechanism's top set (search + merging the signs), and
    the lazy sampler given the top set (medians over the queries, 5 runs each)."""
    k = mech._k_for(mech.n_candidates, 0)
    empty = np.empty(0, dtype=np.int64)
    search = getattr(mech.oracle, "search_abs", mech.oracle.search)
    recalls, times = [], {"search_ms": [], "top_ms": [], "sampler_ms": []}
    for q, ref in zip(queries, reference):
        ids, scores = mech._top(q, k, empty)
        recalls.append(np.intersect1d(ids, ref).size / ref.size)
        times["search_ms"].append(_mean_time(search, q[None, :], k))
        times["top_ms"].append(_mean_time(mech._top, q, k, empty))
        times["sampler_ms"].append(_mean_time(mech._draw, q, ids, scores, empty,
                                              np.random.default_rng(7)))
    return {"recall_mean": float(np.mean(recalls)), "recall_min": float(np.min(recalls)),
            **{name: 1e3 * float(np.median(values)) for name, values in times.items()}}


def index_specs(m: int, d: int, args: argparse.Namespace) -> list[tuple[str, str, dict]]:
    """(method name, make_index spec, options) for this size."""
    float_gb = 4 * m * d / 1e9
    # the first spec is exact and gives the reference top sets for recall@k
    specs = [("lazy+bitpacked (1 thread)", "bitpacked", {"threads": 1})]
    if numba_available():
        specs.append(("lazy+bitpacked (numpy fallback)", "bitpacked", {"backend": "numpy"}))
    if float_gb <= args.max_float_gb:
        specs.append(("lazy+flat", "flat", {}))
    try:
        import faiss  # noqa: F401

        has_faiss = True
    except ImportError:
        has_faiss = False
    if has_faiss and float_gb <= args.faiss_max_gb:
        specs.append(("lazy+faiss:Flat (1 thread)", "faiss:Flat", {"threads": 1}))
        if args.ann:
            nlist = max(16, int(math.sqrt(m)))
            specs.append(("lazy+faiss:IVF(sqrt m),Flat (nprobe nlist/8)",
                          f"faiss:IVF{nlist},Flat",
                          {"params": {"nprobe": max(1, nlist // 8)}, "threads": 1}))
    if args.ann and m <= args.hnsw_max:
        if has_faiss and float_gb <= args.faiss_max_gb:
            specs.append(("lazy+faiss:HNSW32 (efSearch 256)", "faiss:HNSW32",
                          {"params": {"efSearch": 256}, "threads": 1}))
        try:
            import hnswlib  # noqa: F401

            specs.append(("lazy+hnswlib (M 32, ef 256)", "hnswlib",
                          {"M": 32, "ef_construction": 100, "ef": 256}))
        except ImportError:
            pass
    cores = os.cpu_count() or 1
    if numba_available() and cores > 1:
        specs.insert(1, (f"lazy+bitpacked ({cores} threads)", "bitpacked", {"threads": cores}))
    return specs


def build(spec: str, options: dict, packed: np.ndarray, d: int):
    if spec == "bitpacked":
        index = make_index(spec, dimension=d, **options)
        index.add_packed(packed)
        return index
    dense = unpacked_f32(packed, d)
    return make_index(spec, dense, **options)


def run_size(m: int, d: int, args: argparse.Namespace) -> list[dict]:
    """Build every method for this size, then time them round-robin: one selection of each per
    round, so that a change of machine load hits every method alike."""
    packed = random_packed(m, d, seed=m + d)
    queries = query_vectors(d, args.n_records, seed=d)
    scale = args.epsilon0 * args.n_records / 2  # epsilon0 / (2 * sensitivity), sensitivity 1/n
    k = math.isqrt(2 * m - 1) + 1
    base = {"d": d, "m": m, "N": 2 * m, "k": k, "tail_bound": (2 * m - k) / (k + 1)}
    calibration = {"epsilon": args.epsilon0, "sensitivity": 1 / args.n_records,
                   "complement": True}
    empty = np.empty(0, dtype=np.int64)

    methods: list[dict] = []
    classic_keys = None
    for name, spec, options in index_specs(m, d, args):
        t = time.perf_counter()
        index = build(spec, options, packed, d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UncertifiedOracleWarning)
            mech = LazyExponentialMechanism(index, allow_uncertified=not index.exact,
                                            **calibration)
        methods.append({"method": name, "mech": mech, "exact": bool(index.exact),
                        "build_s": time.perf_counter() - t,
                        "key_bytes": index.nbytes if spec == "bitpacked" else 4 * m * d,
                        "repeats": args.repeats if "numpy" not in name
                        else max(3, args.repeats // 3)})
        if spec == "flat":  # the classic selection scans the same float32 matrix
            classic_keys = index._keys
    if classic_keys is None and 4 * m * d / 1e9 <= args.max_float_gb:
        classic_keys = unpacked_f32(packed, d)
    reference = [methods[0]["mech"]._top(q, k, empty)[0] for q in queries]  # an exact index

    rng = np.random.default_rng(1)
    runners = [(meth, lambda r, mech=meth["mech"]: mech.select_with_stats(
        queries[r % N_QUERIES], rng=100 + r)) for meth in methods]
    if classic_keys is not None:
        classic = {"method": "classic", "exact": True, "build_s": 0.0, "key_bytes": 4 * m * d,
                   "repeats": args.repeats}
        runners.insert(0, (classic, lambda r: classic_select(
            classic_keys, queries[r % N_QUERIES], scale, rng)))
    for meth, run in runners:
        run(0)  # warm-up: compiled kernels, caches
        meth["times"], meth["cpu"], meth["stats"] = [], [], []
    for r in range(args.repeats):
        for meth, run in runners:
            if r < meth["repeats"]:
                _settle(run, r, 0.0 if args.cold else args.settle)
                t, c = time.perf_counter(), time.process_time()
                out = run(r)
                meth["times"].append(time.perf_counter() - t)
                meth["cpu"].append(time.process_time() - c)
                meth["stats"].append(out)

    rows = []
    for meth, _ in runners:
        row = {**base, **{key: meth[key] for key in ("method", "exact", "build_s", "key_bytes")},
               **_summary(meth["times"]),
               "cpu_median_ms": 1e3 * float(np.median(meth["cpu"]))}
        if "mech" in meth:
            tails = np.array([s.n_tail for s in meth["stats"]])
            row.update(lazy_quality(meth["mech"], queries, reference), tail_mean=float(
                tails.mean()), tail_max=int(tails.max()),
                from_tail=int(sum(s.from_tail for s in meth["stats"])))
        else:
            row.update(recall_mean=1.0, recall_min=1.0, tail_mean=float(2 * m), tail_max=2 * m)
        rows.append(row)
        _print(row)
    for row in rows:
        if classic_keys is not None:
            row["speedup_vs_classic"] = rows[0]["median_ms"] / row["median_ms"]
            row["cpu_speedup_vs_classic"] = rows[0]["cpu_median_ms"] / row["cpu_median_ms"]
    return rows


def _settle(run, r: int, seconds: float) -> None:
    """Untimed selections on query vectors other than round ``r``'s for ``seconds`` (at least
    one if > 0): none leaves ``r``'s query tables cached for the timed one."""
    if seconds <= 0:
        return
    end = time.perf_counter() + seconds
    i = 0
    while True:
        run(r + 1 + i % (N_QUERIES - 1))
        i += 1
        if time.perf_counter() >= end:
            return


def _summary(times: list[float]) -> dict:
    arr = 1e3 * np.asarray(times)
    return {"median_ms": float(np.median(arr)), "p90_ms": float(np.percentile(arr, 90)),
            "min_ms": float(arr.min()), "repeats": int(arr.size)}


def _print(row: dict) -> None:
    print(f"d={row['d']:5d} m={row['m']:8d} {row['method']:38s} median {row['median_ms']:9.2f} ms"
          f"  p90 {row['p90_ms']:9.2f}  recall {row['recall_mean']:.3f}"
          f"  tail {row['tail_mean']:9.1f} (bound {row['tail_bound']:.0f})"
          f"  build {row['build_s']:6.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--repeats", type=int, default=15)
    # epsilon = 1 over T = 100 rounds at delta = 1e-6 by advanced composition
    parser.add_argument("--epsilon0", type=float, default=0.027)
    parser.add_argument("--n-records", type=int, default=10_000)
    parser.add_argument("--max-float-gb", type=float, default=4.5,
                        help="largest float32 key matrix for classic and flat")
    parser.add_argument("--faiss-max-gb", type=float, default=1.1,
                        help="largest float32 key matrix copied into faiss")
    parser.add_argument("--ann", action="store_true", help="also IVF, HNSW and hnswlib")
    parser.add_argument("--hnsw-max", type=float, default=1e4, help="largest m for HNSW builds")
    parser.add_argument("--settle", type=float, default=0.05,
                        help="seconds of untimed selections of a method before each timed one")
    parser.add_argument("--cold", action="store_true",
                        help="time each selection right after the other methods' (caches "
                             "cold) instead of right after one of its own")
    parser.add_argument("--quick", action="store_true", help="m = 1e4, 1e5 at d = 256 only")
    parser.add_argument("--output", default="lazy_selection")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.dims = [1e4, 1e5], [256]
    load_before = os.getloadavg()
    rows = []
    for d in args.dims:
        for m in args.sizes:
            rows.extend(run_size(int(m), d, args))
    meta = {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
            "numba": numba_available(), "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(), "args": vars(args)}
    os.makedirs(RESULTS, exist_ok=True)
    target = os.path.join(RESULTS, f"{args.output}.json")
    with open(target + ".tmp", "w", encoding="utf-8") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=1)
    os.replace(target + ".tmp", target)
    plot(rows, os.path.join(RESULTS, f"{args.output}.png"))


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = sorted({r["d"] for r in rows})
    fig, axes = plt.subplots(2, len(dims), figsize=(7 * len(dims), 9), squeeze=False,
                             gridspec_kw={"height_ratios": [2, 1]})
    for ax, d in zip(axes[1], dims):
        lazy = sorted((r["m"], r["tail_mean"], r["tail_bound"]) for r in rows
                      if r["d"] == d and r["method"] == "lazy+bitpacked (1 thread)")
        ax.plot([p[0] for p in lazy], [p[1] for p in lazy], marker="o", label="mean tail drawn")
        ax.plot([p[0] for p in lazy], [p[2] for p in lazy], linestyle="--",
                label="bound (N - k) / (k + 1)")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("m")
        ax.set_ylabel("tail candidates per selection")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax, d in zip(axes[0], dims):
        mine = [r for r in rows if r["d"] == d]
        for method in dict.fromkeys(r["method"] for r in mine):
            pts = sorted((r["m"], r["median_ms"], r["recall_mean"]) for r in mine
                         if r["method"] == method)
            ms = [p[0] for p in pts]
            ax.plot(ms, [p[1] for p in pts], marker="o",
                    linestyle="--" if method == "classic" else "-",
                    label=f"{method} (recall@k {min(p[2] for p in pts):.2f})")
            last = pts[-1]
            ratio = next((r.get("speedup_vs_classic") for r in mine
                          if r["method"] == method and r["m"] == last[0]), None)
            if ratio and method != "classic":
                ax.annotate(f"{ratio:.1f}x", (last[0], last[1]), textcoords="offset points",
                            xytext=(6, 0), fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("m (random 0/1 queries; N = 2m candidates, k = ceil(sqrt(N)))")
        ax.set_ylabel("time per selection, ms (median)")
        ax.set_title(f"|X| = {d}: exponential mechanism, classic vs lazy")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
