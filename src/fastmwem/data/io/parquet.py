"""Parquet files in and out of memory (needs the ``parquet`` extra: pyarrow).

Reading checks the file's column names exactly as :func:`~fastmwem.data.read_csv_columns` checks
a CSV header (missing, extra and repeated columns are errors that name them), then hands the
columns to pandas; the cells are validated by :class:`~fastmwem.data.Dataset` or
:class:`~fastmwem.data.Schema` as for a CSV. Writing goes through pyarrow, with no index column.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import IO, TYPE_CHECKING

from fastmwem.data.io.checks import check_columns, check_extra_columns_option, check_frame
from fastmwem.data.io.files import check_input_file, require_module

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PARQUET_SUFFIXES", "is_parquet_path", "read_parquet_columns", "read_parquet_header",
           "require_pyarrow", "write_parquet"]

#: File name endings read and written as Parquet (anything else is CSV).
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


def is_parquet_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a Parquet file by its extension (case-insensitive)."""
    return os.fspath(path).lower().endswith(PARQUET_SUFFIXES)


def require_pyarrow() -> ModuleType:
    """``pyarrow.parquet``, or an ``ImportError`` that says which extra to install."""
    return require_module("pyarrow.parquet", "parquet", "reading and writing Parquet files")


def read_parquet_header(path: str | os.PathLike[str], what: str = "Parquet file") -> list[str]:
    """The top-level column names of a Parquet file, repeated names kept."""
    pq = require_pyarrow()
    name = check_input_file(path, what)
    try:
        return list(pq.read_schema(name).names)
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise ValueError(f"{what} {name!r} is not a readable Parquet file "
                         f"({type(exc).__name__})") from None


def read_parquet_columns(
    path: str | os.PathLike[str],
    columns: Sequence[str],
    *,
    extra_columns: str = "error",
    what: str = "Parquet file",
) -> pd.DataFrame:
    """Read ``columns`` of a Parquet file into a DataFrame, in the order given.

    Args:
        path: the file.
        columns: the columns to return; the file must hold each exactly once.
        extra_columns: ``"error"`` (default) refuses other columns; ``"ignore"`` skips them.
        what: how messages name the file.

    Raises:
        ImportError: pyarrow is not installed (the message names the extra).
        FileNotFoundError, IsADirectoryError: no such file, or a directory.
        ValueError: not Parquet, or missing/extra/repeated columns.
    """
    mode = check_extra_columns_option(extra_columns)
    name = os.fspath(path)
    header = read_parquet_header(name, what)
    check_columns(header, columns, mode, f"{what} {name!r}")
    pq = require_pyarrow()
    try:
        table = pq.read_table(name, columns=list(columns))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{what} {name!r} cannot be read ({type(exc).__name__})") from None
    return table.to_pandas()[list(columns)]


def write_parquet(
    frames: pd.DataFrame | Iterable[pd.DataFrame], file: str | os.PathLike[str] | IO[bytes]
) -> None:
    """Write a DataFrame, or consecutive blocks of rows, as one Parquet file (no index).

    Blocks are written one row group at a time, so a table larger than memory can stream
    through; every block must have the first block's columns and types.
    """
    import pandas as pd
    pq = require_pyarrow()
    import pyarrow as pa

    blocks = [frames] if isinstance(frames, pd.DataFrame) else frames
    writer = None
    try:
        for frame in blocks:
            table = pa.Table.from_pandas(check_frame(frame, "frame"), preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(file, table.schema)
            writer.write_table(table.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ValueError("no blocks to write: a Parquet file needs at least one block")
