"""A raw table read whole into memory, for the commands that draft a schema from it.

The kind of each column is its dtype, which for a CSV file pandas guesses from the text: the
drafting assumes those guesses are public (see :mod:`fastmwem.data.schema.draft`). Whole
numbers stay whole numbers even with empty cells (a nullable ``Int64`` column, not floats),
booleans and integers without empty cells get numpy's dtypes, which hold no missing value,
and text columns whose every cell is an ISO 8601 date (``2020-01-31``, optionally with a
time) are datetimes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fastmwem.cli import CLIError
from fastmwem.cli._io import read_text_file
from fastmwem.data.io.parquet import is_parquet_path

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_raw_table", "DRAFT_NOTE", "undeclared_text_message"]

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_TIME = re.compile(r"[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")

#: What ``synth`` and ``schema draft`` say about how a schema is drafted.
DRAFT_NOTE = ("column kinds come from the dtypes the reader guessed (treated as public); "
              "number columns get equal-mass bins from private quantiles, text columns the "
              "labels a stability-based histogram keeps (others become 'other'), and every "
              "column whose dtype can hold a gap a missing code")


def read_raw_table(path: str, flag: str = "INPUT", *, dates: bool = True
                   ) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The table at ``path`` (CSV, or Parquet by extension), with nullable dtypes narrowed,
    and the columns that held dates without a time (written back as dates). ``dates=False``
    leaves ISO dates as text (as ``synth --schema`` reads a CSV file).

    Raises:
        CLIError: an empty table, or columns without names.
    """
    import pandas as pd

    def read(p: str) -> pd.DataFrame:
        if is_parquet_path(p):
            return pd.read_parquet(p)
        return pd.read_csv(p, dtype_backend="numpy_nullable")

    frame = read_text_file(read, path, flag)
    if len(frame) == 0 or len(frame.columns) == 0:
        raise CLIError(f"{flag} {path!r} holds no data rows")
    unnamed = [str(c) for c in frame.columns if str(c).startswith("Unnamed: ")]
    if unnamed:
        raise CLIError(f"{flag} {path!r}: columns {unnamed} have no name in the header")
    frame.columns = [str(c) for c in frame.columns]
    date_columns = []
    for name in frame.columns:
        column = frame[name]
        if str(column.dtype) in ("Int64", "boolean") and not column.isna().any():
            frame[name] = column.astype("int64" if str(column.dtype) == "Int64" else "bool")
        elif dates and pd.api.types.is_string_dtype(column.dtype) and not is_parquet_path(path):
            stamps, date_only = _iso_dates(column)
            if stamps is not None:
                frame[name] = stamps
                if date_only:
                    date_columns.append(name)
    return frame, tuple(date_columns)


def _iso_dates(column: pd.Series) -> tuple[pd.Series | None, bool]:
    """The column as datetimes if every cell is an ISO 8601 date (and whether none has a time)."""
    import pandas as pd

    text = column.dropna().astype(str)
    if text.empty or not text.str.fullmatch(_ISO_DATE.pattern + f"({_ISO_TIME.pattern})?").all():
        return None, False
    try:
        stamps = pd.to_datetime(column, format="ISO8601")
    except (TypeError, ValueError):
        return None, False
    return stamps, bool(text.str.fullmatch(_ISO_DATE.pattern).all())


def undeclared_text_message(columns: tuple[str, ...]) -> str:
    """The refusal of text columns under pure DP, in command-line words."""
    return (f"columns {list(columns)} hold text: which labels occur cannot be learnt under "
            "pure DP; give --delta D (an (epsilon, delta) guarantee), or declare them in a "
            "--schema file (fastmwem schema draft writes one to edit)")
