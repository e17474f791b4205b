"""``fastmwem synth``: private synthetic data from a CSV with MWEM."""

from __future__ import annotations

import argparse
import os
import sys
import time

from fastmwem.accounting import Accountant
from fastmwem.cli import CLIError
from fastmwem.cli._io import check_output_path, write_csv_atomic, write_json_atomic
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import relative_entropy, workload_error
from fastmwem.release.mwem import MWEMConfig, mwem
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
                        help="seed for reproducible runs (default: OS entropy; use for tests only)")
    parser.add_argument("--report", help="write a JSON report: the privacy ledger and outputs")
    parser.add_argument("--evaluate", action="store_true",
                        help="add errors against the real data to the report; this marks the "
                             "report as NOT private")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="show a progress bar on stderr (default: when stderr is a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    parser.set_defaults(handler=run)


def _load(args: argparse.Namespace) -> tuple[Dataset, object]:
    """The dataset and its schema (or None), read and validated before any budget is spent."""
    if args.demo:
        if args.input or args.domain or args.schema:
            raise CLIError("--demo uses the bundled dataset: give no INPUT, --domain or --schema")
        from fastmwem.datasets import load_nltcs

        return load_nltcs(), None
    if not args.input:
        raise CLIError("give an INPUT.csv (or --demo)")
    if os.path.isdir(args.input):
        raise CLIError(f"input file {args.input!r} is a directory, not a file")
    if not os.path.isfile(args.input):
        raise CLIError(f"input file {args.input!r} does not exist")
    if args.schema:
        from fastmwem.data.schema import Schema

        schema = Schema.from_json(args.schema)
        return schema.encode_csv(args.input), schema
    if not args.domain:
        raise CLIError("give --domain DOMAIN.json (codes) or --schema SCHEMA.json (raw values)")
    domain = Domain.from_json(args.domain)
    return Dataset.from_csv(args.input, domain), None


def _check_numbers(args: argparse.Namespace) -> None:
    if args.rows is not None and args.rows < 1:
        raise CLIError(f"--rows must be >= 1, got {args.rows}")
    if args.seed is not None and args.seed < 0:
        raise CLIError(f"--seed must be >= 0, got {args.seed}")


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    _check_numbers(args)
    config = MWEMConfig(epsilon=args.epsilon, rounds=args.rounds, reuse_passes=args.reuse_passes,
                        init=args.init, output=args.output, selection=args.selection)
    check_output_path(args.out, "--out")
    if args.report:
        check_output_path(args.report, "--report")
        if os.path.abspath(args.report) == os.path.abspath(args.out):
            raise CLIError("--report and --out must be different files")
    dataset, schema = _load(args)
    workload = parse_workload(args.workload, dataset.domain, seed=args.seed)
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress

    accountant = Accountant(epsilon=args.epsilon)
    result = mwem(dataset, workload, rng=args.seed, accountant=accountant, schema=schema,
                  progress=show_progress, **_options(config))
    records = result.sample(args.rows, rng=None if args.seed is None else args.seed + 1)
    write_csv_atomic(records, args.out)

    evaluation = _evaluate(dataset, result.histogram, workload) if args.evaluate else None
    if args.report:
        report = result.report()
        report["command"] = {
            "input": "bundled:nltcs" if args.demo else os.path.basename(args.input),
            "workload": args.workload,
            "rounds": args.rounds,
            "seed": args.seed,
            "rows_written": len(records),
        }
        if args.evaluate:
            report["private"] = False
            report["evaluation"] = evaluation
        write_json_atomic(report, args.report)
    elapsed = time.perf_counter() - started
    print(f"wrote {len(records)} synthetic records to {args.out} "
          f"(epsilon={args.epsilon}, {args.rounds} rounds, {elapsed:.1f} s)", file=sys.stderr)
    if evaluation is not None:
        print("NOT PRIVATE evaluation against the real data: "
              + ", ".join(f"{k}={v:.4g}" for k, v in evaluation.items()), file=sys.stderr)
    return 0


def _options(config: MWEMConfig) -> dict[str, object]:
    return {
        "epsilon": config.epsilon,
        "rounds": config.rounds,
        "reuse_passes": config.reuse_passes,
        "init": config.init,
        "output": config.output,
        "selection": config.selection,
    }


def _evaluate(dataset: Dataset, synthetic: object, workload: LinearWorkload) -> dict[str, float]:
    true_hist = dataset.histogram()
    evaluation = workload_error(true_hist, synthetic, workload)  # type: ignore[arg-type]
    evaluation["relative_entropy"] = relative_entropy(true_hist, synthetic)  # type: ignore[arg-type]
    return evaluation

