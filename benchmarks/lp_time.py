"""Time per round of the scalar-private LP's constraint choice vs m, for every oracle.

Fast-MWEM (arXiv:2602.03732) s.5.2 / App. J (Figs. 8-9) on the instance of docs/lp.md: d = 50,
``A ~ U[0, 1]`` (float32), ``x* ~ Dirichlet(1)``, ``b = A x* + U[0, 0.05]`` (rounded to float32
values, so that exact indices can keep float32 keys), sensitivity 0.01, epsilon = 1,
delta = 1e-6, the per-round epsilon0 of T = 200 rounds under advanced composition, width
``1 + max b``.

Every method runs its own multiplicative-weights loop over the same instance. The loops take
turns in blocks of 10 rounds (10 rounds of every method, then the next 10), so changes in the
load of the shared machine hit them alike, while a method's working set is not evicted from the
CPU caches by the others after every single round. The time of a round's selection
(``time.perf_counter``) is recorded for:

* ``classic``: the exponential mechanism over all m violations (Algorithm S1), with the float32
  ``A`` scored blockwise in float64, and ``classic (float64 A)``: the same with ``A`` stored in
  float64 (no conversion; twice the memory), the faster of the two and the baseline of the
  speed-ups;
* ``flat``, ``warm``, ``faiss:Flat``: the lazy exponential mechanism over an exact oracle (S2);
* ``faiss IVF`` (nlist = 4 sqrt(m), nprobe = 8) and ``faiss HNSW`` (M = 32, efConstruction =
  200, efSearch = 128): approximate, uncertified indices. The solver refuses them (their recall
  depends on the private b); they are timed here outside it, with their recall@k against the
  exact top k beside. ``bitpacked`` does not apply: the keys ``[A_i, -b_i]`` are not 0/1.

The speed-ups divide the faster classic variant's mean by each method's mean. BLAS threads are
pinned to one (``OPENBLAS_NUM_THREADS=1``, set below before numpy loads): on the shared 2-core
machine a second BLAS thread only spins against the other jobs.

Run: ``python benchmarks/lp_time.py [--ms 1000,10000,100000,1000000] [--rounds 100]
[--ann-max-m 100000]``. Writes benchmarks/results/lp_time.json and .png.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from fastmwem.indices import make_index  # noqa: E402
from fastmwem.lp.oracles import scalar_oracle  # noqa: E402
from fastmwem.lp.plan import plan_privacy  # noqa: E402
from fastmwem.lp.scalar import objective_rows, scalar_selector  # noqa: E402
from fastmwem.mechanisms.lazy import (  # noqa: E402
    LazyExponentialMechanism,
    UncertifiedOracleWarning,
)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
D, SENS, EPSILON, DELTA, T_PLAN = 50, 0.01, 1.0, 1e-6, 200


def instance(m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((m, D), dtype=np.float32)
    xstar = rng.dirichlet(np.ones(D))
    b = np.empty(m)
    for s in range(0, m, 65536):
        b[s:s + 65536] = A[s:s + 65536].astype(np.float64) @ xstar
    b += rng.random(m) * 0.05
    return A, b.astype(np.float32).astype(np.float64)


def ann_index(spec: str, A: np.ndarray, b: np.ndarray) -> object:
    keys = np.hstack([A, -b.astype(np.float32)[:, None]])
    m = A.shape[0]
    if spec == "ivf":
        nlist = int(4 * math.sqrt(m))
        return make_index(f"faiss:IVF{nlist},Flat", keys, private=True, params={"nprobe": 8},
                          progress=False)
    return make_index("faiss:HNSW32", keys, private=True, progress=False,
                      params={"efConstruction": 200, "efSearch": 128})


class Loop:
    """One method's multiplicative-weights loop (Algorithm S1's lines 5-11)."""

    def __init__(self, select, A, b, width, rounds, seed):
        self.select, self.A, self.b, self.width = select, A, b, width
        self.eta = math.sqrt(math.log(D) / rounds)
        self.logw = np.zeros(D)
        self.generator = np.random.default_rng(seed)
        self.times: list[float] = []
        self.queries: list[np.ndarray] = []

    def step(self, keep_query: bool) -> None:
        x = np.exp(self.logw - self.logw.max())
        x /= x.sum()
        start = time.perf_counter()
        i = self.select(x, self.generator)
        self.times.append(time.perf_counter() - start)
        if keep_query:
            self.queries.append(x)
        row = self.A[i].astype(np.float64)
        self.logw -= self.eta * (row - self.b[i]) / self.width


def recall(index, A: np.ndarray, b: np.ndarray, queries: list[np.ndarray], k: int) -> float:
    hits = 0
    for x in queries:
        scores = np.empty(A.shape[0])
        for s in range(0, A.shape[0], 65536):
            scores[s:s + 65536] = A[s:s + 65536].astype(np.float64) @ x
        scores -= b
        truth = np.argpartition(scores, -k)[-k:]
        _, ids = index.search(np.append(x, 1.0)[None, :], k)
        hits += np.intersect1d(ids[0], truth).size
    return hits / (k * len(queries))


def measure(m: int, rounds: int, ann: bool, faiss_ok: bool) -> dict[str, object]:
    A, b = instance(m)
    width = 1.0 + float(b.max())
    eps0 = plan_privacy(EPSILON, DELTA, em_rounds=T_PLAN).epsilon0
    rows = objective_rows(A, b, None, None)
    k = math.isqrt(m - 1) + 1
    A64 = A.astype(np.float64)
    rows64 = objective_rows(A64, b, None, None)
    methods: dict[str, tuple] = {"classic": (None, 0.0, True),
                                 "classic (float64 A)": (None, 0.0, True)}
    specs = ["flat", "warm"] + (["faiss:Flat"] if faiss_ok and m <= 100_000 else [])
    for spec in specs:
        start = time.perf_counter()
        oracle = scalar_oracle(A, b, spec)
        if spec == "warm":
            oracle._key_stats()  # part of its build: the global key statistics
        methods[spec] = (oracle, time.perf_counter() - start, True)
    if ann and faiss_ok:
        for spec in ("ivf", "hnsw"):
            start = time.perf_counter()
            methods[f"faiss {spec.upper()}"] = (ann_index(spec, A, b),
                                                time.perf_counter() - start, False)
    loops = {}
    for name, (oracle, _, exact) in methods.items():
        if oracle is None:
            select = scalar_selector(rows64 if "64" in name else rows, epsilon0=eps0,
                                     sensitivity=SENS, selection="exponential")
        elif exact:
            select = scalar_selector(rows, epsilon0=eps0, sensitivity=SENS, selection="lazy",
                                     oracle=oracle)
        else:  # benchmark only: the private solver refuses uncertified indices
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UncertifiedOracleWarning)
                lazy = LazyExponentialMechanism(oracle, epsilon=eps0, sensitivity=SENS,
                                                allow_uncertified=True)
            select = (lambda lz: lambda x, g: lz.select(np.append(x, 1.0), rng=g))(lazy)
        loops[name] = Loop(select, A, b, width, T_PLAN, seed=1)
    for block in range(0, rounds, 10):
        for name, loop in loops.items():
            for t in range(block, min(block + 10, rounds)):
                loop.step(keep_query=not methods[name][2] and t % 5 == 0)
    out: dict[str, object] = {}
    classic_mean = min(float(np.mean(loops[n].times)) for n in ("classic", "classic (float64 A)"))
    for name, loop in loops.items():
        oracle, build, exact = methods[name]
        times = np.array(loop.times)
        rec = {"mean_seconds": float(times.mean()), "median_seconds": float(np.median(times)),
               "build_seconds": build, "exact": exact,
               "speedup_vs_classic": classic_mean / float(times.mean()),
               "mean_seconds_last_half": float(times[len(times) // 2:].mean())}
        if name == "warm":
            rec["full_rescans"], rec["region_rescans"] = oracle.rescans, oracle.region_rescans
        if not exact:
            rec["recall_at_k"] = recall(oracle, A, b, loop.queries, k)
        out[name] = rec
    return out


def plot(results: dict[str, object], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ms = sorted(int(m) for m in results["per_m"])
    names = sorted({n for m in ms for n, r in results["per_m"][str(m)].items()
                    if isinstance(r, dict)},
                   key=lambda n: (n != "classic", n))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in names:
        pts = [(m, results["per_m"][str(m)][name]["mean_seconds"]) for m in ms
               if isinstance(results["per_m"][str(m)].get(name), dict)]
        label = name
        if pts and not results["per_m"][str(pts[-1][0])][name]["exact"]:
            recs = [results["per_m"][str(m)][name]["recall_at_k"] for m, _ in pts]
            label += f" (uncertified; recall@k {min(recs):.2f}-{max(recs):.2f})"
        ax.loglog(*zip(*pts), marker="o", label=label,
                  linestyle="-" if "faiss I" not in name and "HNSW" not in name else "--")
    ax.set_xlabel("m (constraints)")
    ax.set_ylabel("seconds per round (selection)")
    ax.set_title("Scalar-private LP, d = 50: time per round vs m")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", default="1000,10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--ann-max-m", type=int, default=100_000)
    args = parser.parse_args()
    try:
        import faiss  # noqa: F401
        faiss_ok = True
    except ImportError:
        faiss_ok = False
    results: dict[str, object] = {
        "setup": {"d": D, "sensitivity": SENS, "epsilon": EPSILON, "delta": DELTA,
                  "epsilon0_of_T": T_PLAN, "rounds_timed": args.rounds,
                  "bitpacked": "not applicable: the keys [A_i, -b_i] are not 0/1",
                  "machine": platform.platform(), "cpus": os.cpu_count()},
        "per_m": {}}
    for m in (int(v) for v in args.ms.split(",")):
        load = os.getloadavg()[0]
        rec = measure(m, args.rounds, m <= args.ann_max_m, faiss_ok)
        rec["load_average_before"] = load
        results["per_m"][str(m)] = rec
        print(f"m = {m}: " + ", ".join(
            f"{n} {r['mean_seconds'] * 1e3:.2f} ms (x{r['speedup_vs_classic']:.1f})"
            for n, r in rec.items() if isinstance(r, dict)), flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "lp_time.json"), "w") as fh:
        json.dump(results, fh, indent=2)
    plot(results, os.path.join(RESULTS, "lp_time.png"))


if __name__ == "__main__":
    main()
