"""Atomic output files: written to a temporary file beside the target, then renamed."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO

import pandas as pd

from fastmwem.data import write_csv

__all__ = ["atomic_open", "write_csv_atomic", "write_json_atomic", "check_output_path"]


def check_output_path(path: str, name: str) -> None:
    """Fail early (before any privacy budget is spent) if ``path`` cannot be written."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError(f"{name}: directory {directory!r} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"{name}: {path!r} is a directory")
    if not os.access(directory, os.W_OK):
        raise ValueError(f"{name}: directory {directory!r} is not writable")


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w") -> Iterator[IO[str]]:
    """Open a temporary file next to ``path``; on success rename it over ``path``.

    If the block raises, the temporary file is removed and ``path`` is left as it was, so a failed
    run never leaves a half-written output.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fastmwem-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode, encoding="utf-8", newline="") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_csv_atomic(frame: pd.DataFrame, path: str) -> None:
    """Write ``frame`` with :func:`fastmwem.data.write_csv`, which the tool reads back exactly."""
    with atomic_open(path) as fh:
        write_csv(frame, fh)


def write_json_atomic(payload: object, path: str) -> None:
    with atomic_open(path) as fh:
        json.dump(payload, fh, indent=2, sort_keys=False)
        fh.write("\n")
