"""Fig. 2 of arXiv:2204.01132, as recovered in docs/continuous.md

Distribution of the number of proposals of the exact sampler (ConfAtomPerfect, corrected
kernel) for the 1-D L1 mean, Laplace random-walk proposals with rate a = n eps / 2, data drawn
from Beta(1,1), Beta(10,10) and Beta(0.1,0.1), n in {10, 100, 1000}, eps in {0.1, 1}, 1000
replications (a fresh dataset and one draw each). Two exit densities:

* "laplace-exit": h = Laplace(mean, rate c), the paper's implicit h = q(a, .); always-accept
  kappa = 2 w / ((1 - w) c), so beta = w = 1/2;
* "uniform-exit": h uniform, kappa = 1, beta = 1/2.

The theoretical mean for a dataset is (1 - w) / (beta (1 - k_X)) with k_X = kappa / (kappa + C_X).

Run: /work/venv/bin/python benchmarks/continuous_runtime.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from fastmwem.mechanisms.continuous import LaplaceProposal, MeanL1Loss, atom_design  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
DISTS = {"Beta(1,1)": (1.0, 1.0), "Beta(10,10)": (10.0, 10.0), "Beta(0.1,0.1)": (0.1, 0.1)}
NS = (10, 100, 1000)
EPSILONS = (0.1, 1.0)
REPS = 1000


def run_config(design: str, dist: tuple[float, float], n: int, eps: float,
               rng: np.random.Generator) -> dict:
    props = np.empty(REPS, dtype=np.int64)
    theory = np.empty(REPS)
    for r in range(REPS):
        loss = MeanL1Loss(rng.beta(*dist, size=n))
        mech = loss.mechanism(eps)
        kwargs = {"proposal": LaplaceProposal(rate=loss.rate(eps))}
        if design == "laplace-exit":
            kwargs["exit"] = loss.laplace_exit(eps)
        draw = mech.sample(rng=rng, **kwargs)
        props[r] = draw.proposals
        theory[r] = atom_design(mech, **kwargs).expected_atom_proposals(
            loss.normalising_constant(eps))
    q = np.quantile(props, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {"proposals": props, "mean": float(props.mean()), "theory_mean": float(theory.mean()),
            "quantiles_5_25_50_75_95": q.tolist(), "max": int(props.max())}


def main() -> None:
    t0 = time.perf_counter()
    rng = np.random.default_rng(2204)
    results = []
    fig, axes = plt.subplots(2, len(EPSILONS), figsize=(12, 7), sharey="row")
    colors = ["tab:blue", "tab:orange", "tab:green"]
    for row, design in enumerate(("laplace-exit", "uniform-exit")):
        for col, eps in enumerate(EPSILONS):
            ax = axes[row, col]
            for j, (name, dist) in enumerate(DISTS.items()):
                data, pos = [], []
                for i, n in enumerate(NS):
                    res = run_config(design, dist, n, eps, rng)
                    props = res.pop("proposals")
                    results.append({"design": design, "data": name, "n": n, "epsilon": eps,
                                    **res})
                    print(design, name, n, eps, res["mean"], round(res["theory_mean"], 3),
                          res["quantiles_5_25_50_75_95"])
                    data.append(np.maximum(props, 1))
                    pos.append(i * 4 + j)
                bp = ax.boxplot(data, positions=pos, widths=0.8, patch_artist=True,
                                showfliers=False)
                for patch in bp["boxes"]:
                    patch.set_facecolor(colors[j])
                ax.plot([], [], color=colors[j], lw=6, label=name)
            ax.set_yscale("log")
            ax.set_xticks([i * 4 + 1 for i in range(len(NS))], [f"n={n}" for n in NS])
            ax.set_title(f"{design}, eps={eps}")
            ax.set_ylabel("proposals per exact draw (max(.,1))")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("Fig. 2: proposals of ConfAtomPerfect (Example 1, d=1, Laplace proposals a=n eps/2)")
    fig.tight_layout()
    fig.savefig(OUT / "continuous_runtime.png", dpi=110)
    out = {"description": __doc__.strip().splitlines()[0], "replications": REPS,
           "w": 0.5, "results": results, "seconds": time.perf_counter() - t0}
    (OUT / "continuous_runtime.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
