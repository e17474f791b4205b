"""fastmwem beside AIM on the suite's tables, with every default chosen leave-one-table-out.

The tables are ``benchmarks/data/suite`` (see its README: ten tables of different shapes, each a
CSV of codes and a domain). The workload is all 3-way marginals (all 2-way on a table of more
than 20 columns, as AIM's runs); a run is scored, as AIM's are (``_aim_common.mean_marginal_l1``),
by the mean L1 distance between normalised marginals of the fitted model and of the data, over all
2-way and over all 3-way marginals.

A *policy* is a named set of keyword arguments of :func:`fastmwem.release.mwem_with_defaults`
(``{}`` is the library's defaults), and of the defaults' constants to set for its runs
(``"constants"``, see :func:`constants`). Each policy runs on every table, epsilon and seed; a run is
cached in ``results/accuracy_suite.json`` (rerunning resumes; ``--policy NAME=JSON`` adds or
replaces one). Runs are in this process, one after another; a run's CPU time is the process's
user + system time over the run (every thread), after a warm-up run that compiles the kernels.

**Leave one table out.** For each privacy definition and each table T, the policy is chosen on
the *other* tables: the one with the smallest mean, over those tables, epsilons, seeds and the two
marginal orders, of ``log(error / best error of any policy on that table and epsilon)``, among
the policies whose runs there all ran (none refused) within ``MAX_CPU_SECONDS`` (``choose``). Its
errors on T are the held-out figures; the suite prints them beside AIM's (read from
``results/aim_suite.json`` and, for NLTCS, ``results/aim_reference.json``) as ratios; where
AIM did not finish a table inside its CPU cap, beside the independent noisy marginals of
``noisy_marginals.py`` instead (marked in the report and hatched in the figure). The policy
chosen on all tables at once is what the library's defaults should be.

Run: ``nice -n 10 python benchmarks/accuracy_suite.py [--tables mroz titanic] [--epsilons 0.3 1
3] [--seeds 0 1 2] [--privacy pure zcdp] [--report-only]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import json
import math
import os
import resource
import sys
import time
import warnings
from collections.abc import Iterator
from typing import cast

import numpy as np
from _aim_common import RESULTS, machine, mean_marginal_l1, write_json_atomic

from fastmwem.data import Dataset, Domain
from fastmwem.workloads import Marginals

SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "suite")
OUT = os.path.join(RESULTS, "accuracy_suite.json")
DELTA = 1e-9
#: A table with more columns than this is scored and fitted on 2-way marginals (as AIM's runs).
MAX_THREE_WAY_COLUMNS = 20
#: A policy with a run above this many CPU seconds on a table cannot be chosen there: the
#: suite's time limit for a default run (60 s wall on adult, the largest table here).
MAX_CPU_SECONDS = 60.0


def _estimators(**changes: str) -> dict[str, str]:
    """The defaults' ``DEFAULT_ESTIMATOR`` (as chosen by this suite) with some entries changed
    (``pure_dense="passes"``): a policy sets the whole table."""
    chosen = {"pure dense": "final-fit", "pure factored": "final-fit",
              "zcdp dense": "passes", "zcdp factored": "final-fit"}
    chosen.update({key.replace("_", " "): value for key, value in changes.items()})
    return chosen


#: The policies tried for each privacy definition (keyword arguments of mwem_with_defaults, and
#: ``constants`` of the defaults). ``{}`` is the library's defaults; the other policies are
#: written out in full, so that a change of the defaults does not change what they mean.
#: The signal bound of a factored model's rounds turned off (the defaults before it).
_NO_BOUND: dict[str, object] = {"FACTORED_NOISE_SHARE": {"pure": None, "zcdp": None}}
_NO_FLOOR = {"pure": False, "zcdp": False}


def _bound(pure: float | None, zcdp: float | None, floor: bool) -> dict[str, object]:
    """The signal bound's constants with both definitions' values written out."""
    return {"FACTORED_NOISE_SHARE": {"pure": pure, "zcdp": zcdp},
            "FACTORED_ROUNDS_FLOOR": {"pure": floor, "zcdp": floor}}


#: The zCDP defaults' model before a junction tree became their default for every marginal
#: workload: a dense histogram where it fits (the zCDP policies below ran so).
_DENSE_MODEL: dict[str, object] = {"DEFAULT_MODEL": {"pure": "auto", "zcdp": "auto"}}


def _dense(policy: dict[str, object]) -> dict[str, object]:
    """``policy`` with the zCDP defaults' dense model of before written out."""
    return {**policy, "constants": {**cast(dict[str, object], policy.get("constants", {})),
                                    **_DENSE_MODEL}}


# The fit's line search as it was: it doubled its step before every step.
_GROW_EVERY_STEP = {"models.fit._GROW_AFTER": 0}
POLICIES: dict[str, dict[str, dict[str, object]]] = {
    "pure": {"pure-default": {},
             # the defaults before the signal bound of a factored model's rounds: the ceiling
             "pure-factored-ceiling": {"constants": _NO_BOUND},
             # the defaults before the weighted final fit: passes on every model
             "pure-passes": {"constants": {"DEFAULT_ESTIMATOR": _estimators(
                 pure_dense="passes", pure_factored="passes"), **_NO_BOUND}},
             "pure-fixed": {"rounds": "fixed", "estimator": "passes", "constants": _NO_BOUND},
             "pure-adaptive": {"rounds": "adaptive", "estimator": "passes",
                               "constants": _NO_BOUND},
             "pure-adaptive-finalfit": {"rounds": "adaptive", "estimator": "final-fit",
                                        "constants": _NO_BOUND},
             # the weighted final fit on a factored model only
             "pure-factored-fit": {"constants": {"DEFAULT_ESTIMATOR": _estimators(
                 pure_dense="passes"), **_NO_BOUND}},
             # the signal bound without the floor of one round per attribute
             "pure-signal25": {"constants": _bound(0.25, None, False)},
             "pure-signal50": {"constants": _bound(0.5, None, False)},
             # 20 reuse passes a round (MWEMConfig's) instead of AUTO_REUSE_PASSES
             "pure-reuse20": {"reuse_passes": 20},
             # the defaults before their reuse passes stopped at 1e-3: MWEMConfig's 1e-4
             "pure-tol1e-4": {"reuse_tolerance": 1e-4},
             # the weighted final fit stopped after 300 steps (not 1000)
             "pure-fit300": {"final_fit_iterations": 300},
             # the defaults before the fit's line search waited for clean steps to double
             "pure-grow-every-step": {"constants": _GROW_EVERY_STEP}},
    "zcdp": {"zcdp-default": {},
             # the defaults before the junction tree on dense-sized domains
             "zcdp-dense": {"constants": _DENSE_MODEL},
             # the defaults before the signal bound of a factored model's rounds: the ceiling
             "zcdp-factored-ceiling": {"constants": _NO_BOUND},
             # the defaults before the weighted final fit on a factored model
             "zcdp-passes": {"constants": {"DEFAULT_ESTIMATOR": _estimators(
                 zcdp_factored="passes"), "FACTORED_MAX_ROUNDS": {"pure": 25, "zcdp": 25},
                 **_NO_BOUND}},
             "zcdp-r25": {"rounds": 25, "estimator": "passes"},
             "zcdp-r50": {"rounds": 50, "estimator": "passes"},
             "zcdp-adaptive": {"rounds": "adaptive", "estimator": "passes"},
             "zcdp-adaptive-finalfit": {"rounds": "adaptive", "estimator": "final-fit"},
             "zcdp-r25-oneway-finalfit": {"rounds": 25, "init": "one-way",
                                          "estimator": "final-fit"},
             # the defaults before up to 50 rounds on a factored model: up to 25
             "zcdp-factored25-fit": {"constants": {"FACTORED_MAX_ROUNDS": {"pure": 25,
                                                                           "zcdp": 25},
                                                   **_NO_BOUND}},
             # cliques of up to 2^20 cells (the default cap is 2^16): large 3-way marginals
             "zcdp-cap20": {"max_clique_cells": 2**20, "constants": {
                 "FACTORED_MAX_ROUNDS": {"pure": 25, "zcdp": 25}, **_NO_BOUND}},
             "zcdp-factored50-cap20": {"max_clique_cells": 2**20, "constants": {
                 "FACTORED_MAX_ROUNDS": {"pure": 25, "zcdp": 50}, **_NO_BOUND}},
             # the signal bound without the floor, and a looser one with it
             "zcdp-signal30": {"constants": _bound(None, 0.3, False)},
             "zcdp-signal60": {"constants": _bound(None, 0.6, False)},
             "zcdp-signal60-floor": {"constants": _bound(None, 0.6, True)},
             # 20 reuse passes a round (MWEMConfig's) instead of AUTO_REUSE_PASSES
             "zcdp-reuse20": {"reuse_passes": 20},
             # reuse passes stop once a pass moves the model by less than 1e-3 (not 1e-4)
             "zcdp-tol1e-3": {"reuse_tolerance": 1e-3},
             # the weighted final fit stopped after 300 steps (not 1000)
             "zcdp-fit300": {"final_fit_iterations": 300},
             # the defaults before the fit's line search waited for clean steps to double
             "zcdp-grow-every-step": {"constants": _GROW_EVERY_STEP}},
}
#: The zCDP policies that ran with the defaults' dense model (written out with it).
_RAN_DENSE = ("zcdp-factored-ceiling", "zcdp-passes", "zcdp-r25", "zcdp-r50", "zcdp-adaptive",
              "zcdp-adaptive-finalfit", "zcdp-r25-oneway-finalfit", "zcdp-factored25-fit",
              "zcdp-cap20", "zcdp-factored50-cap20", "zcdp-signal30", "zcdp-signal60",
              "zcdp-signal60-floor")
POLICIES["zcdp"] = {name: _dense(policy) if name in _RAN_DENSE else policy
                   for name, policy in POLICIES["zcdp"].items()}
# The pure policies ran with reuse passes stopping at MWEMConfig's 1e-4 (written out with it).
POLICIES["pure"] = {name: policy if name in ("pure-default", "pure-tol1e-4", "pure-fit300",
                                              "pure-grow-every-step")
                    else {**policy, "reuse_tolerance": 1e-4}
                    for name, policy in POLICIES["pure"].items()}
ORDERS = ("mean_l1_2way", "mean_l1_3way")


def tables() -> list[str]:
    """The suite's table names, smallest first (by rows)."""
    names = sorted(f[:-len("-domain.json")] for f in os.listdir(SUITE) if f.endswith("-domain.json"))
    return sorted(names, key=lambda n: os.path.getsize(os.path.join(SUITE, f"{n}.csv.gz")))


def load(name: str) -> Dataset:
    """One suite table: its codes and its domain."""
    with open(os.path.join(SUITE, f"{name}-domain.json"), encoding="utf-8") as fh:
        sizes = json.load(fh)
    domain = Domain(list(sizes), list(sizes.values()))
    with gzip.open(os.path.join(SUITE, f"{name}.csv.gz"), "rt", encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
        codes = np.loadtxt(fh, delimiter=",", dtype=np.int64, ndmin=2)
    if header != list(sizes):
        raise SystemExit(f"{name}: the CSV's columns are not the domain's")
    return Dataset(codes, domain)


def order_of(data: Dataset) -> int:
    return 3 if len(data.domain) <= MAX_THREE_WAY_COLUMNS else 2


@contextlib.contextmanager
def constants(values: dict[str, object]) -> Iterator[None]:
    """Module constants set to ``values`` for one run, then restored: a policy may vary a
    constant of the rules as well as an option. A plain name is one of the defaults'
    (:mod:`fastmwem.release.mwem.auto`); a dotted one names its module within fastmwem
    (``"models.fit._GROW_AFTER"``)."""
    from fastmwem.release.mwem import auto

    def owner(name: str) -> tuple[object, str]:
        module, _, attribute = name.rpartition(".")
        return (importlib.import_module(f"fastmwem.{module}") if module else auto), attribute

    unknown = [name for name in values if not hasattr(*owner(name))]
    if unknown:
        raise SystemExit(f"no such constant: {unknown}")
    saved = {name: getattr(*owner(name)) for name in values}
    try:
        for name, value in values.items():
            setattr(*owner(name), value)
        yield
    finally:
        for name, value in saved.items():
            setattr(*owner(name), value)


def run_once(data: Dataset, privacy: str, epsilon: float, seed: int,
             options: dict[str, object]) -> dict[str, object]:
    """One fastmwem run: its errors, CPU and wall seconds, and what the defaults chose.

    ``options`` are keyword arguments of ``mwem_with_defaults``, but for ``"constants"``: the
    defaults' constants to set for this run (:func:`constants`)."""
    from fastmwem.release import mwem_with_defaults

    options = dict(options)
    overrides = cast(dict[str, object], options.pop("constants", {}))

    workload = Marginals.all_kway(data.domain, order_of(data))
    budget: dict[str, object] = {"epsilon": epsilon, "privacy": privacy}
    if privacy == "zcdp":
        budget["delta"] = DELTA
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded run warns that it is not private
        try:
            with constants(overrides):
                result = mwem_with_defaults(data, workload, rng=seed, **budget, **options)
        except (TypeError, ValueError) as error:  # an option this fastmwem does not take
            return {"status": "rejected", "error": str(error)[:300]}
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - started
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def estimate(attrs: tuple[str, ...]) -> np.ndarray:
        return result.answer(Marginals(data.domain, [attrs]))

    choices = result.choices
    return {"status": "ok", "cpu_seconds": cpu, "wall_seconds": wall,
            "mean_l1_2way": mean_marginal_l1(data, estimate, 2),
            "mean_l1_3way": mean_marginal_l1(data, estimate, 3),
            "rounds": None if choices is None else choices.rounds,
            "adaptive": None if choices is None else choices.adaptive}


def aim_results() -> dict[tuple[str, float], dict[str, object]]:
    """AIM's cached runs by (table, epsilon): the mean of its ok runs, or its status."""
    found: dict[tuple[str, float], list[dict[str, object]]] = {}
    for name in ("aim_suite.json", "aim_reference.json"):
        path = os.path.join(RESULTS, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as fh:
            for run in json.load(fh).get("runs", []):
                found.setdefault((str(run["dataset"]), float(run["epsilon"])), []).append(run)
    out: dict[tuple[str, float], dict[str, object]] = {}
    for key, runs in found.items():
        ok = [r for r in runs if r.get("status") == "ok"]
        if not ok:
            out[key] = {"status": runs[-1].get("status", "missing")}
            continue
        out[key] = {"status": "ok", **{m: float(np.mean([float(r[m]) for r in ok]))
                                       for m in (*ORDERS, "cpu_seconds")}}
    return out


def noisy_marginal_results() -> dict[tuple[str, float], dict[str, object]]:
    """The fallback reference (``noisy_marginals.py``) by (table, epsilon): its mean errors."""
    path = os.path.join(RESULTS, "noisy_marginals.json")
    if not os.path.exists(path):
        return {}
    found: dict[tuple[str, float], list[dict[str, object]]] = {}
    with open(path, encoding="utf-8") as fh:
        for run in json.load(fh).get("runs", []):
            found.setdefault((str(run["table"]), float(run["epsilon"])), []).append(run)
    return {key: {"status": "ok", **{m: float(np.mean([float(r[m]) for r in runs]))  # type: ignore[arg-type]
                                     for m in ORDERS if all(m in r for r in runs)}}
            for key, runs in found.items()}


def reference(aim: dict[tuple[str, float], dict[str, object]],
              noisy: dict[tuple[str, float], dict[str, object]], table: str, eps: float
              ) -> tuple[str, dict[str, object]]:
    """AIM's errors where its run finished; where it could not (a timeout or a failure), the
    independent noisy marginals' (if run). A table AIM was not run on stays without reference."""
    ref = aim.get((table, eps), {"status": "missing"})
    if ref["status"] not in ("timeout", "failed") or (table, eps) not in noisy:
        return "aim", ref
    return "noisy marginals", noisy[(table, eps)]


def _mean_errors(runs: list[dict], table: str, policy: str, eps: float) -> dict[str, float] | None:
    hits = [r for r in runs if r["table"] == table and r["policy"] == policy
            and r["epsilon"] == eps and r.get("status") == "ok"]
    if not hits:
        return None
    means = {m: float(np.mean([r[m] for r in hits])) for m in (*ORDERS, "cpu_seconds")}
    return {**means, "max_cpu_seconds": max(float(r["cpu_seconds"]) for r in hits),
            "max_wall_seconds": max(float(r["wall_seconds"]) for r in hits)}


def regret(runs: list[dict], names: list[str], tables_: list[str], epsilons: list[float]
           ) -> dict[str, float]:
    """Each policy's mean log error ratio to the best policy, over tables, epsilons and orders."""
    scores: dict[str, list[float]] = {p: [] for p in names}
    for table in tables_:
        for eps in epsilons:
            means = {p: _mean_errors(runs, table, p, eps) for p in names}
            if not means or any(v is None for v in means.values()):
                continue  # compare policies only where every one of them ran
            for metric in ORDERS:
                best = min(v[metric] for v in means.values() if v is not None)
                for p, v in means.items():
                    if v is not None and best > 0:
                        scores[p].append(math.log(v[metric] / best))
    return {p: float(np.mean(s)) if s else math.inf for p, s in scores.items()}


def choose(runs: list[dict], names: list[str], tables_: list[str], epsilons: list[float]
           ) -> str:
    """The policy of least regret among those within the time limit on ``tables_``.

    A policy is eligible when none of its runs on these tables was refused (a default must run
    on every table: 50 fixed rounds are refused where fewer candidates exist) or took more than
    ``MAX_CPU_SECONDS`` (the time limit for a default run on the largest table); if none is,
    the least regret decides alone.
    """
    mean = regret(runs, names, tables_, epsilons)
    mine = {p: [r for r in runs if r["policy"] == p and r["table"] in tables_] for p in names}
    eligible = [p for p in names
                if all(r.get("status") == "ok" for r in mine[p])
                and max((float(r["cpu_seconds"]) for r in mine[p]), default=0.0)
                <= MAX_CPU_SECONDS] or names
    return min(eligible, key=lambda p: mean[p])


def held_out(runs: list[dict], privacy: str, tables_: list[str], epsilons: list[float],
             aim: dict[tuple[str, float], dict[str, object]],
             noisy: dict[tuple[str, float], dict[str, object]] | None = None) -> dict[str, object]:
    """The leave-one-table-out choice and its held-out ratios to AIM (or, where AIM did not
    finish, to the independent noisy marginals), per table and epsilon."""
    noisy = noisy or {}
    names = [p for p in POLICIES[privacy] if any(r["policy"] == p for r in runs)]
    rows: list[dict[str, object]] = []
    if not names:
        return {"privacy": privacy, "rows": rows, "in_sample_scores": {},
                "winner_on_all_tables": None}
    for table in tables_:
        others = [t for t in tables_ if t != table]
        chosen = choose(runs, names, others, epsilons)
        for eps in epsilons:
            mine = _mean_errors(runs, table, chosen, eps)
            kind, ref = reference(aim, noisy, table, eps)
            row: dict[str, object] = {"table": table, "epsilon": eps, "policy": chosen,
                                      "aim_status": aim.get((table, eps), {}).get("status",
                                                                                  "missing"),
                                      "reference": kind}
            if mine is not None:
                row.update({f"fastmwem_{m}": v for m, v in mine.items()})
            elif any(r["table"] == table and r["policy"] == chosen and r["epsilon"] == eps
                     and r.get("status") == "rejected" for r in runs):
                row["fastmwem_status"] = "refused"  # the chosen policy cannot run here
            if mine is not None and ref["status"] == "ok":
                for m in ORDERS:
                    if m in ref:
                        row[f"ratio_{m}"] = mine[m] / float(ref[m])  # type: ignore[arg-type]
                if kind == "aim":
                    row["cpu_ratio"] = (float(ref["cpu_seconds"])  # type: ignore[arg-type]
                                        / max(mine["cpu_seconds"], 1e-9))
            rows.append(row)
    overall = regret(runs, names, tables_, epsilons)
    return {"privacy": privacy, "rows": rows, "in_sample_scores": overall,
            "least_regret_on_all_tables": min(names, key=lambda p: overall[p]),
            "winner_on_all_tables": choose(runs, names, tables_, epsilons)}


def plot(reports: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, len(reports), figsize=(6 * len(reports), 4.5), squeeze=False)
    for ax, report in zip(axes[0], reports):
        rows = [r for r in report["rows"] if "ratio_mean_l1_2way" in r]
        labels = sorted({r["table"] for r in rows})
        epsilons = sorted({r["epsilon"] for r in rows})
        width = 0.8 / max(len(epsilons), 1)
        for j, eps in enumerate(epsilons):
            found = [next((r for r in rows if r["table"] == t and r["epsilon"] == eps), None)
                     for t in labels]
            # 3-way where the reference answers it; the noisy 2-way marginals of a wide table not
            values = [np.nan if r is None else r.get("ratio_mean_l1_3way", r["ratio_mean_l1_2way"])
                      for r in found]
            bars = ax.bar(np.arange(len(labels)) + j * width, values, width, color=f"C{j}")
            for bar, r in zip(bars, found):
                if r is not None and r.get("reference") == "noisy marginals":
                    bar.set_hatch("//")  # AIM did not finish: against independent noisy marginals
        ax.axhline(1.0 if report["privacy"] == "zcdp" else 1.2, color="k", lw=1, ls="--")
        ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels, rotation=45, ha="right")
        ax.set_ylabel("error / AIM's (hatched: / noisy marginals')")
        ax.set_title(f"{report['privacy']}: policy chosen on the other tables")
        ax.legend(handles=[Patch(color=f"C{j}", label=f"eps {eps:g}")
                           for j, eps in enumerate(epsilons)], fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=None)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--privacy", nargs="+", choices=sorted(POLICIES), default=sorted(POLICIES))
    parser.add_argument("--policy", action="append", default=[],
                        help="NAME=JSON: a policy (keyword arguments), added to its definition's "
                             "list (the name starts with 'pure' or 'zcdp')")
    parser.add_argument("--only", nargs="+", default=None, help="run only these policies")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--rerun", action="store_true",
                        help="run again (and replace) the runs already in the results")
    parser.add_argument("--out", default=OUT)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    for text in args.policy:
        name, _, options = text.partition("=")
        family = name.split("-")[0]
        if family not in POLICIES or not options:
            raise SystemExit(f"--policy must be NAME=JSON with NAME starting pure- or zcdp-: {text!r}")
        POLICIES[family][name] = json.loads(options)
    names = args.tables or tables()
    previous = json.load(open(args.out, encoding="utf-8")) if os.path.exists(args.out) else {}
    runs: list[dict] = list(previous.get("runs", []))
    done = {(r["table"], r["policy"], r["epsilon"], r["seed"], json.dumps(r["options"], sort_keys=True))
            for r in runs}

    def save() -> list[dict]:
        aim, noisy = aim_results(), noisy_marginal_results()
        reports = [held_out(runs, p, names, args.epsilons, aim, noisy) for p in args.privacy]
        write_json_atomic(args.out, {
            "benchmark": "accuracy_suite: fastmwem (policies chosen leave-one-table-out) beside AIM",
            "machine": machine(), "delta": DELTA, "policies": POLICIES, "runs": runs,
            "held_out": reports})
        return reports

    if not args.report_only:
        warm = load(names[0])
        run_once(warm, "pure", 1.0, 0, {})  # compiles the kernels outside every measured run
        for table in names:
            data = load(table)
            for privacy in args.privacy:
                for policy, options in POLICIES[privacy].items():
                    if args.only and policy not in args.only:
                        continue
                    for eps in args.epsilons:
                        for seed in args.seeds:
                            key = (table, policy, eps, seed, json.dumps(options, sort_keys=True))
                            if key in done and not args.rerun:
                                continue
                            measured = run_once(data, privacy, eps, seed, options)
                            runs[:] = [r for r in runs if (r["table"], r["policy"], r["epsilon"],
                                                           r["seed"]) != key[:4]]
                            runs.append({"table": table, "policy": policy, "privacy": privacy,
                                         "epsilon": eps, "seed": seed, "options": options,
                                         **measured})
                            print(f"{table:>10} {policy:>16} eps {eps:<4g} seed {seed} "
                                  f"{measured.get('mean_l1_3way', measured['status'])} "
                                  f"{measured.get('cpu_seconds', 0):.1f} s", flush=True)
                            done.add(key)
                save()
    reports = save()
    for report in reports:
        print(f"\n{report['privacy']}: winner on all tables {report['winner_on_all_tables']}")
        print(f"{'table':>10} {'eps':>4} {'policy':>16} {'2-way x AIM':>11} {'3-way x AIM':>11} "
              f"{'AIM cpu x':>9}  reference")
        for r in report["rows"]:
            def cell(key: str, fmt: str = "{:.2f}", r: dict = r) -> str:
                if key in r:
                    return fmt.format(r[key])
                return str(r.get("fastmwem_status", r.get("aim_status", "-")))
            print(f"{r['table']:>10} {r['epsilon']:>4g} {r['policy']:>16} "
                  f"{cell('ratio_mean_l1_2way'):>11} {cell('ratio_mean_l1_3way'):>11} "
                  f"{cell('cpu_ratio', '{:.0f}'):>9}  {r.get('reference', 'aim')}")
    plot(reports, os.path.splitext(args.out)[0] + ".png")


if __name__ == "__main__":
    sys.exit(main())
