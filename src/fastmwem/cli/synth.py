"""``fastmwem synth``: private synthetic data from a CSV with MWEM."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from fastmwem.cli import CLIError, print_warning, warn_seeded
from fastmwem.cli._io import (
    check_paths,
    free_disk_bytes,
    staged_outputs,
)
from fastmwem.cli._sources import (
    add_source_arguments,
    check_input,
    check_source_arguments,
    load_source,
    write_records,
)
from fastmwem.data import Domain
from fastmwem.data.sources import MarginalSource
from fastmwem.evaluation import (
    RecordCounts,
    answer_error,
    relative_entropy,
    relative_entropy_of_records,
    workload_error,
)
from fastmwem.models.sampling import AUTO_MATCH_ROWS, SAMPLING_METHODS, default_sampling
from fastmwem.random import split_seed
from fastmwem.release.definitions import PrivacyDefinition, definition_of
from fastmwem.release.mwem import (
    AUTO_REUSE_PASSES,
    MAX_DEFAULT_ROUNDS,
    MWEMChoices,
    answers_from_marginals,
    check_options,
    default_workload_spec,
    mwem_with_defaults,
)
from fastmwem.release.result import MWEMResult
from fastmwem.release.selection import selection_names
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.spec import WORKLOAD_HELP, parse_workload

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["register"]

# The default row count (the noisy record count) gets a warning when the count's noise scale is
# more than this share of it.
_NOISY_COUNT_SHARE = 0.1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="private synthetic data with MWEM",
        description=(
            "Fit MWEM to a CSV of integer codes (with --domain) or raw values (with --schema) "
            "and write synthetic records. Pure epsilon-DP (default) or, with --privacy zcdp "
            "--delta D, zero-concentrated DP that implies (epsilon, D)-DP; add/remove-one-record "
            "neighbours."
        ),
    )
    parser.add_argument("input", nargs="?",
                        help="input CSV or Parquet (by extension; omit with --demo)")
    parser.add_argument("--demo", action="store_true",
                        help="use the bundled NLTCS dataset (21,574 rows, 16 binary attributes)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--domain", help='domain JSON {"column": size}; the CSV holds codes')
    source.add_argument("--schema", help="schema JSON declaring categories and numeric bins")
    parser.add_argument("--epsilon", type=float, required=True, help="total privacy budget")
    parser.add_argument("--privacy", choices=["pure", "zcdp"], default="pure",
                        help="pure: epsilon-DP with Laplace noise (default); zcdp: zCDP with "
                             "discrete Gaussian noise, spending the largest rho that gives "
                             "(epsilon, --delta)-DP")
    parser.add_argument("--delta", type=float, default=None,
                        help="delta of the (epsilon, delta)-DP guarantee of --privacy zcdp, in "
                             "(0, 1)")
    parser.add_argument("--out", required=True,
                        help="output CSV (or .parquet) of synthetic records")
    parser.add_argument("--workload", default=None, help=WORKLOAD_HELP)
    parser.add_argument("--rounds", type=_rounds_arg, default=None,
                        help="MWEM rounds T, or 'adaptive' (budget annealing: rounds continue "
                             "until the budget is spent). Default: with --privacy zcdp, "
                             "adaptive when the budget is large next to the records (see "
                             "docs/mwem.md), else 25; with pure DP chosen from epsilon, the "
                             "workload and the noisy "
                             "record count, at most the number of candidate groups and "
                             f"{MAX_DEFAULT_ROUNDS} (see docs/mwem.md). A --rounds above the "
                             "number of candidate groups is an error")
    parser.add_argument("--reuse-passes", type=int, default=None,
                        help="most MW passes over all measurements per round (default "
                             f"{AUTO_REUSE_PASSES}; 20 with zCDP on a dense model)")
    parser.add_argument("--init", choices=["uniform", "noisy-histogram"], default="uniform")
    parser.add_argument("--output", choices=["last", "average"], default="last",
                        help="last iterate or average of iterates")
    parser.add_argument("--selection", choices=list(selection_names()), default="exponential",
                        help="how a round selects: exponential (scan every query, the default), "
                             "permute-and-flip, or lazy (Fast-MWEM: the exact law of the "
                             "exponential mechanism from an exact top-k search)")
    parser.add_argument("--index", default=None,
                        help="top-k oracle for --selection lazy: flat, bitpacked, faiss:Flat "
                             "(exact), or an approximate one (refused without "
                             "--allow-uncertified); default: the workload's own exact oracle")
    parser.add_argument("--allow-uncertified", action="store_true",
                        help="let --selection lazy run over an approximate index without a "
                             "certified gap: NO privacy guarantee holds for such a run (the "
                             'report says "private": false)')
    parser.add_argument("--rows", type=int, default=None,
                        help="number of synthetic records (default: the noisy record count, "
                             "at least 1); written in blocks, checked against the free disk "
                             "space")
    parser.add_argument("--sampling", choices=list(SAMPLING_METHODS), default=None,
                        help="how records are drawn from the synthetic distribution: "
                             "matched (systematic records whose values are then moved until "
                             "their workload marginals are the model's, to rounding), "
                             "systematic (every cell's count within one of its expectation, "
                             "each record a draw from the model) or independent draws "
                             f"(default: matched up to {AUTO_MATCH_ROWS:,} rows, else "
                             "systematic)")
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
    add_source_arguments(parser)
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
            check_input(path, flag, args.engine)


def _load(args: argparse.Namespace) -> tuple[MarginalSource, object]:
    """The data (counted by --engine) and its schema or None, validated before any budget."""
    return load_source(args)


def _rounds_arg(text: str) -> int | str:
    """``--rounds``: a whole number or ``adaptive``."""
    if text == "adaptive":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number or 'adaptive', got {text!r}") from None


def _check_numbers(args: argparse.Namespace) -> None:
    if args.rows is not None and args.rows < 1:
        raise CLIError(f"--rows must be >= 1, got {args.rows}")
    if isinstance(args.rounds, int) and args.rounds < 1:
        raise CLIError(f"--rounds must be >= 1, got {args.rounds}")
    _check_privacy(args)
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")


def _check_privacy(args: argparse.Namespace) -> None:
    """Refuse a privacy definition and delta that do not go together (before any budget)."""
    if args.privacy == "pure":
        if args.delta is not None:
            raise CLIError("--delta is for --privacy zcdp; a pure-DP run (the default) takes "
                           "--epsilon only")
        return
    if args.delta is None:
        raise CLIError("--privacy zcdp needs --delta (the delta of the (epsilon, delta)-DP "
                       "guarantee), e.g. --delta 1e-9")
    if not 0 < args.delta < 1:
        raise CLIError(f"--delta must lie in (0, 1), got {args.delta}")


def _definition(args: argparse.Namespace) -> PrivacyDefinition:
    return definition_of(args.privacy, args.delta)


def _row_bytes(domain: Domain, schema: object) -> int:
    """An upper bound on the bytes of one CSV row of synthetic records (public: the domain)."""
    import pandas as pd
    if schema is None:  # integer codes
        return sum(len(str(n - 1)) + 1 for n in domain.shape)
    size = max(domain.shape)
    codes = pd.DataFrame({a: np.arange(size) % n for a, n in zip(domain.attributes, domain.shape)})
    frame = schema.decode(codes)  # type: ignore[attr-defined]
    widths = []
    for column in frame.columns:
        text = frame[column].astype(str)
        # a quoted field doubles its quotes and adds two
        widths.append(int((text.str.len() + text.str.count('"')).max()) + 2)
    return sum(widths) + len(widths)  # separators and the newline


def _check_disk(rows: int, row_bytes: int, args: argparse.Namespace, what: str) -> None:
    """Refuse ``rows`` records that would not fit in the free space where --out is written."""
    free = free_disk_bytes(args.out)
    limit = free // row_bytes
    if rows > limit:
        raise CLIError(f"{what} needs about {_bytes(rows * row_bytes)} of disk for --out; "
                       f"{os.path.dirname(os.path.abspath(args.out))!r} has {_bytes(free)} "
                       f"free, enough for at most {limit:,} rows")


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
    check_options(rounds=args.rounds, **_budget(args), **_options(args))  # before the data
    check_source_arguments(args)
    _check_sources(args)
    check_paths({"--out": args.out, "--report": args.report}, _inputs(args))
    dataset, schema = _load(args)
    spec = default_workload_spec(dataset.domain) if args.workload is None else args.workload
    # One seed, three independent streams: the public workload's draw does not move with the
    # noise (whose length depends on epsilon), nor the records with either.
    workload_rng, noise_rng, sampling_rng = split_seed(args.seed)
    workload = parse_workload(spec, dataset.domain, seed=workload_rng)
    row_bytes = _row_bytes(dataset.domain, schema)
    if args.rows is not None:
        _check_disk(args.rows, row_bytes, args, f"--rows {args.rows}")
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress

    def before_rounds(total: float) -> None:
        # The count is released (and charged) by now: its rows are checked before MWEM's charge.
        if args.rows is None:
            _check_disk(_rows(total), row_bytes, args,
                        f"the noisy record count ({_rows(total):,} rows; the count's share of "
                        "epsilon is spent, nothing else; give --rows)")

    result = mwem_with_defaults(
        dataset, workload, rounds=args.rounds, rng=noise_rng, schema=schema,
        progress=show_progress, before_rounds=before_rounds, **_budget(args), **_options(args))
    choices = cast(MWEMChoices, result.choices)  # always set by mwem_with_defaults
    if args.seed is not None:
        warn_seeded("synth", '; the report says "private": false' if args.report else "")
    # The default rows are the released count the disk was checked for (an adaptive run
    # refines its own count, which may differ).
    rows = _rows(choices.record_count) if args.rows is None else args.rows
    if args.rows is None:
        _warn_if_noisy_count(choices.record_count, choices, _definition(args))
    sampling = args.sampling or default_sampling(rows)
    if args.sampling is None and sampling != "matched":
        print(f"fastmwem synth: note: {rows:,} rows are written systematically, not matched "
              "to the model (matching costs about 44 s per 10^6 rows); give --sampling matched "
              "to match them anyway", file=sys.stderr)
    counted = RecordCounts(workload) if args.evaluate else None
    blocks = result.sample_chunks(rows, rng=sampling_rng,
                                  sampling=sampling, decode=counted is None)
    if counted is not None:
        blocks = _counting(blocks, counted, result)
    if show_progress:
        blocks = _with_progress(blocks, rows)

    scored = _evaluate(dataset, result, workload) if args.evaluate else None
    evaluation = None if scored is None else scored[0]
    with staged_outputs() as outputs:
        write_records(outputs, blocks, args.out, "--out")
        if scored is not None:
            evaluation = {**scored[0], **_records_error(scored[1], counted, workload)}
        if args.report:
            outputs.write_json(_report(args, spec, result, choices, rows, sampling, evaluation),
                               args.report, "--report")
    elapsed = time.perf_counter() - started
    if result.updates_skipped:
        print(f"fastmwem synth: note: the first measurement lay within its noise of the "
              f"{args.init} start, so nothing in the data was detectable at this epsilon: the "
              "output is that start, not fitted to the data", file=sys.stderr)
    print(f"wrote {rows} synthetic records to {args.out} ({_guarantee(args)}, workload "
          f"{spec} ({_chosen(args.workload)}), {choices.rounds} round{'s' * (choices.rounds != 1)} "
          f"({_chosen(args.rounds)}), {sampling} records ({_chosen(args.sampling)})"
          f", {elapsed:.1f} s)", file=sys.stderr)
    if evaluation is not None:
        print("NOT PRIVATE evaluation against the real data: "
              + ", ".join(f"{k}={v:.4g}" for k, v in evaluation.items()), file=sys.stderr)
    return 0


def _budget(args: argparse.Namespace) -> dict[str, Any]:
    """The budget keywords of the run: epsilon, the definition and its delta."""
    return {"epsilon": args.epsilon, "privacy": args.privacy, "delta": args.delta}


def _guarantee(args: argparse.Namespace) -> str:
    if args.delta is None:  # pure DP (a zCDP run needs --delta)
        return f"epsilon={args.epsilon}"
    return f"zCDP giving (epsilon={args.epsilon}, delta={args.delta:g})-DP"


def _rows(total: float) -> int:
    """The default row count: the noisy record count, rounded, at least 1."""
    return max(1, int(round(total)))


def _chosen(value: object) -> str:
    return "default" if value is None else "given"


def _warn_if_noisy_count(total: float, choices: MWEMChoices,
                         definition: PrivacyDefinition) -> None:
    """Warn when the record count that sets the default row count is mostly noise."""
    if not choices.count_epsilon:
        return
    scale = definition.noise_scale(choices.count_epsilon)  # count_epsilon is a rho under zCDP
    if scale > _NOISY_COUNT_SHARE * total:
        print_warning("synth", f"the noisy record count ({_rows(total):,}, at least 1) has "
                               f"Laplace noise of scale {scale:.3g}, so the number of rows "
                               "written says little about the real table; choose it with --rows",
                      "UserWarning")


def _with_progress(blocks: Iterator[pd.DataFrame], rows: int) -> Iterator[pd.DataFrame]:
    from tqdm import tqdm

    with tqdm(total=rows, desc="writing", unit="row", leave=False) as bar:
        for block in blocks:
            yield block
            bar.update(len(block))


def _report(args: argparse.Namespace, spec: str, result: MWEMResult, choices: MWEMChoices,
            rows: int, sampling: str, evaluation: dict[str, float] | None
            ) -> dict[str, object]:
    """The run's report; it never holds the seed (only whether there was one)."""
    report = result.report()
    report["command"] = {
        "input": "bundled:nltcs" if args.demo else os.path.basename(args.input),
        "workload": spec,
        "workload_chosen": _chosen(args.workload),
        "rounds": choices.rounds,
        "rounds_chosen": _chosen(args.rounds),
        "rounds_adaptive": choices.adaptive,
        "privacy": args.privacy,
        "delta": args.delta,
        "rounds_ceiling": choices.rounds_ceiling,
        "candidates": choices.candidates,
        "noise_test": choices.noise_test,
        "rows_written": rows,
        "rows_chosen": _chosen(args.rows),
        "sampling": sampling,
        "sampling_chosen": _chosen(args.sampling),
        **_options(args),
        "reuse_passes": choices.reuse_passes,
        "reuse_passes_chosen": _chosen(args.reuse_passes),
    }
    if evaluation is not None:
        report["private"] = False
        reasons = cast("list[str]", report["not_private_because"])  # as report() wrote it
        report["not_private_because"] = [*reasons, "evaluated"]
        report["evaluation"] = evaluation
    return report


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The MWEM options given on the command line (or their defaults)."""
    given = {} if args.reuse_passes is None else {"reuse_passes": args.reuse_passes}
    return {**given, "init": args.init, "output": args.output,
            "selection": args.selection, "index": args.index,
            **({"allow_uncertified": True} if args.allow_uncertified else {})}


def _evaluate(dataset: MarginalSource, result: MWEMResult, workload: LinearWorkload
              ) -> tuple[dict[str, float], np.ndarray]:
    """The model's errors against the real data, and the real answers (fractions)."""
    if result.model is not None:
        # A factored model: the real data as marginals, the synthetic answers by inference.
        true = answers_from_marginals(workload, dataset) / len(dataset)
        evaluation = answer_error(true, result.answer(workload) / result.total, workload)
        records = getattr(dataset, "records", None)
        if records is not None:  # an engine's table is never read into memory record by record
            evaluation["relative_entropy"] = relative_entropy_of_records(
                records, result.model.log_probability)  # type: ignore[attr-defined]
        return evaluation, true
    true_hist = dataset.histogram()
    evaluation = workload_error(true_hist, result.histogram, workload)  # type: ignore[arg-type]
    evaluation["relative_entropy"] = relative_entropy(true_hist, result.histogram)  # type: ignore[arg-type]
    return evaluation, workload.answer(true_hist) / max(float(true_hist.sum()), 1.0)


def _counting(blocks: Iterator[pd.DataFrame], counted: RecordCounts, result: MWEMResult
              ) -> Iterator[pd.DataFrame]:
    """Count each block of codes, then pass it on decoded as ``sample_chunks`` would have."""
    for frame in blocks:
        counted.add(frame.to_numpy())
        yield frame if result.schema is None else result.schema.decode(frame)


def _records_error(true: np.ndarray, counted: RecordCounts | None, workload: LinearWorkload
                   ) -> dict[str, float]:
    """The written records' errors (the model's are the other keys), prefixed ``records_``."""
    if counted is None or counted.rows == 0:
        return {}
    error = answer_error(true, counted.answers(), workload)
    return {f"records_{k}": error[k] for k in ("mean_group_l1", "max_group_l1")}

