"""Fraction of violated constraints vs rounds, fast (lazy) vs classic (Fast-MWEM s.5.2, Fig. 5).

The instance of docs/lp.md: d = 50, ``A ~ U[0, 1]``, ``x* ~ Dirichlet(1)``,
``b = A x* + U[0, 0.05]``, epsilon = 1, delta = 1e-6, T = 200, beta = 0.05, width ``1 + max b``,
advanced composition. Two sensitivities: 0.01 (``b`` as counts of 100 records), where
``epsilon0 / (2 sensitivity)`` is so small that every round's choice is close to uniform, and
1e-4 (``b`` over 10,000 records), where the private choice tracks the worst constraint.

For each setting and seed the classic solver (Algorithm S1) and the fast one (S2, lazy selection
over the exact ``warm`` oracle) run with ``track=True``: after each round, the fraction of rows
with ``A_i xbar_t > b_i`` for the running average ``xbar_t`` (a diagnostic on the private data,
outside the private output). The two solvers have the same law each round, so their curves must
agree within seed-to-seed noise; the script reports the largest gap between the mean curves next
to the standard error of that gap.

Run: ``python benchmarks/lp_convergence.py [--m 10000] [--seeds 8]``. Writes
benchmarks/results/lp_convergence.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

from fastmwem.lp import scalar_alpha, scalar_feasibility

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
D, EPSILON, DELTA, T, BETA = 50, 1.0, 1e-6, 200, 0.05


def instance(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((m, D))
    b = A @ rng.dirichlet(np.ones(D)) + rng.random(m) * 0.05
    return A, b


def run(m: int, seeds: int, sensitivity: float) -> dict[str, object]:
    A, b = instance(m, 0)
    width = 1.0 + float(b.max())
    curves: dict[str, list[list[float]]] = {"classic": [], "fast": []}
    seconds = {"classic": 0.0, "fast": 0.0}
    alpha = None
    beyond_alpha = {"classic": [], "fast": []}
    for seed in range(seeds):
        for name, selection in (("classic", "exponential"), ("fast", "lazy")):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = scalar_feasibility(A, b, epsilon=EPSILON, delta=DELTA,
                                         sensitivity=sensitivity, width=width, rounds=T,
                                         selection=selection, rng=np.random.default_rng(seed),
                                         track=True)
            seconds[name] += time.perf_counter() - start
            curves[name].append([r.violated_fraction for r in res.trace])
            alpha = scalar_alpha(width, D, m, T, sensitivity, res.setup["epsilon0"], BETA)
            beyond_alpha[name].append(float(np.mean(A @ res.x - b > alpha)))
    mean = {k: np.mean(v, axis=0) for k, v in curves.items()}
    sd = {k: np.std(v, axis=0, ddof=1) for k, v in curves.items()}
    gap = np.abs(mean["classic"] - mean["fast"])
    se = np.sqrt((sd["classic"] ** 2 + sd["fast"] ** 2) / seeds)
    return {"sensitivity": sensitivity, "alpha": alpha,
            "mean": {k: v.tolist() for k, v in mean.items()},
            "sd": {k: v.tolist() for k, v in sd.items()},
            "max_gap_between_means": float(gap.max()),
            "max_gap_in_standard_errors": float(np.max(np.where(se > 0, gap / np.where(
                se > 0, se, 1.0), 0.0))),
            "final": {k: float(v[-1]) for k, v in mean.items()},
            "fraction_beyond_alpha": {k: float(np.mean(v)) for k, v in beyond_alpha.items()},
            "seconds_per_run": {k: v / seeds for k, v in seconds.items()}}


def plot(results: dict[str, object], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = results["settings"]
    fig, axes = plt.subplots(1, len(settings), figsize=(5.5 * len(settings), 4), squeeze=False)
    for ax, rec in zip(axes[0], settings):
        t = np.arange(1, T + 1)
        for name, style in (("classic", "-"), ("fast", "--")):
            mean, sd = np.array(rec["mean"][name]), np.array(rec["sd"][name])
            ax.plot(t, mean, style, label=f"{name} ({'S1' if name == 'classic' else 'S2, warm'})")
            ax.fill_between(t, mean - sd, mean + sd, alpha=0.2)
        ax.set_title(f"sensitivity {rec['sensitivity']:g}: max gap "
                     f"{rec['max_gap_between_means']:.3f}")
        ax.set_xlabel("round t")
        ax.set_ylabel("fraction of rows with A_i xbar_t > b_i")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"Scalar-private feasibility LP, m = {results['m']}, d = {D}, epsilon = 1, "
                 f"{results['seeds']} seeds (mean +- sd)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    results = {"m": args.m, "d": D, "seeds": args.seeds, "epsilon": EPSILON, "delta": DELTA,
               "rounds": T, "settings": [run(args.m, args.seeds, s) for s in (0.01, 1e-4)]}
    for rec in results["settings"]:
        print(f"sensitivity {rec['sensitivity']}: final violated fraction {rec['final']}, "
              f"max gap {rec['max_gap_between_means']:.4f} "
              f"({rec['max_gap_in_standard_errors']:.2f} standard errors), "
              f"seconds per run {rec['seconds_per_run']}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "lp_convergence.json"), "w") as fh:
        json.dump(results, fh, indent=2)
    plot(results, os.path.join(RESULTS, "lp_convergence.png"))


if __name__ == "__main__":
    main()
