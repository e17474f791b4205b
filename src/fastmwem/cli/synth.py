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
from fastmwem.cli._evaluate import evaluate, evaluation_line, records_error
from fastmwem.cli._io import check_files, free_disk_bytes, staged_outputs
from fastmwem.cli._sources import (
    Source,
    add_source_arguments,
    check_source_arguments,
    open_input,
)
from fastmwem.data import Domain
from fastmwem.data.sources import MarginalSource
from fastmwem.evaluation import RecordCounts
from fastmwem.models.sampling import AUTO_MATCH_ROWS, SAMPLING_METHODS, default_sampling
from fastmwem.progress import phase, progress_blocks
from fastmwem.quality import (
    MarginalCounts,
    marginal_plan,
    quality_report,
    require_matplotlib,
)
from fastmwem.random import split_seed
from fastmwem.release.definitions import PrivacyDefinition, definition_of
from fastmwem.release.mwem import (
    AUTO_REUSE_PASSES,
    MWEMChoices,
    check_options,
    mwem_with_defaults,
)
from fastmwem.release.mwem.config import ESTIMATORS, MODELS
from fastmwem.release.result import MWEMResult
from fastmwem.release.selection import selection_names
from fastmwem.synthesizer import DRAFT_FRACTION
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.spec import WORKLOAD_HELP, default_workload_spec, parse_workload

if TYPE_CHECKING:
    import pandas as pd

    from fastmwem.data.schema import Schema
    from fastmwem.synthesizer import Synthesizer

__all__ = ["register"]

# The default row count (the noisy record count) gets a warning when the count's noise scale is
# more than this share of it.
_NOISY_COUNT_SHARE = 0.1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="private synthetic data with MWEM",
        description=(
            "Fit MWEM to a CSV of integer codes (with --domain) or raw values (with --schema, "
            "or with neither: a schema is then drafted privately from the data with "
            "--draft-fraction of the budget) and write synthetic records. Pure epsilon-DP "
            "(default) or, with --delta D, zero-concentrated DP that implies (epsilon, D)-DP "
            "(with a drafted schema: (epsilon, D)-DP in all); add/remove-one-record neighbours."
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
    parser.add_argument("--privacy", choices=["pure", "zcdp"], default=None,
                        help="pure: epsilon-DP with Laplace noise (the default without "
                             "--delta); zcdp: zCDP with discrete Gaussian noise, spending the "
                             "largest rho that gives (epsilon, --delta)-DP (the default with "
                             "--delta)")
    parser.add_argument("--delta", type=float, default=None,
                        help="delta of the (epsilon, delta)-DP guarantee, in (0, 1): selects "
                             "--privacy zcdp, and lets a drafted schema learn text columns' "
                             "labels")
    parser.add_argument("--draft-fraction", type=float, default=DRAFT_FRACTION,
                        help="without --schema or --domain: the share of the budget that "
                             f"drafts the schema (default {DRAFT_FRACTION})")
    parser.add_argument("--bins", type=int, default=16,
                        help="without --schema or --domain: bins of each number column of "
                             "the drafted schema (default 16; fewer where values repeat)")
    parser.add_argument("--numeric", choices=["uniform", "midpoint"], default="uniform",
                        help="how a sampled number bin is written: a uniform draw inside it "
                             "(whole numbers among its whole numbers; default) or its "
                             "midpoint")
    parser.add_argument("--out", required=True,
                        help="output CSV (or .parquet) of synthetic records")
    parser.add_argument("--workload", default=None, help=WORKLOAD_HELP)
    parser.add_argument("--rounds", type=_rounds_arg, default=None,
                        help="MWEM rounds T, 'adaptive' (budget annealing: rounds continue "
                             "until the budget is spent) or 'fixed' (the default's rules "
                             "without annealing). Default: with --privacy zcdp and --model "
                             "dense, adaptive when the budget is large next to the records "
                             "(see docs/mwem.md), else 25; with pure "
                             "DP superset rounds when the "
                             "noisy record count allows enough of them, else adaptive; "
                             "on a junction tree up to 25 (pure) or 50 (zCDP), fewer where "
                             "a typical pair would be mostly noise, at least one per "
                             "attribute (see docs/mwem.md). A --rounds above the "
                             "number of candidate groups is an error")
    parser.add_argument("--model", choices=list(MODELS), default=None,
                        help="the synthetic model: dense (a histogram over the whole domain), "
                             "junction-tree, product, or auto (dense where it fits). Default: "
                             "with --privacy zcdp a junction tree for a marginal workload, "
                             "else auto (see docs/mwem.md)")
    parser.add_argument("--reuse-passes", type=int, default=None,
                        help="most MW passes over all measurements per round (default "
                             f"{AUTO_REUSE_PASSES}; 20 with --model dense and zCDP)")
    parser.add_argument("--estimator", choices=list(ESTIMATORS), default=None,
                        help="how the model is refitted to the measurements: passes "
                             "(multiplicative-weights reuse passes), final-fit (the passes, "
                             "then the noise-weighted fit after the last round) or fit (the "
                             "weighted fit after every measurement). Default: final-fit, but "
                             "passes with --privacy zcdp and --model dense (see docs/mwem.md)")
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
    """``--rounds``: a whole number, ``adaptive`` or ``fixed``."""
    if text in ("adaptive", "fixed"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number, 'adaptive' or 'fixed', got {text!r}") from None


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
    numeric: str = "uniform"
    draft_fraction: float = DRAFT_FRACTION
    bins: int = 16

    @property
    def budget(self) -> dict[str, Any]:
        """The budget keywords of the run: epsilon, the definition and its delta."""
        return {"epsilon": self.epsilon, "privacy": self.privacy, "delta": self.delta}


def _request(args: argparse.Namespace) -> SynthRequest:
    """The command line, checked whole before any file is read or any budget is spent."""
    if args.privacy is None:
        args.privacy = "pure" if args.delta is None else "zcdp"
    _check_numbers(args)
    given = {} if args.reuse_passes is None else {"reuse_passes": args.reuse_passes}
    if args.estimator is not None:
        given["estimator"] = args.estimator
    if args.model is not None:
        given["model"] = args.model
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
        html=_html_arg(args), numeric=args.numeric, draft_fraction=args.draft_fraction,
        bins=args.bins)


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
    if not 0 < args.draft_fraction < 1:
        raise CLIError(f"--draft-fraction must lie in (0, 1), got {args.draft_fraction}")
    if args.bins < 2:
        raise CLIError(f"--bins must be >= 2, got {args.bins}")


def _check_privacy(args: argparse.Namespace) -> None:
    """Refuse a privacy definition and delta that do not go together (before any budget)."""
    if args.privacy == "pure":
        if args.delta is not None:
            raise CLIError("--delta is for --privacy zcdp (its default); a --privacy pure run "
                           "takes --epsilon only")
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


@dataclasses.dataclass
class _Fitted:
    """A fitted run: MWEM's result, its workload's spec, and (drafting) the Synthesizer."""

    result: MWEMResult
    spec: str
    workload: LinearWorkload
    dataset: MarginalSource | None = None
    synth: Synthesizer | None = None
    frame: pd.DataFrame | None = None
    dates: tuple[str, ...] = ()

    def data(self) -> MarginalSource:
        """The private data as codes (a drafted run encodes its table on demand)."""
        if self.dataset is None:
            if self.synth is None or self.synth.schema is None or self.frame is None:
                raise RuntimeError("no data")  # a run has one or the other
            self.dataset = self.synth.schema.encode(self.frame)
        return self.dataset


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    request = _request(args)
    # One seed, three independent streams: the public workload's draw does not move with the
    # noise (whose length depends on epsilon), nor the records with either.
    workload_rng, noise_rng, sampling_rng = split_seed(request.seed)
    if request.source.draft:
        fitted = _fit_drafted(request, noise_rng)
    else:
        fitted = _fit_declared(request, workload_rng, noise_rng)
    result, spec, workload = fitted.result, fitted.spec, fitted.workload
    # the marginals the HTML report scores depend on the public domain only
    plan = None if request.html is None else marginal_plan(result.domain)[0]
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
        scored = evaluate(fitted.data(), result, workload) if request.evaluate else None
    evaluation = None if scored is None else scored[0]
    counted = RecordCounts(workload) if request.evaluate else None
    written = None if plan is None else MarginalCounts(
        result.domain, [s for k in sorted(plan) for s in plan[k]])
    blocks = result.sample_chunks(rows, rng=sampling_rng, sampling=sampling, decode=False)
    if request.progress:
        blocks = progress_blocks(blocks, rows,
                                 seconds=result.sample_seconds(rows, sampling=sampling))
    blocks = _decoded(blocks, counted, written, fitted, request.numeric, sampling_rng)
    quality = None
    with staged_outputs() as outputs:
        outputs.write_records(blocks, request.out, "--out")
        if scored is not None:
            evaluation = {**scored[0], **records_error(scored[1], counted, workload)}
        if written is not None and request.html:
            with phase("the quality report", enabled=request.progress):
                quality = quality_report(fitted.data(), written, schema=result.schema)
            outputs.write_text(quality.html(), request.html, "--html")
        if request.report:
            outputs.write_json(
                _report(request, spec, fitted, choices, rows, sampling, evaluation),
                request.report, "--report")
    elapsed = time.perf_counter() - started
    if result.updates_skipped:
        which = "every measurement" if choices.adaptive else "the first measurement"
        print(f"fastmwem synth: note: {which} lay within its noise of the "
              f"{request.options['init']} start, so nothing in the data was detectable at this "
              "epsilon: the output is that start, not fitted to the data", file=sys.stderr)
    print(f"wrote {rows} synthetic records to {request.out} ({_guarantee(request)}, workload "
          f"{spec} ({_chosen(request.workload)}), {choices.rounds} "
          f"round{'s' * (choices.rounds != 1)} ({_chosen(request.rounds)}), {sampling} records "
          f"({_chosen(request.sampling)}), {elapsed:.1f} s)", file=sys.stderr)
    if evaluation is not None:
        print(evaluation_line(evaluation), file=sys.stderr)
    if quality is not None:
        print(f"wrote the NOT PRIVATE quality report to {request.html}: {quality.verdict}",
              file=sys.stderr)
    return 0



def _fit_declared(request: SynthRequest, workload_rng: np.random.Generator,
                  noise_rng: np.random.Generator) -> _Fitted:
    """MWEM on INPUT as --domain or --schema declares it (or the demo)."""
    dataset, schema = open_input(request.source, {"--out": request.out, "--report": request.report,
                                                  "--html": request.html})
    spec = default_workload_spec(dataset.domain) if request.workload is None else request.workload
    workload = parse_workload(spec, dataset.domain, seed=workload_rng)
    result = _release(request, dataset, workload, schema, noise_rng)
    return _Fitted(result, spec, workload, dataset=dataset)


def _fit_drafted(request: SynthRequest, noise_rng: np.random.Generator) -> _Fitted:
    """A schema drafted privately from INPUT, then MWEM with the rest of the budget.

    The workload's random draws (ranges, counting queries) come from the noise's stream: the
    domain they are drawn over is known only once the schema is drafted.
    """
    from fastmwem.cli._raw import DRAFT_NOTE, read_raw_table, undeclared_text_message
    from fastmwem.data.schema.draft import UndeclaredCategoriesError
    from fastmwem.synthesizer import Synthesizer

    source = request.source
    check_files(source.files(), {"--out": request.out, "--report": request.report,
                                 "--html": request.html})
    frame, dates = read_raw_table(str(source.input))
    made: list[Synthesizer] = []  # the callback below runs once the Synthesizer exists
    synth = Synthesizer(
        request.epsilon, request.delta, privacy=request.privacy,
        draft_fraction=request.draft_fraction, rng=noise_rng, bins=request.bins,
        workload=request.workload, numeric=request.numeric, rounds=request.rounds,
        progress=request.progress, before_rounds=lambda total: _check_rows(request, made[0], total),
        **request.options)
    made.append(synth)
    print(f"fastmwem synth: note: no --schema or --domain: drafting a schema privately from "
          f"INPUT with {request.draft_fraction:g} of the budget ({DRAFT_NOTE}); "
          "`fastmwem schema draft` writes one to edit", file=sys.stderr)
    try:
        synth.fit(frame)
    except UndeclaredCategoriesError as exc:
        raise CLIError(undeclared_text_message(exc.columns)) from None
    result = cast(MWEMResult, synth.result)
    spec = request.workload or default_workload_spec(result.domain)
    return _Fitted(result, spec, result.workload, synth=synth, frame=frame, dates=dates)


def _check_rows(request: SynthRequest, synth: Synthesizer, total: float) -> None:
    """A drafted run's disk check, once the schema (the row width) and the count are out."""
    schema = cast("Schema", synth.schema)  # drafted by now
    row_bytes = _row_bytes(schema.domain, schema)
    if request.rows is not None:
        _check_disk(request.rows, row_bytes, request.out, f"--rows {request.rows}")
    else:
        _check_disk(_rows(total), row_bytes, request.out,
                    f"the noisy record count ({_rows(total):,} rows; the draft's and the "
                    "count's shares of epsilon are spent, nothing else; give --rows)")


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
    if request.source.draft:
        return (f"(epsilon={request.epsilon}, delta={request.delta:g})-DP: a drafted schema and "
                "MWEM under zCDP")
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


def _report(request: SynthRequest, spec: str, fitted: _Fitted, choices: MWEMChoices,
            rows: int, sampling: str, evaluation: dict[str, float] | None
            ) -> dict[str, object]:
    """The run's report; it never holds the seed (only whether there was one).

    A drafted run's ``privacy`` is the whole run's guarantee and ledger (the draft's and
    MWEM's charges), with MWEM's own record under ``privacy.mwem``, and ``schema`` the
    drafted schema."""
    report = fitted.result.report()
    if fitted.synth is not None:
        overall = fitted.synth.report()
        report["privacy"] = {**cast("dict[str, object]", overall["guarantee"]),
                             "ledger": overall["ledger"],
                             **({"zcdp_ledger": overall["zcdp_ledger"]}
                                if "zcdp_ledger" in overall else {}),
                             "mwem": report["privacy"]}
        report["schema"] = overall["schema"]
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
        "schema": "drafted" if source.draft else "given" if source.schema else None,
        **({"draft_fraction": request.draft_fraction, "bins": request.bins}
           if source.draft else {}),
        "numeric": request.numeric,
        "rows_written": rows,
        "rows_chosen": _chosen(request.rows),
        "sampling": sampling,
        "sampling_chosen": _chosen(request.sampling),
        **request.options,
        "reuse_passes": choices.reuse_passes,
        "reuse_passes_chosen": _chosen(request.options.get("reuse_passes")),
        "estimator": choices.estimator,
        "estimator_chosen": _chosen(request.options.get("estimator")),
    }
    if evaluation is not None:
        report["private"] = False
        reasons = cast("list[str]", report["not_private_because"])  # as report() wrote it
        report["not_private_because"] = [*reasons, "evaluated"]
        report["evaluation"] = evaluation
    return report



def _decoded(blocks: Iterator[pd.DataFrame], counted: RecordCounts | None,
             written: MarginalCounts | None, fitted: _Fitted, numeric: str,
             rng: np.random.Generator) -> Iterator[pd.DataFrame]:
    """Each block of codes counted (for --evaluate), then decoded: by the drafted table's
    dtypes, by the schema (numbers as --numeric says), or left as codes."""
    schema = fitted.result.schema
    for frame in blocks:
        codes = frame.to_numpy()
        if counted is not None:
            counted.add(codes)
        if written is not None:
            written.add(codes)
        if fitted.synth is not None:
            decoded = fitted.synth.decode(frame, rng=rng)
            for name in fitted.dates:  # dates without a time are written as dates
                decoded[name] = decoded[name].dt.floor("D")
            yield decoded
        elif schema is not None:
            yield schema.decode(frame, numeric=numeric, rng=rng)
        else:
            yield frame
