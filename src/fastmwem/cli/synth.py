"""``fastmwem synth``: private synthetic data from a CSV with MWEM."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

from fastmwem.accounting import Accountant
from fastmwem.cli import CLIError, warn_seeded
from fastmwem.cli._io import check_input_file, check_paths, read_text_file, staged_outputs
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import (
    answer_error,
    relative_entropy,
    relative_entropy_of_records,
    workload_error,
)
from fastmwem.release._private import answers_from_marginals
from fastmwem.release.mwem import MWEMConfig, mwem
from fastmwem.release.result import MWEMResult
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.spec import WORKLOAD_HELP, parse_workload

__all__ = ["register"]

DEFAULT_ROUNDS = 25


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="private synthetic data with MWEM",
        description=(
            "Fit MWEM to a CSV of integer codes (with --domain) or raw values (with --schema) "
            "and write synthetic records. Pure epsilon-DP under add/remove-one-record neighbours."
        ),
    )
    parser.add_argument("input", nargs="?", help="input CSV (omit with --demo)")
    parser.add_argument("--demo", action="store_true",
                        help="use the bundled NLTCS dataset (21,574 rows, 16 binary attributes)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--domain", help='domain JSON {"column": size}; the CSV holds codes')
    source.add_argument("--schema", help="schema JSON declaring categories and numeric bins")
    parser.add_argument("--epsilon", type=float, required=True, help="total privacy budget")
    parser.add_argument("--out", required=True, help="output CSV of synthetic records")
    parser.add_argument("--workload", default="marginals:3", help=WORKLOAD_HELP)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"MWEM rounds T (default {DEFAULT_ROUNDS})")
    parser.add_argument("--reuse-passes", type=int, default=20,
                        help="MW passes over all measurements per round (default 20)")
    parser.add_argument("--init", choices=["uniform", "noisy-histogram"], default="uniform")
    parser.add_argument("--output", choices=["last", "average"], default="last",
                        help="last iterate or average of iterates")
    parser.add_argument("--selection", choices=["exponential", "permute-and-flip"],
                        default="exponential")
    parser.add_argument("--rows", type=int, default=None,
                        help="number of synthetic records (default: the noisy record count)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for reproducible runs, for tests only: anyone who knows it can "
                             "remove the noise, so a seeded run is NOT private (default: OS "
                             "entropy). The seed is never written to any output")
    parser.add_argument("--report", help="write a JSON report: the privacy ledger and outputs")
    parser.add_argument("--evaluate", action="store_true",
                        help="add errors against the real data to the report; this marks the "
                             "report as NOT private")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="show a progress bar on stderr (default: when stderr is a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    parser.set_defaults(handler=run)


def _inputs(args: argparse.Namespace) -> dict[str, str | None]:
    """Every file the run reads, by flag (checked up front and never written over)."""
    if args.demo:
        from fastmwem.datasets import nltcs_paths

        csv_path, domain_path = nltcs_paths()
        return {"--demo": str(csv_path), "--demo domain": str(domain_path)}
    return {"INPUT": args.input, "--domain": args.domain, "--schema": args.schema}


def _check_sources(args: argparse.Namespace) -> None:
    if args.demo:
        if args.input or args.domain or args.schema:
            raise CLIError("--demo uses the bundled dataset: give no INPUT, --domain or --schema")
        return
    if not args.input:
        raise CLIError("give an INPUT.csv (or --demo)")
    if not args.domain and not args.schema:
        raise CLIError("give --domain DOMAIN.json (codes) or --schema SCHEMA.json (raw values)")
    for flag, path in _inputs(args).items():
        if path is not None:
            check_input_file(path, flag)


def _load(args: argparse.Namespace) -> tuple[Dataset, object]:
    """The dataset and its schema (or None), read and validated before any budget is spent."""
    if args.demo:
        from fastmwem.datasets import load_nltcs

        return load_nltcs(), None
    if args.schema:
        from fastmwem.data.schema import Schema

        schema = read_text_file(Schema.from_json, args.schema, "--schema")
        return read_text_file(schema.encode_csv, args.input, "INPUT"), schema
    domain = read_text_file(Domain.from_json, args.domain, "--domain")
    return read_text_file(lambda path: Dataset.from_csv(path, domain), args.input, "INPUT"), None


def _check_numbers(args: argparse.Namespace) -> None:
    if args.rows is not None and args.rows < 1:
        raise CLIError(f"--rows must be >= 1, got {args.rows}")
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")


def _check_rows(rows: int | None, domain: Domain) -> None:
    """Refuse a --rows whose records cannot fit in the memory this machine has free."""
    if rows is None:
        return
    # Sampling holds the shuffled cells and about three int64 copies of each attribute's codes.
    per_row = 8 * (3 * len(domain) + 2)
    free = available_memory()
    limit = free // per_row
    if rows > limit:
        raise CLIError(f"--rows {rows} needs about {_bytes(rows * per_row)} of memory for the "
                       f"records; this machine has {_bytes(free)} free, enough for at most "
                       f"{limit:,} rows")


def available_memory() -> int:
    """Bytes of memory available to this process now (MemAvailable, else physical memory)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} PB"


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    _check_numbers(args)
    config = MWEMConfig(epsilon=args.epsilon, rounds=args.rounds, reuse_passes=args.reuse_passes,
                        init=args.init, output=args.output, selection=args.selection)
    _check_sources(args)
    check_paths({"--out": args.out, "--report": args.report}, _inputs(args))
    dataset, schema = _load(args)
    _check_rows(args.rows, dataset.domain)
    workload = parse_workload(args.workload, dataset.domain, seed=args.seed)
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress

    accountant = Accountant(epsilon=args.epsilon)
    result = mwem(dataset, workload, rng=args.seed, accountant=accountant, schema=schema,
                  progress=show_progress, **_options(config))
    if args.seed is not None:
        warn_seeded("synth", '; the report says "private": false' if args.report else "")
    records = result.sample(args.rows, rng=None if args.seed is None else args.seed + 1)

    evaluation = _evaluate(dataset, result, workload) if args.evaluate else None
    with staged_outputs() as outputs:
        outputs.write_csv(records, args.out, "--out")
        if args.report:
            outputs.write_json(_report(args, result, len(records), evaluation), args.report,
                               "--report")
    elapsed = time.perf_counter() - started
    print(f"wrote {len(records)} synthetic records to {args.out} "
          f"(epsilon={args.epsilon}, {args.rounds} rounds, {elapsed:.1f} s)", file=sys.stderr)
    if evaluation is not None:
        print("NOT PRIVATE evaluation against the real data: "
              + ", ".join(f"{k}={v:.4g}" for k, v in evaluation.items()), file=sys.stderr)
    return 0


def _report(args: argparse.Namespace, result: MWEMResult, rows: int,
            evaluation: dict[str, float] | None) -> dict[str, object]:
    """The run's report; it never holds the seed (only whether there was one)."""
    report = result.report()
    report["command"] = {
        "input": "bundled:nltcs" if args.demo else os.path.basename(args.input),
        "workload": args.workload,
        "rounds": args.rounds,
        "rows_written": rows,
    }
    if evaluation is not None:
        report["private"] = False
        report["not_private_because"] = [*report["not_private_because"], "evaluated"]
        report["evaluation"] = evaluation
    return report


def _options(config: MWEMConfig) -> dict[str, object]:
    return {
        "epsilon": config.epsilon,
        "rounds": config.rounds,
        "reuse_passes": config.reuse_passes,
        "init": config.init,
        "output": config.output,
        "selection": config.selection,
    }


def _evaluate(dataset: Dataset, result: MWEMResult, workload: LinearWorkload
              ) -> dict[str, float]:
    if result.model is not None:
        # A factored model: the real data as marginals, the synthetic answers by inference.
        true = answers_from_marginals(workload, dataset) / len(dataset)
        evaluation = answer_error(true, result.answer(workload) / result.total, workload)
        evaluation["relative_entropy"] = relative_entropy_of_records(
            dataset.records, result.model.log_probability)  # type: ignore[attr-defined]
        return evaluation
    true_hist = dataset.histogram()
    evaluation = workload_error(true_hist, result.histogram, workload)  # type: ignore[arg-type]
    evaluation["relative_entropy"] = relative_entropy(true_hist, result.histogram)  # type: ignore[arg-type]
    return evaluation

