"""``fastmwem schema draft``: a schema JSON skeleton from a raw table, for a person to edit.

With ``--epsilon`` (and ``--delta``) the schema is drafted with differential privacy
(:func:`~fastmwem.data.schema.draft.draft_schema`); with ``--non-private`` it is read off the
data (:meth:`Schema.infer <fastmwem.data.Schema.infer>`), which leaks privacy and says so.
"""

from __future__ import annotations

import argparse
import sys

from fastmwem.cli import CLIError, print_warning, warn_seeded
from fastmwem.cli._io import check_files, staged_outputs

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema", help="write a schema JSON for a raw table",
        description="Schema files for `fastmwem synth --schema`.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    draft = actions.add_parser(
        "draft", help="draft a schema from a raw CSV (privately, or --non-private)",
        description=(
            "Draft a schema JSON from a raw CSV or Parquet file, to edit and then give to "
            "`fastmwem synth --schema`. With --epsilon (and --delta) it is learnt with "
            "differential privacy: epsilon-DP, or (epsilon, delta)-DP, which text columns need "
            "to learn their labels; add/remove-one-record neighbours. With --non-private the "
            "categories and bounds are read off the data, which is NOT private."))
    draft.add_argument("input", help="raw CSV or Parquet (by extension)")
    draft.add_argument("--out", required=True, help="the schema JSON to write")
    draft.add_argument("--epsilon", type=float, default=None, help="the draft's privacy budget")
    draft.add_argument("--delta", type=float, default=None,
                       help="delta of an (epsilon, delta)-DP draft, in (0, 1); needed to learn "
                            "the labels of text columns")
    draft.add_argument("--non-private", action="store_true",
                       help="read categories and bounds off the data: NOT private (a "
                            "PrivacyLeakWarning says so)")
    draft.add_argument("--bins", type=int, default=16,
                       help="bins of each number column (default 16)")
    draft.add_argument("--seed", type=int, default=None,
                       help="seed for reproducible runs, for tests only: NOT private")
    parser.set_defaults(handler=run)


def _check(args: argparse.Namespace) -> None:
    """The command line, checked before any file is read."""
    if args.non_private:
        if args.epsilon is not None or args.delta is not None:
            raise CLIError("--non-private reads the data without privacy: give no --epsilon "
                           "or --delta")
        if args.seed is not None:
            raise CLIError("--non-private draws nothing: give no --seed")
    elif args.epsilon is None:
        raise CLIError("give --epsilon E (a private draft) or --non-private")
    elif not args.epsilon > 0:
        raise CLIError(f"--epsilon must be > 0, got {args.epsilon}")
    if args.delta is not None and not 0 < args.delta < 1:
        raise CLIError(f"--delta must lie in (0, 1), got {args.delta}")
    if args.bins < 2:
        raise CLIError(f"--bins must be >= 2, got {args.bins}")
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")


def run(args: argparse.Namespace) -> int:
    from fastmwem.cli._raw import DRAFT_NOTE, read_raw_table, undeclared_text_message
    from fastmwem.data.schema import Schema
    from fastmwem.data.schema.draft import UndeclaredCategoriesError, draft_schema
    from fastmwem.random import make_rng

    _check(args)
    check_files({"INPUT": args.input}, {"--out": args.out})
    # Dates stay text: `synth --schema` reads a CSV file's cells as text, and a schema's
    # numbers are numbers (a drafted `synth` run without --schema does read dates).
    frame, _ = read_raw_table(args.input, dates=False)
    if args.non_private:
        schema = Schema.infer(frame, allow_private_inference=True, bins=args.bins)
        how = "read off the data: NOT private"
    else:
        try:
            schema = draft_schema(frame, epsilon=args.epsilon, delta=args.delta,
                                  rng=make_rng(args.seed) if args.seed is not None else None,
                                  bins=args.bins)
        except UndeclaredCategoriesError as exc:
            raise CLIError(undeclared_text_message(exc.columns)) from None
        guarantee = (f"epsilon={args.epsilon}" if args.delta is None
                     else f"(epsilon={args.epsilon}, delta={args.delta:g})-DP")
        how = f"drafted with {guarantee}: {DRAFT_NOTE}"
        if args.seed is not None:
            warn_seeded("schema")
    with staged_outputs() as outputs:
        outputs.write_json(schema.to_dict(), args.out, "--out")
    print(f"wrote a schema of {len(schema.columns)} columns to {args.out} ({how}); edit it "
          "(categories, bounds, bins, \"missing\") and give it to `fastmwem synth --schema`",
          file=sys.stderr)
    if args.non_private:
        print_warning("schema", "this schema lists the data's own categories and exact "
                                "bounds; do not publish it")
    return 0
