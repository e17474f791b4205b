"""Fig. 1 of arXiv:2204.01132, as recovered in docs/continuous.md

Delta cost of a Metropolis chain for the 1-D L1 mean (Example 1) against the chain length m, for
the uniform independence proposal (beta_U = inf_X C_X) and the Laplace random walk
(beta_L = (a/2) exp(-(a + c)), a = n eps / 2 and a = 1), with delta_m = (1 + e^eps)(1 - beta)^m.
The dashed line is machine epsilon (2.2e-16), below which the delta is not representable as a
relative quantity; it does not make the chain eps-DP.

Also checks the bound on the worst case by simulation: for the uniform proposal with the data at
a corner and the chain started at the mode, the mass left at the start point after m steps is
exactly (1 - beta_U)^m, so the delta the chain pays cannot be lowered with this analysis.

Run: /work/venv/bin/python benchmarks/continuous_mcmc_delta.py
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from fastmwem.mechanisms.continuous import (  # noqa: E402
    MeanL1Loss,
    mean_l1_doeblin_laplace,
    mean_l1_doeblin_uniform,
    metropolis,
    metropolis_delta,
    metropolis_steps,
)

OUT = Path(__file__).resolve().parent / "results"
GRID = [(10, 0.1), (100, 0.01), (100, 0.1), (1000, 0.01), (100, 1.0)]
MACHINE_EPS = float(np.finfo(float).eps)


def _log10_delta(beta: float, m: np.ndarray, eps: float) -> np.ndarray:
    return (math.log1p(math.exp(eps)) + m * math.log1p(-beta)) / math.log(10)


def main() -> None:
    t0 = time.perf_counter()
    rows = []
    fig, axes = plt.subplots(1, len(GRID), figsize=(4 * len(GRID), 3.6), sharey=True)
    for ax, (n, eps) in zip(axes, GRID):
        betas = {
            "uniform": mean_l1_doeblin_uniform(n, eps, 1),
            "laplace a=n*eps/2": mean_l1_doeblin_laplace(n, eps, 1, n * eps / 2),
            "laplace a=1": mean_l1_doeblin_laplace(n, eps, 1, 1.0),
        }
        row = {"n": n, "epsilon": eps, "beta": betas, "steps_for_delta_1_over_n": {},
               "steps_for_delta_machine_eps": {}}
        m_max = 1
        for name, beta in betas.items():
            row["steps_for_delta_1_over_n"][name] = metropolis_steps(beta, 1.0 / n, eps)
            m_eps = metropolis_steps(beta, MACHINE_EPS, eps)
            row["steps_for_delta_machine_eps"][name] = m_eps
            m_max = max(m_max, m_eps)
        # Plot up to 1e8 steps: for n=100, eps=1 the Laplace chains need ~1e40 (see the JSON).
        m = np.unique(np.round(np.geomspace(1, min(1.3 * m_max, 1e8), 400)))
        for name, beta in betas.items():
            ax.plot(m, _log10_delta(beta, m, eps), label=name)
        ax.axhline(math.log10(MACHINE_EPS), ls="--", color="k", lw=0.8)
        ax.axhline(math.log10(1.0 / n), ls=":", color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(-20, 1)
        ax.set_title(f"n={n}, eps={eps}")
        ax.set_xlabel("chain length m")
        u, lap = row["steps_for_delta_machine_eps"]["uniform"], \
            row["steps_for_delta_machine_eps"]["laplace a=n*eps/2"]
        row["laplace_over_uniform_length_machine_eps"] = lap / u
        rows.append(row)
    axes[0].set_ylabel("log10 delta_m = log10((1+e^eps)(1-beta)^m)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 1: delta cost of Metropolis for the 1-D L1 mean (dashed: machine epsilon)")
    fig.tight_layout()
    fig.savefig(OUT / "continuous_mcmc_delta.png", dpi=110)

    # Simulation: worst case of the uniform chain (data at 0, start at the mode).
    n, eps = 100, 0.1
    loss = MeanL1Loss(np.zeros(n))
    mech = loss.mechanism(eps)
    beta = mean_l1_doeblin_uniform(n, eps, 1)
    sim = []
    for steps in (4, 8, 16, 32):
        draws = metropolis(mech, size=200000, rng=steps, steps=steps, beta=beta, start=[0.0])
        stay = float(np.mean(draws.values[:, 0] == 0.0))
        sim.append({"steps": steps, "bound_(1-beta)^m": (1 - beta) ** steps,
                    "mass_left_at_start": stay, "delta_m": metropolis_delta(beta, steps, eps)})
    result = {
        "description": "delta_m = (1+e^eps)(1-beta)^m for Example 1 (d=1); steps to reach delta",
        "machine_epsilon": MACHINE_EPS,
        "grid": rows,
        "worst_case_simulation_uniform_n100_eps0.1": sim,
        "seconds": time.perf_counter() - t0,
    }
    (OUT / "continuous_mcmc_delta.json").write_text(json.dumps(result, indent=2))
    for row in rows:
        print(row["n"], row["epsilon"], {k: round(v, 6) for k, v in row["beta"].items()},
              row["steps_for_delta_1_over_n"], row["steps_for_delta_machine_eps"],
              round(row["laplace_over_uniform_length_machine_eps"], 1))
    for s in sim:
        print(s)


if __name__ == "__main__":
    main()
