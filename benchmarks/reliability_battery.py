"""Reliability battery: bad inputs must get a clear error before any budget is spent.

Runs every case of the battery in ``tests/reliability`` (its docstring lists the categories),
each in a forked child process with a fresh temporary directory, a memory cap and a timeout, and
writes every case's category and message to ``benchmarks/results/reliability_battery.json``.
The test suite runs the same cases (``pytest tests/reliability``; the long ones with
``-m slow``).

Usage, from the repository root: ``python benchmarks/reliability_battery.py [--only SUBSTRING]
[--quiet]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Numerical libraries run one thread a case; set before numpy is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests/

import fastmwem  # noqa: E402
from tests.reliability import all_cases  # noqa: E402
from tests.reliability._runner import preload, run_cases  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "reliability_battery.json"
BAD_CATEGORIES = ("clear", "unclear", "nonsense", "crash")


def summarise(results: list[dict[str, object]]) -> dict[str, object]:
    bad_results = [r for r in results if r["kind"] == "bad"]
    valid = [r for r in results if r["kind"] == "valid"]
    counts = {c: sum(r["category"] == c for r in bad_results) for c in BAD_CATEGORIES}
    by_area: dict[str, dict[str, int]] = {}
    for r in bad_results:
        by_area.setdefault(str(r["area"]), dict.fromkeys(BAD_CATEGORIES, 0))[str(r["category"])] += 1
    return {
        "bad_inputs": len(bad_results),
        "bad_cli": sum(str(r["area"]).startswith("cli") for r in bad_results),
        "bad_api": sum(str(r["area"]).startswith("api") for r in bad_results),
        "counts": counts,
        "by_area": by_area,
        "valid_cases": len(valid),
        "valid_ok": sum(r["category"] == "ok" for r in valid),
        "valid_failed": sum(r["category"] != "ok" for r in valid),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only cases whose name contains this text")
    parser.add_argument("--out", default=str(RESULTS), help="the JSON results file")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    args = parser.parse_args(argv)
    preload()
    cases = [c for c in all_cases() if args.only is None or args.only in c.name]
    logs = Path(tempfile.mkdtemp(prefix="battery-logs-"))
    started = time.perf_counter()
    results = []
    for case, result in run_cases(cases, logs):
        result.pop("log", None)
        results.append({"name": case.name, "area": case.area,
                        "kind": "valid" if case.valid else "bad", **result})
        if not args.quiet or result["category"] not in ("clear", "ok"):
            print(f"{result['category']:>8}  {case.name:<40} {str(result['message'])[:150]}",
                  flush=True)
    shutil.rmtree(logs, ignore_errors=True)
    summary = summarise(results)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary["fastmwem_version"] = fastmwem.__version__
    print(json.dumps(summary, indent=1))
    if args.only is None:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"summary": summary, "cases": results}, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
