"""The Fast-MWEM paper's figures (arXiv:2602.03732 s.5.1 and App. I) on random counting queries.

The algorithm is the paper's: offline private multiplicative weights (its Algorithms 1-2,
:func:`fastmwem.release.pmw.offline.pmw`: the exponential mechanism over the complement-closed
query set each round, a multiplicative-weights step, the average of the iterates as output),
with ``selection="exponential"`` (MWEM: all ``2m`` scores each round) or ``selection="lazy"``
(Fast-MWEM: the lazy exponential mechanism over a top-k index). Queries: ``m`` random 0/1 vectors
over ``|X| = 256`` cells (:class:`~fastmwem.workloads.RandomCountingQueries`, drawn once); data:
``n`` records from a Dirichlet(0.5)-multinomial, one draw per seed; privacy ``(1, 1e-6)`` by
zCDP, a noisy record count. The paper's own sizes are lost from its extracted text; ours are in
each JSON (``args``) and chosen to keep each sub-command within a few minutes on the loaded
2-core machine.

Error over iterations: a run releases its selections (``result.selected``); the averaged iterate
after ``t`` rounds is rebuilt from them by the same multiplicative-weights steps (post-processing;
checked against the released output at ``t = T``), and scored by the max and mean absolute error
of its normalised answers over all ``m`` queries.

Sub-commands (each writes ``results/fast_mwem_<name>.json`` and ``.png``):

* ``fig2``: error of Fast-MWEM (flat index) minus MWEM over iterations, per seed on the same
  data, beside MWEM minus MWEM (a second run, another seed of the generator): the run-to-run noise
  the difference should stay within.
* ``fig3``: max error vs iterations for the flat, bit-packed, faiss IVF and faiss HNSW indices
  (and MWEM). IVF and HNSW are approximate without a certificate: they run with
  ``allow_uncertified=True`` and have NO privacy guarantee (labelled so); beside them, their
  recall@k along the run (the top-k sets the lazy mechanism gets on each round's vector, against
  the exact ones).
* ``fig4``: time per iteration vs ``m`` (10^3 .. 10^6) per oracle (MWEM's scan, flat, bit-packed,
  IVF, HNSW), with recall@k beside each time and the index build time; methods take turns.
* ``i1``: the lazy sampler's tail draws along real runs vs ``n`` and vs ``epsilon``: the mean
  number of tail candidates, its fraction of ``N - k`` and the bound ``(N - k) / (k + 1)``.
* ``i2``: error vs iterations for both algorithms for several ``n``.

Run: ``nice python benchmarks/fast_mwem_figures.py {fig2,fig3,fig4,i1,i2,all} [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings

# BLAS on one thread: on the loaded 2-core machine a two-thread float32 product waits ~20 ms for
# its second thread whatever its size (measured: 1e4 x 256 keys, 20 ms on 2 threads, 0.4 ms on
# one), which would swamp the flat index's time at small m. Set before numpy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _fast_common import (  # noqa: E402
    binary_domain,
    dirichlet_multinomial,
    machine,
    pyplot,
    spread,
    write_json,
)

from fastmwem.indices import make_index  # noqa: E402
from fastmwem.mechanisms import LazyExponentialMechanism  # noqa: E402
from fastmwem.release.pmw.offline import OfflinePMWConfig as PMWConfig  # noqa: E402
from fastmwem.release.pmw.offline import pmw_offline as pmw  # noqa: E402
from fastmwem.workloads import RandomCountingQueries  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
NO_GUARANTEE = "no privacy guarantee"


# -- set-up ------------------------------------------------------------------------------------
def workload_of(m: int, bits: int = 8) -> RandomCountingQueries:
    return RandomCountingQueries(binary_domain(bits), int(m), rng=777)


def dense_keys(workload: RandomCountingQueries) -> np.ndarray:
    """The 0/1 queries as a float32 matrix (for the flat and faiss indices)."""
    packed, d = workload.packed, workload.domain.size
    out = np.empty((packed.shape[0], d), dtype=np.float32)
    for s in range(0, packed.shape[0], 65536):
        out[s:s + 65536] = np.unpackbits(packed[s:s + 65536], axis=1, count=d)
    return out


def build_index(kind: str, workload: RandomCountingQueries, dense: np.ndarray | None):
    """An index over the workload's queries: flat, bitpacked, ivf or hnsw (faiss)."""
    m, d = workload.n_queries, workload.domain.size
    if kind == "bitpacked":
        index = make_index("bitpacked", dimension=d)
        index.add_packed(workload.packed)
        return index
    if kind == "flat":
        return make_index("flat", dense, progress=False)
    if kind == "ivf":
        nlist = max(16, math.isqrt(m))
        return make_index(f"faiss:IVF{nlist},Flat", dense, params={"nprobe": max(1, nlist // 8)},
                          threads=1, progress=False)
    if kind == "hnsw":
        return make_index("faiss:HNSW32", dense, params={"efSearch": 256}, threads=1,
                          progress=False)
    raise ValueError(kind)


INDEX_LABELS = {
    "flat": "Fast-MWEM, flat (exact)",
    "bitpacked": "Fast-MWEM, bit-packed (exact)",
    "ivf": f"Fast-MWEM, IVF sqrt(m), nprobe nlist/8 ({NO_GUARANTEE})",
    "hnsw": f"Fast-MWEM, HNSW32 efSearch 256 ({NO_GUARANTEE})",
    "exponential": "MWEM (scan of all 2m scores)",
}


def run(dataset, workload, *, rounds: int, seed: int, index=None, epsilon: float = EPSILON):
    """One pmw run; ``index=None`` is MWEM's scan, else Fast-MWEM over that index."""
    options = {} if index is None else {
        "selection": "lazy", "index": index, "allow_uncertified": not index.exact}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded-run and uncertified-oracle warnings
        return pmw(dataset, workload, epsilon=epsilon, delta=DELTA, rounds=rounds, rng=seed,
                   **options)


# -- post-processing of a run ------------------------------------------------------------------
def iterates(workload, selected, rounds: int) -> list[np.ndarray]:
    """The iterates ``p_0 .. p_{T-1}`` rebuilt from the released selections (pmw's MW step)."""
    size = workload.domain.size
    eta = math.sqrt(math.log(size) / rounds)
    scale = float(workload.query_sensitivity)
    m = workload.n_queries
    p = np.full(size, 1.0 / size)
    out = []
    for choice in selected:
        out.append(p.copy())
        query, sign = (choice, 1.0) if choice < m else (choice - m, -1.0)
        workload.multiply_group(p, int(query), np.array([-sign * eta / scale]))
        p /= p.sum()
    return out


def error_curve(workload, dataset, result, rounds: int) -> dict:
    """Max and mean abs. error of the averaged iterate after each round (normalised answers)."""
    hist = dataset.histogram()
    truth = workload.answer(hist / hist.sum())
    its = iterates(workload, result.selected, rounds)
    average = np.cumsum(its, axis=0) / np.arange(1, rounds + 1)[:, None]
    released = result.histogram / result.histogram.sum()
    if not np.allclose(average[-1], released, rtol=1e-9, atol=1e-12):
        raise RuntimeError("the rebuilt iterates do not reproduce the released output")
    max_err, mean_err = [], []
    for a in average:
        err = np.abs(workload.answer(a) - truth)
        max_err.append(float(err.max()))
        mean_err.append(float(err.mean()))
    return {"max": max_err, "mean": mean_err, "iterates": its, "total": result.total}


def round_vectors(curve: dict, dataset) -> list[np.ndarray]:
    """The vectors the lazy mechanism searched: ``n_hat p_t - h``."""
    hist = dataset.histogram()
    return [curve["total"] * p - hist for p in curve["iterates"]]


def recall_along(index, exact, vectors, workload, epsilon0: float) -> float:
    """Mean recall@k of ``index``'s top-k candidate sets against ``exact``'s on ``vectors``."""
    empty = np.empty(0, dtype=np.int64)
    calib = {"epsilon": epsilon0, "sensitivity": float(workload.query_sensitivity),
             "complement": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = LazyExponentialMechanism(index, allow_uncertified=True, **calib)
        ref = LazyExponentialMechanism(exact, **calib)
    k = mech._k_for(mech.n_candidates, 0)
    hits = [np.intersect1d(mech._top(v, k, empty)[0], ref._top(v, k, empty)[0]).size / k
            for v in vectors]
    return float(np.mean(hits))


def epsilon0(rounds: int, epsilon: float = EPSILON) -> float:
    return PMWConfig(epsilon=epsilon, delta=DELTA, rounds=rounds).round_epsilon()


def strip(curve: dict) -> dict:
    return {"max": curve["max"], "mean": curve["mean"]}


# -- fig2 --------------------------------------------------------------------------------------
def fig2(args) -> dict:
    workload = workload_of(args.m)
    flat = build_index("flat", workload, dense_keys(workload))
    runs = []
    for seed in range(args.seeds):
        data = dirichlet_multinomial(workload.domain, args.n, seed)
        curves = {}
        for name, index, rng in (("mwem", None, 10 + seed), ("fast", flat, 10 + seed),
                                 ("mwem_again", None, 500 + seed)):
            started = time.perf_counter()
            curves[name] = strip(error_curve(workload, data, run(
                data, workload, rounds=args.rounds, seed=rng, index=index), args.rounds))
            curves[name]["seconds"] = time.perf_counter() - started
        runs.append({"seed": seed, **curves})
        print(f"fig2 seed {seed}: final max error MWEM {curves['mwem']['max'][-1]:.4f}, "
              f"Fast-MWEM {curves['fast']['max'][-1]:.4f}, MWEM again "
              f"{curves['mwem_again']['max'][-1]:.4f}", flush=True)
    summary = {}
    for key in ("max", "mean"):
        fast = np.array([r["fast"][key] for r in runs]) - np.array([r["mwem"][key] for r in runs])
        noise = (np.array([r["mwem_again"][key] for r in runs])
                 - np.array([r["mwem"][key] for r in runs]))
        summary[f"{key}_diff_fast_minus_mwem_mean"] = fast.mean(axis=0).tolist()
        summary[f"{key}_diff_fast_minus_mwem_std"] = fast.std(axis=0, ddof=1).tolist()
        summary[f"{key}_diff_mwem_minus_mwem_mean"] = noise.mean(axis=0).tolist()
        summary[f"{key}_diff_mwem_minus_mwem_std"] = noise.std(axis=0, ddof=1).tolist()
        # over all rounds and seeds: is the Fast-MWEM difference larger than the noise?
        summary[f"{key}_diff_rms_fast"] = float(np.sqrt((fast**2).mean()))
        summary[f"{key}_diff_rms_noise"] = float(np.sqrt((noise**2).mean()))
        summary[f"{key}_final_diff_fast"] = spread(fast[:, -1])
        summary[f"{key}_final_diff_noise"] = spread(noise[:, -1])
    print(f"fig2: rms over rounds and seeds of (Fast-MWEM - MWEM) max error "
          f"{summary['max_diff_rms_fast']:.4f} vs (MWEM - MWEM) {summary['max_diff_rms_noise']:.4f};"
          f" mean error {summary['mean_diff_rms_fast']:.5f} vs {summary['mean_diff_rms_noise']:.5f}",
          flush=True)
    return {"summary": summary, "runs": runs}


def plot_fig2(payload: dict, path: str) -> None:
    plt = pyplot()
    s = payload["summary"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, key in zip(axes, ("max", "mean")):
        t = np.arange(1, len(s[f"{key}_diff_fast_minus_mwem_mean"]) + 1)
        for name, label, color in (("fast_minus_mwem", "Fast-MWEM (flat) - MWEM", "tab:blue"),
                                   ("mwem_minus_mwem", "MWEM - MWEM (another run: noise)",
                                    "tab:gray")):
            mean = np.array(s[f"{key}_diff_{name}_mean"])
            std = np.array(s[f"{key}_diff_{name}_std"])
            ax.plot(t, mean, color=color, label=label)
            ax.fill_between(t, mean - std, mean + std, color=color, alpha=0.2)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xlabel("iteration")
        ax.set_ylabel(f"difference in {key} abs. error")
        ax.set_title(f"{key} error difference (mean +- std over seeds)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- fig3 --------------------------------------------------------------------------------------
def fig3(args) -> dict:
    workload = workload_of(args.m)
    dense = dense_keys(workload)
    kinds = ("flat", "bitpacked", "ivf", "hnsw")
    indices, builds = {}, {}
    for kind in kinds:
        started = time.perf_counter()
        indices[kind] = build_index(kind, workload, dense)
        builds[kind] = time.perf_counter() - started
    eps0 = epsilon0(args.rounds)
    runs = []
    for seed in range(args.seeds):
        data = dirichlet_multinomial(workload.domain, args.n, seed)
        entry = {"seed": seed}
        for kind in ("exponential",) + kinds:
            curve = error_curve(workload, data, run(data, workload, rounds=args.rounds,
                                                   seed=10 + seed, index=indices.get(kind)),
                                args.rounds)
            entry[kind] = strip(curve)
            if kind in ("ivf", "hnsw"):
                entry[kind]["recall_along_run"] = recall_along(
                    indices[kind], indices["bitpacked"], round_vectors(curve, data), workload,
                    eps0)
        runs.append(entry)
        print("fig3 seed", seed, " ".join(
            f"{k}: {entry[k]['max'][-1]:.4f}" + (f" (recall {entry[k]['recall_along_run']:.2f})"
                                                 if "recall_along_run" in entry[k] else "")
            for k in ("exponential",) + kinds), flush=True)
    summary = {"build_s": builds, "labels": INDEX_LABELS,
               "exact": {k: bool(indices[k].exact) for k in kinds}}
    for kind in ("exponential",) + kinds:
        curves = np.array([r[kind]["max"] for r in runs])
        summary[f"{kind}_max_mean"] = curves.mean(axis=0).tolist()
        summary[f"{kind}_max_std"] = curves.std(axis=0, ddof=1).tolist()
        summary[f"{kind}_final_max"] = spread(curves[:, -1])
        if kind in ("ivf", "hnsw"):
            summary[f"{kind}_recall"] = spread([r[kind]["recall_along_run"] for r in runs])
    return {"summary": summary, "runs": runs}


def plot_fig3(payload: dict, path: str) -> None:
    plt = pyplot()
    s = payload["summary"]
    fig, ax = plt.subplots(figsize=(8, 5))
    styles = {"exponential": ("black", "--"), "flat": ("tab:blue", "-"),
              "bitpacked": ("tab:green", ":"), "ivf": ("tab:orange", "-"),
              "hnsw": ("tab:red", "-")}
    for kind, (color, style) in styles.items():
        mean = np.array(s[f"{kind}_max_mean"])
        t = np.arange(1, mean.size + 1)
        label = INDEX_LABELS[kind]
        if kind in ("ivf", "hnsw"):
            label += f", recall@k {s[f'{kind}_recall'][0]:.2f}"
        ax.plot(t, mean, color=color, linestyle=style, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("max abs. error (mean over seeds)")
    ax.set_title("max error vs iterations per index\n(IVF and HNSW: approximate, "
                 "NO PRIVACY GUARANTEE)", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- fig4 --------------------------------------------------------------------------------------
def fig4(args) -> dict:
    rows = []
    for m in args.sizes:
        m = int(m)
        workload = workload_of(m)
        data = dirichlet_multinomial(workload.domain, args.n, 0)
        dense = dense_keys(workload) if m <= args.max_dense else None
        methods: dict[str, object] = {"exponential": None}
        builds = {"exponential": 0.0}
        for kind in ("bitpacked", "flat", "ivf", "hnsw"):
            if (dense is None and kind != "bitpacked") or (kind == "hnsw" and m > args.hnsw_max):
                continue
            started = time.perf_counter()
            methods[kind] = build_index(kind, workload, dense)
            builds[kind] = time.perf_counter() - started
        times: dict[str, list[float]] = {k: [] for k in methods}
        vectors: list[np.ndarray] = []
        for rep in range(args.repeats):  # methods take turns, rotating the order
            order = list(methods)[rep % len(methods):] + list(methods)[:rep % len(methods)]
            for kind in order:
                result = run(data, workload, rounds=args.rounds, seed=100 + rep,
                             index=methods[kind])
                times[kind].extend(r.seconds for r in result.trace[1:])
                if kind == "bitpacked":
                    curve = {"iterates": iterates(workload, result.selected, args.rounds),
                             "total": result.total}
                    vectors.extend(round_vectors(curve, data))
        eps0 = epsilon0(args.rounds)
        for kind, index in methods.items():
            recall = 1.0 if index is None or index.exact else recall_along(
                index, methods["bitpacked"], vectors, workload, eps0)
            arr = 1e3 * np.array(times[kind])
            row = {"m": m, "method": kind, "label": INDEX_LABELS[kind],
                   "exact": index is None or bool(index.exact), "build_s": builds[kind],
                   "median_ms": float(np.median(arr)), "p90_ms": float(np.percentile(arr, 90)),
                   "iterations": int(arr.size), "recall_at_k": recall,
                   "loadavg": os.getloadavg()[0]}
            rows.append(row)
            print(f"fig4 m={m:8d} {kind:11s} {row['median_ms']:9.2f} ms/iteration (p90 "
                  f"{row['p90_ms']:8.2f})  recall@k {recall:.3f}  build {builds[kind]:6.1f} s",
                  flush=True)
        del methods, dense
    return {"rows": rows}


def plot_fig4(payload: dict, path: str) -> None:
    plt = pyplot()
    rows = payload["rows"]
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    for method in dict.fromkeys(r["method"] for r in rows):
        pts = sorted((r["m"], r["median_ms"], r["recall_at_k"]) for r in rows
                     if r["method"] == method)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                linestyle="--" if method == "exponential" else "-", label=INDEX_LABELS[method])
        for m, ms, recall in pts:
            if recall < 1.0:
                ax.annotate(f"recall {recall:.2f}", (m, ms), textcoords="offset points",
                            xytext=(4, -10), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m (random counting queries, |X| = 256; N = 2m candidates)")
    ax.set_ylabel("time per iteration, ms (median)")
    ax.set_title("time per iteration vs m (recall@k of the approximate indices beside them)",
                 fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- i1 ----------------------------------------------------------------------------------------
def i1(args) -> dict:
    workload = workload_of(args.m)
    index = build_index("bitpacked", workload, None)
    settings = [(n, EPSILON) for n in args.records] + [(args.n, e) for e in args.epsilons
                                                       if e != EPSILON]
    rows = []
    for n, eps in settings:
        data = dirichlet_multinomial(workload.domain, n, 0)
        result = run(data, workload, rounds=args.rounds, seed=3, index=index, epsilon=eps)
        curve = {"iterates": iterates(workload, result.selected, args.rounds),
                 "total": result.total}
        mech = LazyExponentialMechanism(index, epsilon=epsilon0(args.rounds, eps),
                                        sensitivity=float(workload.query_sensitivity),
                                        complement=True)
        gen = np.random.default_rng(11)
        stats = [mech.select_with_stats(v, rng=gen) for v in round_vectors(curve, data)
                 for _ in range(args.draws)]
        tails = np.array([s.n_tail for s in stats])
        big_n, k = mech.n_candidates, stats[0].k
        row = {"n": n, "epsilon": eps, "epsilon0": mech.epsilon, "N": big_n, "k": k,
               "tail_mean": float(tails.mean()), "tail_max": int(tails.max()),
               "tail_fraction_mean": float(tails.mean() / (big_n - k)),
               "bound": (big_n - k) / (k + 1), "bound_fraction": 1.0 / (k + 1),
               "from_tail": float(np.mean([s.from_tail for s in stats])),
               "draws": int(tails.size)}
        rows.append(row)
        print(f"i1 n={n:7d} eps={eps:5.2f}: mean tail draws {row['tail_mean']:8.2f} (max "
              f"{row['tail_max']}, bound {row['bound']:.1f}), fraction of N-k "
              f"{row['tail_fraction_mean']:.2e}, output from the tail {row['from_tail']:.3f}",
              flush=True)
    return {"rows": rows}


def plot_i1(payload: dict, path: str) -> None:
    plt = pyplot()
    rows = payload["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    fixed_values = {"epsilon": EPSILON, "n": payload["meta"]["args"]["n"]}
    for ax, key, fixed in ((axes[0], "n", "epsilon"), (axes[1], "epsilon", "n")):
        base = fixed_values[fixed]
        pts = sorted((r[key], r["tail_mean"], r["bound"], r["tail_fraction_mean"])
                     for r in rows if r[fixed] == base)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label="mean tail draws")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], linestyle="--",
                label="bound (N - k) / (k + 1)")
        for x, y, _, frac in pts:
            ax.annotate(f"{frac:.1e} of N-k", (x, y), textcoords="offset points",
                        xytext=(4, 4), fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(0, 4 * max(p[2] for p in pts))
        ax.set_xlabel(key + (" (records)" if key == "n" else " (total budget)"))
        ax.set_ylabel("tail candidates per selection")
        ax.set_title(f"N = {rows[0]['N']:,} candidates, k = {rows[0]['k']}, {fixed} = {base:g}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- i2 ----------------------------------------------------------------------------------------
def i2(args) -> dict:
    workload = workload_of(args.m)
    flat = build_index("flat", workload, dense_keys(workload))
    runs = []
    for n in args.records:
        for seed in range(args.seeds):
            data = dirichlet_multinomial(workload.domain, n, seed)
            entry = {"n": n, "seed": seed}
            for name, index in (("mwem", None), ("fast", flat)):
                entry[name] = strip(error_curve(workload, data, run(
                    data, workload, rounds=args.rounds, seed=10 + seed, index=index),
                    args.rounds))
            runs.append(entry)
            print(f"i2 n={n:7d} seed {seed}: final max error MWEM {entry['mwem']['max'][-1]:.4f}"
                  f", Fast-MWEM {entry['fast']['max'][-1]:.4f}", flush=True)
    summary = {}
    for n in args.records:
        for name in ("mwem", "fast"):
            for key in ("max", "mean"):
                curves = np.array([r[name][key] for r in runs if r["n"] == n])
                summary[f"{n}_{name}_{key}_mean"] = curves.mean(axis=0).tolist()
                summary[f"{n}_{name}_{key}_final"] = spread(curves[:, -1])
    return {"summary": summary, "runs": runs, "records": list(args.records)}


def plot_i2(payload: dict, path: str) -> None:
    plt = pyplot()
    s = payload["summary"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, key in zip(axes, ("max", "mean")):
        for color, n in zip(colors, payload["records"]):
            for name, style in (("mwem", "--"), ("fast", "-")):
                curve = s[f"{n}_{name}_{key}_mean"]
                ax.plot(np.arange(1, len(curve) + 1), curve, color=color, linestyle=style,
                        label=f"{'MWEM' if name == 'mwem' else 'Fast-MWEM (flat)'}, n = {n:,}")
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        ax.set_ylabel(f"{key} abs. error (mean over seeds)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- driver ------------------------------------------------------------------------------------
FIGURES = {"fig2": (fig2, plot_fig2), "fig3": (fig3, plot_fig3), "fig4": (fig4, plot_fig4),
           "i1": (i1, plot_i1), "i2": (i2, plot_i2)}
DEFAULTS = {  # per sub-command: (full, --quick)
    "fig2": ({"m": 1e5, "n": 10_000, "rounds": 100, "seeds": 5},
             {"m": 1e4, "n": 10_000, "rounds": 30, "seeds": 2}),
    "fig3": ({"m": 1e4, "n": 10_000, "rounds": 100, "seeds": 3},
             {"m": 3e3, "n": 10_000, "rounds": 30, "seeds": 2}),
    "fig4": ({"sizes": [1e3, 1e4, 1e5, 1e6], "n": 10_000, "rounds": 6, "repeats": 3},
             {"sizes": [1e3, 1e4], "n": 10_000, "rounds": 4, "repeats": 2}),
    "i1": ({"m": 1e5, "n": 3_000, "rounds": 50,
            "records": [300, 1_000, 3_000, 10_000, 100_000, 1_000_000],
            "epsilons": [0.1, 0.3, 1.0, 3.0, 10.0], "draws": 4},
           {"m": 1e4, "n": 1_000, "rounds": 20, "records": [1_000, 10_000],
            "epsilons": [1.0, 10.0], "draws": 2}),
    "i2": ({"m": 1e4, "rounds": 100, "seeds": 3, "records": [1_000, 10_000, 100_000]},
           {"m": 3e3, "rounds": 30, "seeds": 2, "records": [1_000, 10_000]}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("figure", choices=[*FIGURES, "all"])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke test)")
    parser.add_argument("--m", type=float, help="number of queries (fig2, fig3, i1, i2)")
    parser.add_argument("--n", type=int, help="records (fig2, fig3, fig4; i1's epsilon sweep)")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--sizes", type=float, nargs="+", help="fig4: values of m")
    parser.add_argument("--repeats", type=int, help="fig4: runs per method, taking turns")
    parser.add_argument("--records", type=int, nargs="+", help="i1, i2: values of n")
    parser.add_argument("--epsilons", type=float, nargs="+", help="i1: total epsilons")
    parser.add_argument("--draws", type=int, help="i1: selections drawn per round vector")
    parser.add_argument("--max-dense", type=float, default=1e6,
                        help="fig4: largest m with float32 keys (flat, faiss)")
    parser.add_argument("--hnsw-max", type=float, default=1e4, help="fig4: largest m for HNSW")
    parser.add_argument("--suffix", default="", help="appended to the output names")
    args = parser.parse_args()
    for name in FIGURES if args.figure == "all" else [args.figure]:
        sub = argparse.Namespace(**vars(args))
        for key, value in DEFAULTS[name][1 if args.quick else 0].items():
            if getattr(sub, key) is None:
                setattr(sub, key, value)
        compute, draw = FIGURES[name]
        load_before, started = os.getloadavg(), time.perf_counter()
        payload = compute(sub)
        payload["meta"] = {**machine(load_before), "seconds": time.perf_counter() - started,
                           "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                           "epsilon": EPSILON, "delta": DELTA, "cells": 256,
                           "args": {k: v for k, v in vars(sub).items() if v is not None},
                           "quick": bool(args.quick)}
        stem = write_json(f"fast_mwem_{name}{args.suffix}", payload)
        draw(payload, stem + ".png")
        print(f"{name}: {payload['meta']['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
