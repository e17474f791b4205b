"""The suite's fallback reference: every workload marginal measured once, independently.

Where AIM cannot finish a table inside its CPU cap (``aim_suite.json`` records a timeout or a
failure), the suite compares fastmwem with the simplest zCDP release of the same workload at
the same ``(epsilon, delta)``: each of the ``K`` workload marginals (all 3-way, or all 2-way
above 20 columns, as in ``accuracy_suite.py``) measured once with Gaussian noise of variance
``K / (2 rho)`` (each marginal has L2 sensitivity 1, so the ``K`` measurements compose to
``rho``), ``rho`` the largest that converts to ``(epsilon, 1e-9)`` under the tight conversion
(the same ``rho`` AIM's runs get). No model: a scored marginal of the workload's order is its
own noisy counts, clipped at zero; a lower-order marginal is the inverse-variance weighted
mean of the projections of every measured marginal that contains it (a projection summing
``c`` noisy cells has ``c`` times the variance). Marginals above the workload's order are not
scored (this baseline has nothing to say about them).

These are reference figures, never a release: the noise is drawn as numpy normals rounded to
integers (at these scales, sigma >= 18 on every suite table, its L1 error is that of the exact discrete Gaussian to
well within the spread of the three repeats), so a table of a million noisy cells takes a
second instead of the minute the exact sampler would need.

Run: ``python benchmarks/noisy_marginals.py [--tables adult] [--epsilons 0.3 1 3]
[--seeds 0 1 2]``; results in ``results/noisy_marginals.json``, read by ``accuracy_suite.py``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import resource
import sys
from collections.abc import Callable

import numpy as np
from _aim_common import RESULTS, machine, mean_marginal_l1, write_json_atomic
from accuracy_suite import DELTA, load, order_of, tables

from fastmwem.accounting import approx_dp_to_zcdp_budget
from fastmwem.data import Dataset

OUT = os.path.join(RESULTS, "noisy_marginals.json")


def measure(data: Dataset, rho: float, rng: np.random.Generator
            ) -> tuple[dict[tuple[str, ...], np.ndarray], float]:
    """Every workload marginal plus rounded Gaussian noise; and the noise's sigma."""
    order = order_of(data)
    attribute_sets = list(itertools.combinations(data.domain.attributes, order))
    sigma = math.sqrt(len(attribute_sets) / (2.0 * rho))
    noisy = {}
    for attrs in attribute_sets:
        counts = np.asarray(data.marginal(attrs), dtype=np.float64)
        noisy[attrs] = counts + np.rint(rng.normal(0.0, sigma, size=counts.shape))
    return noisy, sigma


def estimator(data: Dataset, noisy: dict[tuple[str, ...], np.ndarray]
              ) -> Callable[[tuple[str, ...]], np.ndarray]:
    """``estimate(attrs)`` for ``mean_marginal_l1``: measured, or a weighted mean of projections."""
    names = list(data.domain.attributes)
    sizes = dict(zip(names, data.domain.shape))

    def estimate(attrs: tuple[str, ...]) -> np.ndarray:
        if attrs in noisy:
            return noisy[attrs]
        total, weights = 0.0, 0.0
        for measured, counts in noisy.items():
            if not set(attrs) <= set(measured):
                continue
            dropped = tuple(i for i, a in enumerate(measured) if a not in attrs)
            weight = 1.0 / math.prod(sizes[measured[i]] for i in dropped)  # 1 / variance
            total = total + weight * counts.sum(axis=dropped)
            weights += weight
        if weights == 0.0:
            raise ValueError(f"no measured marginal contains {attrs}")
        return np.asarray(total) / weights

    return estimate


def run(data: Dataset, epsilon: float, seed: int) -> dict[str, object]:
    """One repeat: the errors of the noisy marginals at ``(epsilon, DELTA)``."""
    rho = float(approx_dp_to_zcdp_budget(epsilon, DELTA, conversion="tight"))
    before = resource.getrusage(resource.RUSAGE_SELF)
    noisy, sigma = measure(data, rho, np.random.default_rng(seed))
    estimate = estimator(data, noisy)
    order = order_of(data)
    errors = {f"mean_l1_{k}way": mean_marginal_l1(data, estimate, k) for k in range(2, order + 1)}
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rho": rho, "sigma": sigma, "workload_order": order, "marginals": len(noisy),
            "cells": int(sum(v.size for v in noisy.values())), "cpu_seconds": cpu, **errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=None)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    runs = []
    for table in args.tables or tables():
        data = load(table)
        for eps in args.epsilons:
            for seed in args.seeds:
                result = {"table": table, "epsilon": eps, "seed": seed, **run(data, eps, seed)}
                runs.append(result)
                print(f"{table:>10} eps {eps:<4g} seed {seed} sigma {result['sigma']:.1f} "
                      + " ".join(f"{k} {result[k]:.4f}" for k in result if k.startswith("mean_l1")),
                      flush=True)
    write_json_atomic(args.out, {
        "benchmark": "noisy_marginals: each workload marginal measured once (zCDP, rounded "
                     "Gaussian noise; a reference, never a release)",
        "machine": machine(), "delta": DELTA, "conversion": "tight", "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
