"""The lazy round's law at full scale: a mid-run MWEM round over 10^6 counting queries.

The unit tests check the lazy selection's law by chi-square on a few dozen queries. This checks
it where the end-to-end benchmark runs: ``m = 10^6`` random counting queries over 256 cells,
``n = 10^5`` records, the state after ``--rounds`` rounds of ``mwem(selection="lazy")`` (its
synthetic distribution and its measured queries, which are excluded), the round's epsilon of a
``T = 100`` run. The exact law is computed by a scan (every score, softmax); the lazy chooser
(``LazySelection``, bit-packed oracle, the release-default ChaCha20 generator) draws
``--draws`` selections. The scores are cut into ten bins of equal probability under the exact
law and the counts compared by chi-square; the mean selected score is compared with its exact
expectation. A control draws the same number from the exact law directly.

Run: ``nice python benchmarks/fast_mwem_law_at_scale.py [--draws 6000]``. Writes
benchmarks/results/fast_mwem_law_at_scale.json and .png. About 4 minutes on the loaded machine.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _fast_common import (
    binary_domain,
    dirichlet_multinomial,
    machine,
    pyplot,
    release_generator,
    write_json,
)
from scipy import stats

from fastmwem import mwem
from fastmwem.models.state import MWState
from fastmwem.release.mwem.data_view import PrivateView
from fastmwem.release.selection import LazySelection
from fastmwem.workloads import RandomCountingQueries

BINS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=float, default=1e6)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=50, help="rounds run before the check")
    parser.add_argument("--draws", type=int, default=6000)
    args = parser.parse_args()
    load_before = os.getloadavg()
    domain = binary_domain(8)
    workload = RandomCountingQueries(domain, int(args.queries), rng=12345)
    data = dirichlet_multinomial(domain, args.records, 0)
    hist = data.histogram()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = mwem(data, workload, epsilon=1.0, rounds=args.rounds, selection="lazy",
                     rng=release_generator("chacha", 7), progress=False)
    # the selection epsilon of each round of a T = 100 run at epsilon = 1 (1% for the count)
    epsilon = 0.99 / 100 / 2
    distribution = state.histogram / state.histogram.sum()
    available = np.ones(workload.n_queries, dtype=bool)
    available[list(state.selected)] = False
    scores = np.abs(workload.answer(distribution) * state.total - workload.answer(hist))
    allowed = scores[available]
    logw = epsilon / 2 * allowed
    law = np.exp(logw - logw.max())
    law /= law.sum()
    order = np.argsort(allowed)
    edges = allowed[order][np.searchsorted(np.cumsum(law[order]), np.linspace(0.1, 0.9, 9))]
    expected = np.bincount(np.searchsorted(edges, allowed, side="right"), weights=law,
                           minlength=BINS)

    selection = LazySelection()
    sens = np.ones(workload.n_queries)
    selection.check(workload, epsilon=epsilon, group_mode=False, sensitivities=sens)
    private = PrivateView(data, workload, dense=True, groups=np.arange(workload.n_groups))
    chooser = selection.prepare(workload, private, epsilon=epsilon, group_mode=False,
                                sensitivities=sens, penalties=np.zeros(workload.n_queries))
    gen = release_generator("chacha", 2024)
    started = time.perf_counter()
    synthetic = MWState(workload.domain, distribution, state.total)
    picks = np.array([chooser.choose(synthetic, available, gen)
                      for _ in range(args.draws)])
    seconds = time.perf_counter() - started
    if not available[picks].all():
        raise RuntimeError("an excluded query was selected")
    control = np.flatnonzero(available)[np.random.default_rng(5).choice(
        allowed.size, size=args.draws, p=law)]
    out = {}
    for name, chosen in (("lazy", picks), ("control_exact_law", control)):
        counts = np.bincount(np.searchsorted(edges, scores[chosen], side="right"),
                             minlength=BINS)
        test = stats.chisquare(counts, expected * args.draws)
        out[name] = {"counts": counts.tolist(), "chi2": float(test.statistic),
                     "pvalue": float(test.pvalue), "mean_score": float(scores[chosen].mean())}
    sd = float(np.sqrt(law @ (allowed - law @ allowed) ** 2))
    summary = {"expected_mean_score": float(law @ allowed), "score_sd_under_law": sd,
               "mean_score_standard_error": sd / np.sqrt(args.draws),
               "mean_tail_draws": float(np.mean(chooser.tail_draws)),
               "lazy_ms_per_draw": 1e3 * seconds / args.draws, "epsilon": epsilon,
               "excluded": int((~available).sum()), "max_probability": float(law.max()), **out}
    print({k: v for k, v in summary.items()}, flush=True)
    stem = write_json("fast_mwem_law_at_scale", {"meta": {**machine(load_before),
                                                          "args": vars(args)},
                                                 "summary": summary})
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(BINS)
    ax.bar(x - 0.2, out["lazy"]["counts"], 0.4,
           label=f"lazy (p = {out['lazy']['pvalue']:.2f})")
    ax.bar(x + 0.2, out["control_exact_law"]["counts"], 0.4, alpha=0.6,
           label=f"exact law, control (p = {out['control_exact_law']['pvalue']:.2f})")
    ax.axhline(args.draws / BINS, color="black", linewidth=0.8, label="expected")
    ax.set_xlabel("score decile under the exact law")
    ax.set_ylabel("selections")
    ax.set_title(f"mid-run round, m = {workload.n_queries:,}, {args.draws} draws", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=120)


if __name__ == "__main__":
    main()
