"""Written records beside the model: independent, systematic and matched sampling.

One model per seed (``mwem_with_defaults``, all 3-way marginals, epsilon 1, pure DP, default options) on
adult (a junction tree; needs ``--data DIR``) and NLTCS (dense, bundled); then records drawn from
it by each method at 1x and 4x the noisy record count. For each: mean L1 over all 2-way and
3-way marginals of the records against the real data (the model's own error beside it) and the
seconds ``MWEMResult.sample`` took. The compiled matching loop is compiled before anything is
timed. Writes ``results/sampling_methods.json`` (rows, means per setting, and each method's
error and time as a ratio to systematic sampling's in the same run) and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _aim_common import write_json_atomic
from factored_mwem import DEFAULT_DATA, RESULTS, Truth, load, records_marginal, result_marginal

from fastmwem.datasets import load_nltcs
from fastmwem.models.matching import match_marginals
from fastmwem.release import mwem_with_defaults
from fastmwem.workloads import Marginals

METHODS = ("independent", "systematic", "matched")
MULTIPLES = (1, 4)
METRICS = ("mean_l1_2way", "mean_l1_3way", "seconds")


def compile_matching() -> None:
    """Run the matching loop once on a toy table, so that no timing includes numba's compile."""
    codes = np.zeros((4, 2), dtype=np.int64)
    match_marginals(codes, (2, 2), [(0, 1)], lambda axes: np.full((2, 2), 0.25),
                    np.random.default_rng(0))


def runs(name: str, data, seeds: int, multiples: tuple[int, ...]) -> list[dict]:
    truth = Truth(data)
    rows = []
    for seed in range(seeds):
        result = mwem_with_defaults(data, Marginals.all_kway(data.domain, 3), epsilon=1.0,
                                    rng=seed)
        model = truth.errors(result_marginal(result, data.domain))
        count = max(1, int(round(result.choices.record_count)))
        for multiple in multiples:
            for method in METHODS:
                started = time.perf_counter()
                frame = result.sample(count * multiple, rng=seed + 1, decode=False,
                                      sampling=method)
                seconds = time.perf_counter() - started
                errors = truth.errors(records_marginal(frame.to_numpy(), data.domain))
                rows.append({"data": name, "seed": seed,
                             "model": "dense" if result.model is None else result.model.kind,
                             "method": method, "multiple": multiple,
                             "records": count * multiple, "seconds": seconds, **errors,
                             "model_errors": model})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["data"], r["multiple"], r["method"]), []).append(r)
    out = []
    for (name, multiple, method), rs in groups.items():
        entry = {"data": name, "multiple": multiple, "method": method, "runs": len(rs)}
        for m in METRICS:
            entry[m] = float(np.mean([r[m] for r in rs]))
        for m in ("mean_l1_2way", "mean_l1_3way"):
            entry["model_" + m] = float(np.mean([r["model_errors"][m] for r in rs]))
        out.append(entry)
    for entry in out:
        base = next(e for e in out if e["data"] == entry["data"]
                    and e["multiple"] == entry["multiple"] and e["method"] == "systematic")
        for m in METRICS:
            entry[m + "_vs_systematic"] = entry[m] / base[m]
    return out


def plot(summary: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({e["data"] for e in summary})
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(6 * (len(names) + 1), 4.4))
    for ax, name in zip(axes, names):
        ones = [e for e in summary if e["data"] == name and e["multiple"] == 1]
        x = np.arange(2)
        for i, method in enumerate(METHODS):
            e = next(e for e in ones if e["method"] == method)
            ax.bar(x + (i - 1) * 0.25, [e["mean_l1_2way"], e["mean_l1_3way"]], width=0.25,
                   label=f"records, {method}")
        model = ones[0]
        ax.scatter(x, [model["model_mean_l1_2way"], model["model_mean_l1_3way"]], color="k",
                   marker="_", s=900, zorder=3, label="the model itself")
        ax.set_xticks(x, ["2-way", "3-way"])
        ax.set_ylabel("mean L1 over all marginals")
        ax.set_title(f"{name}, epsilon 1, records = noisy count")
        ax.legend(fontsize=7)
    ax = axes[-1]
    for name in names:
        for method in METHODS:
            pts = sorted((e for e in summary if e["data"] == name and e["method"] == method),
                         key=lambda e: e["multiple"])
            ax.plot([e["multiple"] for e in pts], [e["seconds"] for e in pts], marker="o",
                    label=f"{name}, {method}")
    ax.set_yscale("log")
    ax.set_xlabel("records / noisy record count")
    ax.set_ylabel("seconds to draw (MWEMResult.sample)")
    ax.set_title("time to write the records")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "sampling_methods.png"), dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA, help="directory holding adult.csv")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one seed, 1x records only")
    args = parser.parse_args()
    if not os.path.isfile(os.path.join(args.data, "adult.csv")):
        parser.error(f"--data {args.data!r} holds no adult.csv")
    warnings.simplefilter("ignore")  # seeded runs: this is a benchmark, not a release
    seeds, multiples = (1, (1,)) if args.quick else (args.seeds, MULTIPLES)
    compile_matching()
    rows = (runs("adult", load(args.data, "adult"), seeds, multiples)
            + runs("nltcs", load_nltcs(), seeds, multiples))
    summary = summarise(rows)
    payload = {"benchmark": "sampling_methods", "epsilon": 1.0, "seeds": seeds,
               "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "platform": platform.platform()},
               "rows": rows, "summary": summary}
    write_json_atomic(os.path.join(RESULTS, "sampling_methods.json"), payload)
    plot(summary)
    for e in summary:
        print(f"{e['data']:>6} x{e['multiple']} {e['method']:>11}: 2-way {e['mean_l1_2way']:.4f} "
              f"3-way {e['mean_l1_3way']:.4f} (model {e['model_mean_l1_2way']:.4f} / "
              f"{e['model_mean_l1_3way']:.4f}), {e['seconds']:.2f} s "
              f"({e['seconds_vs_systematic']:.1f}x systematic)")


if __name__ == "__main__":
    main()
