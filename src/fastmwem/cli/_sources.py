"""Where ``fastmwem synth`` reads the private data and how it writes records (CSV or Parquet).

``--engine`` picks who counts the data: ``memory`` (pandas), ``duckdb`` (embedded; files larger
than memory), ``spark`` (a cluster given by ``--spark-master``, default ``local[2]``), or
``auto`` (DuckDB for files above 64 MiB when it is installed, else memory). Every engine gives
the same counts, so the same seed gives the same output. Files ending in ``.parquet`` (``.pq``,
``.parq``) are Parquet, input and output; anything else is CSV.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from fastmwem.cli import CLIError
from fastmwem.cli._io import StagedOutputs, check_input_file, read_text_file
from fastmwem.data import Domain
from fastmwem.data.io.parquet import is_parquet_path, require_pyarrow
from fastmwem.data.sources import ENGINES, MarginalSource, choose_engine, open_source

if TYPE_CHECKING:
    import pandas as pd

    from fastmwem.data.schema import Schema

__all__ = ["add_source_arguments", "check_input", "check_source_arguments", "load_source",
           "write_records"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help="who counts the data: memory, duckdb (files larger than memory), "
                             "spark, or auto (default: duckdb for files above 64 MiB when "
                             "installed, else memory); all give the same counts")
    parser.add_argument("--spark-master", default=None,
                        help="Spark master URL for --engine spark (default local[2]); implies "
                             "--engine spark")


def check_source_arguments(args: argparse.Namespace) -> None:
    """Settle ``args.engine`` and check that its packages (and Parquet output's) are installed."""
    if args.spark_master is not None:
        if args.engine not in (None, "spark"):
            raise CLIError(f"--spark-master needs --engine spark, not --engine {args.engine}")
        if not args.spark_master:
            raise CLIError("--spark-master: the URL is empty")
        args.engine = "spark"
    if args.engine is None:
        args.engine = "auto"
    needs = {"duckdb": ("duckdb", "duckdb"), "spark": ("pyspark", "spark")}
    if args.engine in needs:
        _require(*needs[args.engine], f"--engine {args.engine}")
    if args.out and is_parquet_path(args.out):
        _require("pyarrow", "parquet", "--out *.parquet")


def _require(module: str, extra: str, flag: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise CLIError(f'{flag} needs the {module} package: pip install "fastmwem[{extra}]"')


def check_input(path: str, flag: str, engine: str) -> None:
    """Like :func:`check_input_file`, but Spark may also read a directory or a URI."""
    if flag == "INPUT" and engine == "spark" and (_URI.match(path) or os.path.isdir(path)):
        return
    check_input_file(path, flag)


def load_source(args: argparse.Namespace) -> tuple[MarginalSource, object]:
    """The private data and its schema (or None), validated before any budget is spent."""
    if args.demo:
        from fastmwem.datasets import load_nltcs, nltcs_paths

        if args.engine in ("auto", "memory"):
            return load_nltcs(), None
        csv_path, domain_path = nltcs_paths()
        return _open(args, str(csv_path), Domain.from_json(domain_path)), None
    if args.schema:
        from fastmwem.data.schema import Schema

        schema = read_text_file(Schema.from_json, args.schema, "--schema")
        return _open(args, args.input, schema), schema
    domain = read_text_file(Domain.from_json, args.domain, "--domain")
    return _open(args, args.input, domain), None


def _open(args: argparse.Namespace, path: str, target: Domain | Schema) -> MarginalSource:
    engine = choose_engine(path, args.engine)
    options = {"spark_master": args.spark_master} if engine == "spark" else {}
    try:
        return read_text_file(lambda p: open_source(p, target, engine, **options), path,
                              "INPUT")
    except ImportError as exc:
        raise CLIError(f"--engine {engine}: {exc}") from None


def write_records(outputs: StagedOutputs, records: pd.DataFrame | Iterable[pd.DataFrame],
                  path: str, flag: str) -> None:
    """Stage records (a DataFrame, or blocks of rows) as Parquet or CSV, by ``path``'s extension."""
    import pandas as pd
    if is_parquet_path(path):
        require_pyarrow()
        outputs.write_parquet(records, path, flag)
    elif isinstance(records, pd.DataFrame):
        outputs.write_csv(records, path, flag)
    else:
        outputs.write_csv_blocks(records, path, flag)
