"""Gap to the non-private optimum (HiGHS, ``scipy.optimize.linprog``) vs epsilon.

Scalar privacy: the instance of docs/lp.md (d = 50, ``A ~ U[0, 1]``, ``x* ~
Dirichlet(1)``, ``b = A x* + U[0, 0.05]``) with costs ``c ~ U[0, 1]``, minimised over the simplex;
``private_linprog`` with the objective search (8 probes, tolerance 0.02 on the largest violation),
T = 200 rounds per probe, zCDP composition, lazy selection over the exact warm oracle. Two
sensitivities of ``b``: 0.01 and 1e-4.

Constraint privacy: a packing LP (``c ~ -U[0.5, 1.5]``, the same ``A`` and ``b``), density
s = m / 100, objective range ``(2 OPT, 0)`` (a public bound), tolerance 0.02 on the violation
counted by the test.

Reported per epsilon, as mean and sd over seeds: ``c @ x - OPT`` (negative = better than the
optimum, which only an infeasible x can be), the largest violation ``max_i (A_i x - b_i)`` and
the fraction of violated rows. HiGHS only draws the reference line; it never runs inside the
private solver.

Run: ``python benchmarks/lp_highs_gap.py [--m 10000] [--seeds 3]``. Writes
benchmarks/results/lp_highs_gap.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings

import numpy as np
from scipy.optimize import linprog

from fastmwem.lp import private_linprog

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
D, DELTA, T = 50, 1e-6, 200
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)


def instance(m: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    A = rng.random((m, D))
    b = A @ rng.dirichlet(np.ones(D)) + rng.random(m) * 0.05
    return {"A": A, "b": b, "c": rng.random(D), "c_pack": -rng.uniform(0.5, 1.5, D)}


def highs(lp: dict[str, np.ndarray]) -> tuple[float, float]:
    simplex = linprog(lp["c"], A_ub=lp["A"], b_ub=lp["b"], A_eq=np.ones((1, D)), b_eq=[1],
                      bounds=(0, None), method="highs")
    packing = linprog(lp["c_pack"], A_ub=lp["A"], b_ub=lp["b"], bounds=(0, None),
                      method="highs")
    return float(simplex.fun), float(packing.fun)


def solve(lp, model: str, epsilon: float, seed: int, opt: float, sensitivity: float = 0.0):
    A, b = lp["A"], lp["b"]
    common = dict(epsilon=epsilon, delta=DELTA, rounds=T, composition="zcdp", tolerance=0.02,
                  rng=np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if model == "scalar":
            res = private_linprog(lp["c"], A, b, sensitivity=sensitivity, width=1 + b.max(),
                                  selection="lazy", **common)
        else:
            lo = 2 * opt
            # a public bound, a little above what this instance shows
            width = 1.01 * float(np.abs(-lo * A / -lp["c_pack"] - b[:, None]).max())
            res = private_linprog(lp["c_pack"], A, b, neighbors="constraint",
                                  density=A.shape[0] / 100, entry_bound=1.0,
                                  max_constraints=A.shape[0], width=width,
                                  objective_range=(lo, 0.0), **common)
    return {"gap": res.objective - opt, "max_violation": res.max_violation,
            "violated_fraction": res.violated_fraction, "status": res.status}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    lp = instance(args.m)
    opt_simplex, opt_packing = highs(lp)
    curves = {"scalar, sensitivity 0.01": ("scalar", 0.01, opt_simplex),
              "scalar, sensitivity 1e-4": ("scalar", 1e-4, opt_simplex),
              "constraint, s = m/100": ("constraint", 0.0, opt_packing)}
    results: dict[str, object] = {"m": args.m, "d": D, "delta": DELTA, "rounds": T,
                                  "seeds": args.seeds, "highs_optimum": {
                                      "simplex": opt_simplex, "packing": opt_packing},
                                  "curves": {}}
    for label, (model, sens, opt) in curves.items():
        per_eps = {}
        for eps in EPSILONS:
            runs = [solve(lp, model, eps, seed, opt, sens) for seed in range(args.seeds)]
            per_eps[str(eps)] = {key: {"mean": float(np.mean([r[key] for r in runs])),
                                       "sd": float(np.std([r[key] for r in runs]))}
                                 for key in ("gap", "max_violation", "violated_fraction")}
            per_eps[str(eps)]["statuses"] = [r["status"] for r in runs]
            print(f"{label} epsilon {eps}: gap {per_eps[str(eps)]['gap']['mean']:+.4f}, "
                  f"max violation {per_eps[str(eps)]['max_violation']['mean']:.4f}", flush=True)
        results["curves"][label] = per_eps
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "lp_highs_gap.json"), "w") as fh:
        json.dump(results, fh, indent=2)
    plot(results, os.path.join(RESULTS, "lp_highs_gap.png"))


def plot(results: dict[str, object], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, per_eps in results["curves"].items():
        eps = [float(e) for e in per_eps]
        for ax, key in zip(axes, ("gap", "max_violation")):
            mean = [per_eps[e][key]["mean"] for e in per_eps]
            sd = [per_eps[e][key]["sd"] for e in per_eps]
            ax.errorbar(eps, mean, yerr=sd, marker="o", capsize=3, label=label)
    axes[0].axhline(0.0, color="k", lw=0.8)
    axes[0].set_ylabel("c @ x - OPT (HiGHS)")
    axes[1].set_ylabel("max_i (A_i x - b_i)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 1e-6)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Private LP vs the HiGHS optimum, m = {results['m']}, d = {D}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
