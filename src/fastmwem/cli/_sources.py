"""Where ``fastmwem synth`` reads the private data: a CSV or Parquet file, or the bundled demo.

``--engine`` picks who counts the data: ``memory`` (pandas), ``duckdb`` (embedded; files larger
than memory), ``spark`` (a cluster given by ``--spark-master``, default ``local[2]``), or
``auto`` (DuckDB for files above 64 MiB when it is installed, else memory). Every engine gives
the same counts, so the same seed gives the same output. Files ending in ``.parquet`` (``.pq``,
``.parq``) are Parquet, input and output; anything else is CSV.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from fastmwem.cli import CLIError
from fastmwem.cli._io import check_files, read_text_file
from fastmwem.data import Domain
from fastmwem.data.io.parquet import is_parquet_path
from fastmwem.data.sources import ENGINES, MarginalSource, choose_engine, open_source

if TYPE_CHECKING:
    from fastmwem.data.schema import Schema

__all__ = ["Source", "add_source_arguments", "check_source_arguments", "open_input"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclasses.dataclass(frozen=True)
class Source:
    """The private data as the command line names it (checked, files not yet opened).

    Attributes:
        input: INPUT, the data file (or for Spark a directory or a URI); None with ``demo``.
        domain: ``--domain`` JSON (the data holds integer codes), or None.
        schema: ``--schema`` JSON (the data holds raw values), or None; with neither, the
            schema is drafted privately from INPUT (``draft``).
        demo: the bundled NLTCS dataset instead of INPUT.
        engine: who counts the data, settled: never None.
        spark_master: the Spark master URL, or None for Spark's default.
    """

    input: str | None
    domain: str | None
    schema: str | None
    demo: bool
    engine: str
    spark_master: str | None
    extra_columns: str = "error"

    @property
    def draft(self) -> bool:
        """Whether the schema is drafted from INPUT (no --domain, --schema or --demo)."""
        return not (self.demo or self.domain or self.schema)

    def files(self) -> dict[str, str | None]:
        """Every file read, by flag (checked up front and never written over)."""
        if self.demo:
            from fastmwem.datasets import nltcs_paths

            csv_path, domain_path = nltcs_paths()
            return {"--demo": str(csv_path), "--demo domain": str(domain_path)}
        return {"INPUT": self.input, "--domain": self.domain, "--schema": self.schema}


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help="who counts the data: memory, duckdb (files larger than memory), "
                             "spark, or auto (default: duckdb for files above 64 MiB when "
                             "installed, else memory); all give the same counts")
    parser.add_argument("--spark-master", default=None,
                        help="Spark master URL for --engine spark (default local[2]); implies "
                             "--engine spark")
    parser.add_argument("--extra-columns", choices=["error", "ignore"], default="error",
                        help="columns of INPUT that --domain or --schema does not name: an "
                             "error (default), or ignored")


def check_source_arguments(args: argparse.Namespace) -> Source:
    """The data's flags, checked: the engine settled, its packages (and Parquet output's)
    installed, and one source named (INPUT, with --domain or --schema or neither, or --demo)."""
    engine = args.engine
    if args.spark_master is not None:
        if engine not in (None, "spark"):
            raise CLIError(f"--spark-master needs --engine spark, not --engine {engine}")
        if not args.spark_master:
            raise CLIError("--spark-master: the URL is empty")
        engine = "spark"
    if engine is None:
        engine = "auto"
    needs = {"duckdb": ("duckdb", "duckdb"), "spark": ("pyspark", "spark")}
    if engine in needs:
        _require(*needs[engine], f"--engine {engine}")
    if args.out and is_parquet_path(args.out):
        _require("pyarrow", "parquet", "--out *.parquet")
    if args.demo:
        if args.input or args.domain or args.schema:
            raise CLIError("--demo uses the bundled dataset: give no INPUT, --domain or --schema")
    elif not args.input:
        raise CLIError("give an INPUT.csv (or --demo)")
    elif not args.domain and not args.schema and engine not in ("auto", "memory"):
        raise CLIError(f"without --schema or --domain the schema is drafted from INPUT read "
                       f"into memory; give --schema SCHEMA.json to count with --engine {engine}")
    return Source(input=args.input, domain=args.domain, schema=args.schema, demo=args.demo,
                  engine=engine, spark_master=args.spark_master,
                  extra_columns=getattr(args, "extra_columns", "error"))


def _require(module: str, extra: str, flag: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise CLIError(f'{flag} needs the {module} package: pip install "fastmwem[{extra}]"')


def open_input(source: Source, outputs: Mapping[str, str | None]
               ) -> tuple[MarginalSource, Schema | None]:
    """Check every file of the run, then open the private data: it and its schema (or None).

    Inputs and ``outputs`` (paths by flag) are checked before anything is read (see
    :func:`~fastmwem.cli._io.check_files`); the data is validated before any budget is spent.
    """
    files = source.files()
    in_memory_demo = source.demo and source.engine in ("auto", "memory")
    data_path = str(files["--demo" if source.demo else "INPUT"])
    engine = "memory" if in_memory_demo else choose_engine(data_path, source.engine)
    # The engine decides what INPUT may be: Spark also reads a directory or a URI.
    spark_reads = engine == "spark" and bool(_URI.match(data_path) or os.path.isdir(data_path))
    check_files(files, outputs, unchecked=("INPUT",) if spark_reads else ())
    if in_memory_demo:
        from fastmwem.datasets import load_nltcs

        return load_nltcs(), None
    schema: Schema | None = None
    target: Domain | Schema
    if source.schema:
        from fastmwem.data.schema import Schema

        target = schema = read_text_file(Schema.from_json, source.schema, "--schema")
    elif source.demo:
        target = Domain.from_json(str(files["--demo domain"]))
    else:
        target = read_text_file(Domain.from_json, str(source.domain), "--domain")
    try:
        dataset = read_text_file(
            lambda p: open_source(p, target, engine, spark_master=source.spark_master,
                                  extra_columns=source.extra_columns),
            data_path, "INPUT")
    except ImportError as exc:
        raise CLIError(f"--engine {engine}: {exc}") from None
    return dataset, schema
