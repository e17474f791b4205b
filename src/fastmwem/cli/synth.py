"""``fastmwem synth``: private synthetic data from a CSV with MWEM."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from fastmwem.cli import CLIError, print_warning, warn_seeded
from fastmwem.cli._io import free_disk_bytes, staged_outputs
from fastmwem.cli._sources import (
    Source,
    add_source_arguments,
    check_source_arguments,
    open_input,
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
from fastmwem.models.factored import FactoredState
from fastmwem.models.sampling import AUTO_MATCH_ROWS, SAMPLING_METHODS, default_sampling
from fastmwem.progress import phase, progress_blocks
from fastmwem.quality import (
    MarginalCounts,
    independent_answers,
    marginal_plan,
    quality_report,
    require_matplotlib,
)
from fastmwem.random import split_seed
from fastmwem.release.definitions import PrivacyDefinition, definition_of
from fastmwem.release.mwem import (
    AUTO_REUSE_PASSES,
    MAX_DEFAULT_ROUNDS,
    MWEMChoices,
    answers_from_marginals,
    check_options,
    mwem_with_defaults,
)
from fastmwem.release.result import MWEMResult
from fastmwem.release.selection import selection_names
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.spec import WORKLOAD_HELP, default_workload_spec, parse_workload

if TYPE_CHECKING:
    import pandas as pd

    from fastmwem.data.schema import Schema

__all__ = ["register"]

# The default row count (the noisy record count) gets a warning when the count's noise scale is
# more than this share of it.
_NOISY_COUNT_SHARE = 0.1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    parser.add_argument("--html", default=None,
                        help="with --evaluate: also write a self-contained HTML quality report "
                             "(per-column histograms, the worst 2-way marginals, Cramer's V "
                             "between columns, an independent-columns baseline); NOT private: "
                             "it is computed from the real data")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="show a progress bar on stderr (default: when stderr is a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    add_source_arguments(parser)
    parser.set_defaults(handler=run)


def _rounds_arg(text: str) -> int | str:
    """``--rounds``: a whole number or ``adaptive``."""
    if text == "adaptive":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number or 'adaptive', got {text!r}") from None


@dataclasses.dataclass(frozen=True)
class SynthRequest:
    """One ``synth`` run as its command line asks for it, every flag checked.

    ``options`` holds the MWEM options as :func:`mwem_with_defaults` takes them (``reuse_passes``
    only if given); None stands for a value left to the default.
    """

    source: Source
    out: str
    report: str | None
    epsilon: float
    privacy: str
    delta: float | None
    definition: PrivacyDefinition
    workload: str | None
    rounds: int | str | None
    options: Mapping[str, Any]
    rows: int | None
    sampling: str | None
    seed: int | None
    evaluate: bool
    progress: bool
    html: str | None = None

    @property
    def budget(self) -> dict[str, Any]:
        """The budget keywords of the run: epsilon, the definition and its delta."""
        return {"epsilon": self.epsilon, "privacy": self.privacy, "delta": self.delta}


def _request(args: argparse.Namespace) -> SynthRequest:
    """The command line, checked whole before any file is read or any budget is spent."""
    _check_numbers(args)
    given = {} if args.reuse_passes is None else {"reuse_passes": args.reuse_passes}
    options = {**given, "init": args.init, "output": args.output,
               "selection": args.selection, "index": args.index,
               **({"allow_uncertified": True} if args.allow_uncertified else {})}
    check_options(rounds=args.rounds, epsilon=args.epsilon, privacy=args.privacy,
                  delta=args.delta, **options)
    definition = definition_of(args.privacy, args.delta)
    return SynthRequest(
        source=check_source_arguments(args), out=args.out, report=args.report,
        epsilon=args.epsilon, privacy=args.privacy, delta=args.delta, definition=definition,
        workload=args.workload, rounds=args.rounds, options=options, rows=args.rows,
        sampling=args.sampling, seed=args.seed, evaluate=args.evaluate,
        progress=sys.stderr.isatty() if args.progress is None else args.progress,
        html=_html_arg(args))


def _html_arg(args: argparse.Namespace) -> str | None:
    """``--html``: only with ``--evaluate`` (it reads the real data), and with matplotlib."""
    if args.html is None:
        return None
    if not args.evaluate:
        raise CLIError("--html writes the NOT private quality report of --evaluate: give "
                       "--evaluate --html PATH (it is computed from the real data)")
    try:
        require_matplotlib()
    except ImportError as exc:
        raise CLIError(f"--html: {exc}") from None
    return str(args.html)


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


def _row_bytes(domain: Domain, schema: Schema | None) -> int:
    """An upper bound on the bytes of one CSV row of synthetic records (public: the domain)."""
    import pandas as pd
    if schema is None:  # integer codes
        return sum(len(str(n - 1)) + 1 for n in domain.shape)
    size = max(domain.shape)
    codes = pd.DataFrame({a: np.arange(size) % n for a, n in zip(domain.attributes, domain.shape)})
    frame = schema.decode(codes)
    widths = []
    for column in frame.columns:
        text = frame[column].astype(str)
        # a quoted field doubles its quotes and adds two
        widths.append(int((text.str.len() + text.str.count('"')).max()) + 2)
    return sum(widths) + len(widths)  # separators and the newline


def _check_disk(rows: int, row_bytes: int, out: str, what: str) -> None:
    """Refuse ``rows`` records that would not fit in the free space where --out is written."""
    free = free_disk_bytes(out)
    limit = free // row_bytes
    if rows > limit:
        raise CLIError(f"{what} needs about {_bytes(rows * row_bytes)} of disk for --out; "
                       f"{os.path.dirname(os.path.abspath(out))!r} has {_bytes(free)} "
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
    request = _request(args)
    dataset, schema = open_input(request.source, {"--out": request.out, "--report": request.report,
                                                  "--html": request.html})
    # One seed, three independent streams: the public workload's draw does not move with the
    # noise (whose length depends on epsilon), nor the records with either.
    workload_rng, noise_rng, sampling_rng = split_seed(request.seed)
    spec = default_workload_spec(dataset.domain) if request.workload is None else request.workload
    workload = parse_workload(spec, dataset.domain, seed=workload_rng)
    # the marginals the HTML report scores depend on the public domain only
    plan = None if request.html is None else marginal_plan(dataset.domain)[0]
    result = _release(request, dataset, workload, schema, noise_rng)
    choices = cast(MWEMChoices, result.choices)  # always set by mwem_with_defaults
    if request.seed is not None:
        warn_seeded("synth", '; the report says "private": false' if request.report else "")
    # The default rows are the released count the disk was checked for (an adaptive run
    # refines its own count, which may differ).
    rows = _rows(choices.record_count) if request.rows is None else request.rows
    if request.rows is None:
        _warn_if_noisy_count(choices.record_count, choices, request.definition)
    sampling = request.sampling or default_sampling(rows)
    if request.sampling is None and sampling != "matched":
        print(f"fastmwem synth: note: {rows:,} rows are written systematically, not matched "
              "to the model (matching costs about 44 s per 10^6 rows); give --sampling matched "
              "to match them anyway", file=sys.stderr)
    # The model is scored first; the records written are counted as they pass (decoded after).
    with phase("scoring the model against the real data", enabled=request.evaluate
               and request.progress):
        scored = _evaluate(dataset, result, workload) if request.evaluate else None
    evaluation = None if scored is None else scored[0]
    counted = RecordCounts(workload) if request.evaluate else None
    written = None if plan is None else MarginalCounts(
        dataset.domain, [s for k in sorted(plan) for s in plan[k]])
    blocks = result.sample_chunks(rows, rng=sampling_rng,
                                  sampling=sampling, decode=counted is None)
    if request.progress:
        blocks = progress_blocks(blocks, rows,
                                 seconds=result.sample_seconds(rows, sampling=sampling))
    if counted is not None:
        blocks = _counting(blocks, counted, result, written)
    quality = None
    with staged_outputs() as outputs:
        outputs.write_records(blocks, request.out, "--out")
        if scored is not None:
            evaluation = {**scored[0], **_records_error(scored[1], counted, workload)}
        if written is not None and request.html:
            with phase("the quality report", enabled=request.progress):
                quality = quality_report(dataset, written, schema=schema)
            outputs.write_text(quality.html(), request.html, "--html")
        if request.report:
            outputs.write_json(
                _report(request, spec, result, choices, rows, sampling, evaluation),
                request.report, "--report")
    elapsed = time.perf_counter() - started
    if result.updates_skipped:
        print(f"fastmwem synth: note: the first measurement lay within its noise of the "
              f"{request.options['init']} start, so nothing in the data was detectable at this "
              "epsilon: the output is that start, not fitted to the data", file=sys.stderr)
    print(f"wrote {rows} synthetic records to {request.out} ({_guarantee(request)}, workload "
          f"{spec} ({_chosen(request.workload)}), {choices.rounds} "
          f"round{'s' * (choices.rounds != 1)} ({_chosen(request.rounds)}), {sampling} records "
          f"({_chosen(request.sampling)}), {elapsed:.1f} s)", file=sys.stderr)
    if evaluation is not None:
        print(_evaluation_line(evaluation), file=sys.stderr)
    if quality is not None:
        print(f"wrote the NOT PRIVATE quality report to {request.html}: {quality.verdict}",
              file=sys.stderr)
    return 0


def _evaluation_line(evaluation: Mapping[str, float]) -> str:
    """The ``--evaluate`` figures with their scales and the independent-columns baseline."""
    shown = dict(evaluation)
    baseline = shown.pop("baseline_mean_group_l1", None)
    parts = []
    for key, value in shown.items():
        text = f"{key}={value:.4g}"
        if key == "mean_group_l1" and baseline is not None:
            text += (f" (baseline_mean_group_l1={baseline:.4g} for independent columns with "
                     "the model's own 1-way marginals)")
        elif key == "relative_entropy":
            text += " nats (0 = the real distribution)"
        parts.append(text)
    return ("NOT PRIVATE evaluation against the real data (group L1 between normalised "
            "marginals: 0 = exact, 2 = disjoint): " + ", ".join(parts))


def _release(request: SynthRequest, dataset: MarginalSource, workload: LinearWorkload,
             schema: Schema | None, rng: np.random.Generator) -> MWEMResult:
    """MWEM with its defaults, once the records are known to fit on the disk of --out."""
    row_bytes = _row_bytes(dataset.domain, schema)
    if request.rows is not None:
        _check_disk(request.rows, row_bytes, request.out, f"--rows {request.rows}")

    def before_rounds(total: float) -> None:
        # The count is released (and charged) by now: its rows are checked before MWEM's charge.
        if request.rows is None:
            _check_disk(_rows(total), row_bytes, request.out,
                        f"the noisy record count ({_rows(total):,} rows; the count's share of "
                        "epsilon is spent, nothing else; give --rows)")

    return mwem_with_defaults(
        dataset, workload, rounds=request.rounds, rng=rng, schema=schema,
        progress=request.progress, before_rounds=before_rounds, **request.budget,
        **request.options)


def _guarantee(request: SynthRequest) -> str:
    if request.delta is None:  # pure DP (a zCDP run needs --delta)
        return f"epsilon={request.epsilon}"
    return f"zCDP giving (epsilon={request.epsilon}, delta={request.delta:g})-DP"


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


def _report(request: SynthRequest, spec: str, result: MWEMResult, choices: MWEMChoices,
            rows: int, sampling: str, evaluation: dict[str, float] | None
            ) -> dict[str, object]:
    """The run's report; it never holds the seed (only whether there was one)."""
    report = result.report()
    source = request.source
    report["command"] = {
        "input": "bundled:nltcs" if source.demo else os.path.basename(str(source.input)),
        "workload": spec,
        "workload_chosen": _chosen(request.workload),
        "rounds": choices.rounds,
        "rounds_chosen": _chosen(request.rounds),
        "rounds_adaptive": choices.adaptive,
        "privacy": request.privacy,
        "delta": request.delta,
        "rounds_ceiling": choices.rounds_ceiling,
        "candidates": choices.candidates,
        "noise_test": choices.noise_test,
        "rows_written": rows,
        "rows_chosen": _chosen(request.rows),
        "sampling": sampling,
        "sampling_chosen": _chosen(request.sampling),
        **request.options,
        "reuse_passes": choices.reuse_passes,
        "reuse_passes_chosen": _chosen(request.options.get("reuse_passes")),
    }
    if evaluation is not None:
        report["private"] = False
        reasons = cast("list[str]", report["not_private_because"])  # as report() wrote it
        report["not_private_because"] = [*reasons, "evaluated"]
        report["evaluation"] = evaluation
    return report


def _evaluate(dataset: MarginalSource, result: MWEMResult, workload: LinearWorkload
              ) -> tuple[dict[str, float], np.ndarray]:
    """The model's errors against the real data, and the real answers (fractions)."""
    model, histogram = result.model, result.histogram
    if histogram is None:  # MWEM's result has a histogram (dense) or a model (factored)
        # A factored model: the real data as marginals, the synthetic answers by inference.
        true = answers_from_marginals(workload, dataset) / len(dataset)
        evaluation = answer_error(true, result.answer(workload) / result.total, workload)
        records = getattr(dataset, "records", None)
        # an engine's table is never read into memory record by record
        if records is not None and isinstance(model, FactoredState):
            evaluation["relative_entropy"] = relative_entropy_of_records(
                records, model.log_probability)
        return {**evaluation, **_baseline_error(result, workload, true)}, true
    true_hist = dataset.histogram()
    evaluation = workload_error(true_hist, histogram, workload)
    evaluation["relative_entropy"] = relative_entropy(true_hist, histogram)
    true = workload.answer(true_hist) / max(float(true_hist.sum()), 1.0)
    return {**evaluation, **_baseline_error(result, workload, true)}, true


def _baseline_error(result: MWEMResult, workload: LinearWorkload, true: np.ndarray
                    ) -> dict[str, float]:
    """``mean_group_l1`` of independent columns with the model's own 1-way marginals.

    What the budget buys without correlations, at no extra budget (empty when the workload
    cannot be answered on independent columns).
    """
    from fastmwem.workloads import Marginals

    domain = workload.domain
    counts = result.answer(Marginals.all_kway(domain, 1))
    one_way = np.split(counts, np.cumsum(domain.shape)[:-1])
    answers = independent_answers(workload, one_way)
    if answers is None:
        return {}
    return {"baseline_mean_group_l1": answer_error(true, answers, workload)["mean_group_l1"]}


def _counting(blocks: Iterator[pd.DataFrame], counted: RecordCounts, result: MWEMResult,
              written: MarginalCounts | None = None) -> Iterator[pd.DataFrame]:
    """Count each block of codes, then pass it on decoded as ``sample_chunks`` would have."""
    for frame in blocks:
        codes = frame.to_numpy()
        counted.add(codes)
        if written is not None:
            written.add(codes)
        yield frame if result.schema is None else result.schema.decode(frame)


def _records_error(true: np.ndarray, counted: RecordCounts | None, workload: LinearWorkload
                   ) -> dict[str, float]:
    """The written records' errors (the model's are the other keys), prefixed ``records_``."""
    if counted is None or counted.rows == 0:
        return {}
    error = answer_error(true, counted.answers(), workload)
    return {f"records_{k}": error[k] for k in ("mean_group_l1", "max_group_l1")}

