"""The ``fastmwem`` command line.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``,
which adds its parser and sets ``handler`` to a function ``(args) -> int``. Errors a user can fix
are raised as :class:`CLIError` (or ``ValueError``/``TypeError`` from the library, or an
``OSError`` from the file system) and printed as one line on stderr with exit status 2; any other
exception is a bug and keeps its traceback. Warnings are one line each. SIGTERM is turned into an
exception, so that temporary output files are removed as for Ctrl-C (exit status 143 and 130).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import NoReturn, TextIO

from fastmwem.accounting import BudgetExceededError

__all__ = ["main", "CLIError", "SUBCOMMANDS", "Terminated", "print_warning", "warn_seeded",
           "cli_words"]

#: Modules of this package that provide a subcommand, in the order shown by ``--help``.
SUBCOMMANDS: tuple[str, ...] = ("synth", "schema", "topk", "serve", "ask")

# The library's advice in Python keywords, as command-line flags and schema-file keys.
_CLI_WORDS = (
    ("(pass extra_columns='ignore' to drop them)", "(give --extra-columns ignore to drop them)"),
    ("(widen the bounds or set clip=True)",
     '(widen the bounds, or set "clip": true in the --schema file)'),
    ("(declare them or set other=)", '(declare them, or set "other" in the --schema file)'),
    ('set missing=True on its spec ("missing": true in schema JSON)',
     'set "missing": true for it in the --schema file'),
    ("pass allow_uncertified=True to run anyway", "give --allow-uncertified to run anyway"),
    ("allow_uncertified=True to run it anyway", "--allow-uncertified to run it anyway"),
)


def cli_words(message: str) -> str:
    """``message`` with the library's Python keywords replaced by the command line's flags."""
    for python, flags in _CLI_WORDS:
        message = message.replace(python, flags)
    return message


class CLIError(Exception):
    """A problem with the command line or its input files, reported as one line."""


class Terminated(BaseException):
    """SIGTERM arrived; raised in the main thread so that cleanup code runs."""


def print_warning(command: str, message: str, category: str = "PrivacyLeakWarning") -> None:
    """One warning line on stderr."""
    print(f"fastmwem {command}: warning ({category}): {message}", file=sys.stderr)


def warn_seeded(command: str, extra: str = "") -> None:
    """The warning line of a run given --seed (which never shows the seed itself)."""
    print_warning(command, "--seed makes the noise reproducible: anyone who knows the seed can "
                           "remove it, so this output is NOT private; use --seed for tests only"
                  + extra)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, with exit status 2."""

    def error(self, message: str) -> NoReturn:
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
    command = args.command
    try:
        with _sigterm_raises(), _one_line_warnings(command):
            return int(args.handler(args))
    except (CLIError, ValueError, TypeError, BudgetExceededError) as exc:
        _error(command, str(exc) or type(exc).__name__)
        return 2
    except OSError as exc:
        if exc.filename is not None and exc.strerror:
            _error(command, f"cannot use {exc.filename!r}: {exc.strerror}")
        else:
            _error(command, str(exc) or type(exc).__name__)
        return 2
    except MemoryError:
        _error(command, "out of memory: the run needs more memory than this machine has free "
                        "(use fewer attributes, a smaller workload or fewer --rows)")
        return 2
    except KeyboardInterrupt:
        print(f"fastmwem {command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"fastmwem {command}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM


def _error(command: str, message: str) -> None:
    print(f"fastmwem {command}: error: {cli_words(message.splitlines()[0])}", file=sys.stderr)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (Python's default just exits)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@contextlib.contextmanager
def _one_line_warnings(command: str) -> Iterator[None]:
    from fastmwem.mechanisms.seeding import SeededRunWarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        print_warning(command, str(message).splitlines()[0], category.__name__)

    with warnings.catch_warnings():
        # The subcommand says this once, in terms of --seed.
        warnings.simplefilter("ignore", SeededRunWarning)
        warnings.showwarning = show
        yield


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
