"""``fastmwem topk``: the k most frequent items of a CSV, privately, in order."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.cli import CLIError, print_warning, warn_seeded
from fastmwem.cli._io import check_files, staged_outputs
from fastmwem.data import read_csv_columns, read_lines, write_csv
from fastmwem.data.io.csv import read_csv_header
from fastmwem.mechanisms.topk import METHODS, TopKMechanism

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["register"]

DEFAULT_DELTA = 1e-6


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "topk",
        help="private top-k items (joint exponential mechanism and baselines)",
        description=(
            "Select the k items with the largest counts, privately, best first. Input is either "
            "one row per item with its count (--count-column), or raw (user, item) rows "
            "(--user-column), where each user counts at most once per item. Each user may "
            "contribute to any number of items. Only the chosen items are written, never counts."
        ),
    )
    parser.add_argument("input", help="input CSV")
    parser.add_argument("--k", type=int, required=True, help="number of items to select")
    parser.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    parser.add_argument("--method", choices=list(METHODS), default="joint",
                        help="mechanism (default joint, exact; cdp-peel is (epsilon, delta)-DP)")
    parser.add_argument("--item-column", default="item",
                        help="column naming the item (default 'item')")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--count-column", help="column with each item's count (one row per item)")
    source.add_argument("--user-column", help="column with the user id (raw user, item rows)")
    parser.add_argument("--items",
                        help="optional file listing the public item universe, one per line; "
                             "items absent from the data get count 0. Without it the items are "
                             "those present in the input, which is private only if that list "
                             "is itself public")
    parser.add_argument("--neighbors", choices=["add-remove", "replace"], default="add-remove",
                        help="neighbouring datasets differ by one user added/removed (default) "
                             "or replaced")
    parser.add_argument("--delta", type=float, default=None,
                        help=f"delta for --method cdp-peel (default {DEFAULT_DELTA:g})")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for reproducible runs, for tests only: anyone who knows it can "
                             "undo the noise, so a seeded run is NOT private (default: OS "
                             "entropy). The seed is never written to any output")
    parser.add_argument("--out", help="output CSV (rank,item); default: print to stdout")
    parser.set_defaults(handler=run)


def _read_table(args: argparse.Namespace) -> pd.DataFrame:
    """The item column and the count or user column, as exact text; refuses malformed files."""
    wanted = [("--item-column", args.item_column)]
    wanted += [("--count-column", args.count_column)] if args.count_column is not None else []
    wanted += [("--user-column", args.user_column)] if args.user_column is not None else []
    if len({name for _, name in wanted}) < len(wanted):
        raise CLIError(f"{wanted[1][0]} and --item-column must name different columns")
    header = read_csv_header(args.input, "input file")
    for flag, name in wanted:
        if name not in header:
            raise CLIError(f"{flag}: column {name!r} not in {args.input!r} (columns: "
                           f"{', '.join(header)})")
    frame = read_csv_columns(args.input, [name for _, name in wanted], extra_columns="ignore",
                             what="input file")
    if frame.empty:
        raise CLIError(f"input file {args.input!r} has a header but no data rows")
    return frame


def _first(mask: pd.Series | np.ndarray) -> int:
    return int(np.argmax(np.asarray(mask)))


def _column(frame: pd.DataFrame, name: str, flag: str) -> pd.Series:
    """A key column (items or users): no empty cells, and compared exactly, never stripped."""
    col = frame[name]
    empty = col.isna()
    if empty.any():
        raise CLIError(f"{flag}: column {name!r} has an empty value on data row {_first(empty)} "
                       "(0-based)")
    padded = col != col.str.strip()
    if padded.any():
        raise CLIError(f"{flag}: column {name!r} has a value with leading or trailing whitespace "
                       f"on data row {_first(padded)} (0-based); values are compared exactly "
                       "(' A' and 'A' would be different), so remove the spaces")
    return col


def _parse_counts(col: pd.Series, name: str) -> np.ndarray:
    import pandas as pd
    values = pd.to_numeric(col.str.strip(), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.floor(values))
    if bad.any():
        # the offending cell is private: name its row, never its value
        raise CLIError(f"--count-column: {name!r} must hold non-negative integers; data row "
                       f"{_first(bad)} (0-based) does not")
    if values.max() >= 2.0**53:
        raise CLIError(f"--count-column: counts in {name!r} must be below 2**53")
    return values.astype(np.int64)


def _item_counts(args: argparse.Namespace) -> tuple[list[str], np.ndarray]:
    import pandas as pd
    universe = None if args.items is None else _read_universe(args.items)
    frame = _read_table(args)
    items = _column(frame, args.item_column, "--item-column")
    if universe is not None:
        unknown = ~items.isin(universe)
        if unknown.any():
            raise CLIError(f"--items: the item on data row {_first(unknown)} (0-based) of the "
                           f"input is not in {args.items!r}")
    if args.count_column is not None:
        counts = _parse_counts(_column(frame, args.count_column, "--count-column"),
                               args.count_column)
        dup = items.duplicated()
        if dup.any():
            raise CLIError(f"--count-column: the item on data row {_first(dup)} (0-based) "
                           "appears on more than one row; give one row per item")
        table = pd.Series(counts, index=items.to_numpy())
    else:
        users = _column(frame, args.user_column, "--user-column")
        # The contribution model: a user adds at most one to each item's count.
        pairs = pd.DataFrame({"user": users, "item": items}).drop_duplicates()
        table = pairs.groupby("item", sort=False).size()
    if universe is not None:
        table = table.reindex(universe, fill_value=0)
    return [str(x) for x in table.index], table.to_numpy(dtype=np.int64)


def _read_universe(path: str) -> list[str]:
    """The public item list: one item per line, exact (no surrounding whitespace), no repeats."""
    lines = read_lines(path, "--items file")
    seen: dict[str, int] = {}
    for number, item in lines:
        if item in seen:
            # the universe is public, so naming the item is safe
            raise CLIError(f"--items: {path!r} lists {item!r} twice (lines {seen[item]} and "
                           f"{number})")
        seen[item] = number
    if not seen:
        raise CLIError(f"--items: {path!r} lists no items")
    return list(seen)


def _mechanism(args: argparse.Namespace) -> TopKMechanism:
    cls = METHODS[args.method]
    if args.method == "cdp-peel":
        delta = DEFAULT_DELTA if args.delta is None else args.delta
        return cls(args.k, args.epsilon, delta, args.neighbors)
    if args.delta is not None:
        raise CLIError(f"--delta applies to --method cdp-peel only, not {args.method!r}")
    return cls(k=args.k, epsilon=args.epsilon, neighbors=args.neighbors)


def run(args: argparse.Namespace) -> int:
    import pandas as pd
    mech = _mechanism(args)  # checks k >= 1, epsilon, delta
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")
    check_files({"INPUT": args.input, "--items": args.items}, {"--out": args.out})
    names, counts = _item_counts(args)
    if args.k > counts.size:
        raise CLIError(f"--k {args.k} exceeds the number of items ({counts.size})")
    if args.items is None:
        # Public parameters must not come silently from private data: say so every time.
        print_warning("topk", "the candidate items are read from the input; the output is "
                              "differentially private only if that item list is public. Pass "
                              "--items FILE with the public item universe.")
    chosen = mech.select(counts, rng=args.seed)
    if args.seed is not None:
        warn_seeded("topk")
    result = pd.DataFrame({"rank": np.arange(1, args.k + 1), "item": [names[i] for i in chosen]})
    if args.out is not None:
        with staged_outputs() as outputs:
            outputs.write_csv(result, args.out, "--out")
    else:
        write_csv(result, sys.stdout)
    print(f"fastmwem topk: {args.method}, {mech.privacy!r}, {args.neighbors} neighbours, "
          f"{counts.size} items", file=sys.stderr)
    return 0
