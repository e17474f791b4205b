"""The ``fastmwem`` command line.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``,
which adds its parser and sets ``handler`` to a function ``(args) -> int``. Errors a user can fix
are raised as :class:`CLIError` (or ``ValueError``/``TypeError`` from the library) and printed as
one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fastmwem.accounting import BudgetExceededError

__all__ = ["main", "CLIError", "SUBCOMMANDS"]

#: Modules of this package that provide a subcommand, in the order shown by ``--help``.
SUBCOMMANDS: tuple[str, ...] = ("synth", "topk")


class CLIError(Exception):
    """A problem with the command line or its input files, reported as one line."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, with exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fastmwem",
        description="Differentially private data release (MWEM, exponential mechanism, top-k).",
    )
    from fastmwem import __version__

    parser.add_argument("--version", action="version", version=f"fastmwem {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"fastmwem.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fastmwem`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except (CLIError, ValueError, TypeError, BudgetExceededError, FileNotFoundError,
            IsADirectoryError, PermissionError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"fastmwem {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"fastmwem {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
