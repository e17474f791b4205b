"""Exact draws per second of atom_perfect on the 1-D example (n = 100, eps = 1).

Data: 100 records from Beta(1,1) (seed 0). Goal: at least 1e4 exact draws per second
on 2 cores. Measured for the vectorised ``sample_many`` (batches of 1e4 and 1e5 draws) and for
one-at-a-time ``sample`` calls, with the uniform exit (kappa = 1) and the Laplace exit at the
mean, and, for reference, Metropolis at delta = 1/n (not exact; uniform proposal, beta_U).
Each figure is the best of 5 repeats (wall clock). numpy's BLAS threads do not matter here
(element-wise work).

Run: /work/venv/bin/python benchmarks/continuous_throughput.py
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from fastmwem.mechanisms.continuous import (  # noqa: E402
    LaplaceProposal,
    MeanL1Loss,
    mean_l1_doeblin_uniform,
)

OUT = Path(__file__).resolve().parent / "results"
N, EPS, REPEATS = 100, 1.0, 5


def best_rate(fn, count: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return count / best


def main() -> None:
    loss = MeanL1Loss(np.random.default_rng(0).beta(1, 1, size=N))
    mech = loss.mechanism(EPS)
    designs = {
        "uniform exit": {},
        "laplace exit": {"exit": loss.laplace_exit(EPS)},
        "laplace exit + laplace walk": {"exit": loss.laplace_exit(EPS),
                                        "proposal": LaplaceProposal(loss.rate(EPS))},
    }
    rows = []
    rng = np.random.default_rng(1)
    for name, kw in designs.items():
        for batch in (10_000, 100_000):
            rate = best_rate(lambda b=batch, k=kw: mech.sample_many(b, rng=rng, **k), batch)
            props = mech.sample_many(batch, rng=rng, **kw).proposals.mean()
            rows.append({"sampler": "atom_perfect", "design": name, "mode": f"sample_many({batch})",
                         "draws_per_second": rate, "mean_proposals": float(props)})
        single = best_rate(lambda k=kw: [mech.sample(rng=rng, **k) for _ in range(500)], 500)
        rows.append({"sampler": "atom_perfect", "design": name, "mode": "sample() x 500",
                     "draws_per_second": single})
    beta = mean_l1_doeblin_uniform(N, EPS, 1)
    rate = best_rate(lambda: mech.sample_many(10_000, rng=rng, method="metropolis",
                                              delta=1.0 / N, beta=beta), 10_000)
    steps = int(mech.sample(rng=0, method="metropolis", delta=1.0 / N, beta=beta).proposals)
    rows.append({"sampler": "metropolis (delta=1/n, not exact)", "design": "uniform proposal",
                 "mode": "sample_many(10000)", "draws_per_second": rate, "steps": steps})
    for r in rows:
        print(f"{r['sampler']:<36} {r['design']:<28} {r['mode']:<22} "
              f"{r['draws_per_second']:>12,.0f}/s  props={r.get('mean_proposals', '')}")
    out = {"n": N, "epsilon": EPS, "data": "Beta(1,1), seed 0", "mean": float(loss.center[0]),
           "goal_draws_per_second": 1e4, "rows": rows, "cpu_count": os.cpu_count(),
           "python": platform.python_version(), "numpy": np.__version__}
    (OUT / "continuous_throughput.json").write_text(json.dumps(out, indent=2))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels = [f"{r['design']}\n{r['mode']}" for r in rows]
    ax.barh(range(len(rows)), [r["draws_per_second"] for r in rows], color="tab:blue")
    ax.axvline(1e4, color="red", ls="--", label="goal 1e4/s")
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("draws per second")
    ax.set_title("1-D L1 mean, n=100, eps=1: exact draws per second")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "continuous_throughput.png", dpi=110)


if __name__ == "__main__":
    main()
