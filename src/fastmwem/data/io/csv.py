"""CSV files the library writes and reads back exactly, and refuses when they are malformed.

Reading (:func:`read_csv_columns`): the header must name each column once; every data row must
have no more fields than the header (a row with extra fields is an error, never truncated); rows
with fewer fields read as missing cells; blank lines are skipped; only empty cells are missing.

Writing (:func:`write_csv`): text is quoted where a minimal quote is needed (commas, quotes,
newlines); when any text cell holds a carriage return or only whitespace (which a minimal
quote would leave bare, and a reader would split or skip) every text cell is quoted. Reading the
file back with :func:`read_csv_columns` gives exactly the written text. Cells are never changed:
text that a spreadsheet would run as a formula is written as is, with a
:class:`~fastmwem.data.SpreadsheetFormulaWarning`.
"""

from __future__ import annotations

import csv
import os
import re
import warnings
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import numpy as np

from fastmwem.data.io.checks import check_columns, check_extra_columns_option, check_frame
from fastmwem.data.io.files import check_input_file, not_utf8_error
from fastmwem.warnings import SpreadsheetFormulaWarning

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMULA_PREFIXES", "read_csv_columns", "read_csv_header", "write_csv"]

#: Leading characters that make a spreadsheet treat a cell as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def read_csv_header(path: str | os.PathLike[str], what: str = "CSV file") -> list[str]:
    """The raw header of a CSV file (duplicates kept, unlike pandas; a UTF-8 BOM is skipped)."""
    name = check_input_file(path, what)
    try:
        with open(name, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
    except UnicodeDecodeError:
        raise not_utf8_error(name, what) from None
    except csv.Error as exc:
        raise ValueError(f"{what} {name!r} is malformed: {exc}") from None
    if not header:
        raise ValueError(f"{what} {name!r} is empty: it has no header row")
    return header


def read_csv_columns(
    path: str | os.PathLike[str],
    columns: Sequence[str],
    *,
    extra_columns: str = "error",
    text: bool = True,
    what: str = "CSV file",
) -> pd.DataFrame:
    """Read ``columns`` of a CSV file with a header row, in the order given.

    Args:
        path: the file (UTF-8; an optional BOM is skipped).
        columns: the columns to return; the header must name each exactly once.
        extra_columns: ``"error"`` (default) refuses other columns; ``"ignore"`` drops them.
        text: ``True`` (default) keeps every cell as text (``str``), so ``"NA"`` or ``"007"``
            are ordinary values; ``False`` lets pandas infer number columns.
        what: how messages name the file.

    Returns:
        A DataFrame, possibly with no rows; empty cells are NaN.

    Raises:
        FileNotFoundError, IsADirectoryError: no such file, or a directory.
        ValueError: not UTF-8 (the message gives the byte offset and line), no header,
            missing/extra/repeated columns, or a row with more fields than the header.
    """
    mode = check_extra_columns_option(extra_columns)
    name = os.fspath(path)
    context = f"{what} {name!r}"
    header = read_csv_header(name, what)
    check_columns(header, columns, mode, context)
    body = _read_body(name, len(header), text, what)
    body.columns = header
    return body[list(columns)]


def _read_body(path: str, width: int, text: bool, what: str) -> pd.DataFrame:
    import pandas as pd
    context = f"{what} {path!r}"
    try:
        try:
            body = _parse(path, text, None)
        except pd.errors.ParserError as exc:
            found = _FIELDS.search(str(exc))
            if found is None or int(found.group(1)) >= width:
                raise
            # pandas took the width of a short first data row for every row: read again with
            # the header's width, so that only rows longer than the header are errors
            body = _parse(path, text, list(range(width)))
    except pd.errors.EmptyDataError:  # a header and nothing else
        body = pd.DataFrame(index=pd.RangeIndex(0))
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        found = _FIELDS.search(str(exc))
        reason = (str(exc).strip().splitlines()[0] if found is None else
                  f"line {found.group(2)} has {found.group(3)} fields but the header has {width}")
        raise ValueError(f"{context} is malformed: {reason}") from None
    except UnicodeDecodeError:
        raise not_utf8_error(path, what) from None
    if body.shape[1] > width:
        extra = body.iloc[:, width:].notna().any(axis=1).to_numpy()
        rows = [int(i) for i in np.flatnonzero(extra)[:5]] or [0]
        raise ValueError(
            f"{context} is malformed: data rows {rows} have more than the header's {width} "
            "fields (a trailing comma counts; rows are 0-based data-row positions)"
        )
    for j in range(body.shape[1], width):  # short rows: the missing cells are empty
        body[j] = np.nan
    return body


def _parse(path: str, text: bool, names: list[int] | None) -> pd.DataFrame:
    # No header and no usecols: with either, pandas silently drops a row's extra fields (or
    # turns them into an index); reading every field by position lets the widths be checked.
    import pandas as pd
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)  # "loss of data" is an error
        return pd.read_csv(
            path, header=None, skiprows=1, names=names, index_col=False,
            dtype=object if text else None, keep_default_na=False, na_values=[""],
            encoding="utf-8-sig",
        )


def write_csv(frame: pd.DataFrame, file: str | os.PathLike[str] | IO[str], *,
              header: bool = True) -> None:
    """Write ``frame`` (header, no index) so that :func:`read_csv_columns` reads it back exactly.

    Warns with :class:`~fastmwem.data.SpreadsheetFormulaWarning` (once, naming the columns, not
    the values) when text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return and
    is not a plain number: a spreadsheet may run such a cell as a formula. The cell is written
    unchanged, so the tool reads back what it wrote; open such a file as text, or sanitise it,
    before opening it in a spreadsheet.

    Args:
        frame: the table; column labels must be strings.
        file: a path or an open text stream (opened with ``newline=""`` for exact bytes).
        header: write the header line (``False`` appends rows to a file already started).
    """
    check_frame(frame, "frame")
    texts = {c: _distinct_text(frame[c]) for c in frame.columns}
    risky = [c for c in frame.columns if _looks_like_formula(c)
             or any(_looks_like_formula(v) for v in texts[c])]
    if risky:
        warnings.warn(
            f"columns {risky} hold text starting with '=', '+', '-', '@', a tab or a carriage "
            "return, which a spreadsheet may run as a formula; the CSV keeps it unchanged (open "
            "it as text, or sanitise it, before opening it in a spreadsheet)",
            SpreadsheetFormulaWarning,
            stacklevel=2,
        )
    quote_all = bool(frame.columns.size) and str(frame.columns[0]).startswith("\ufeff")
    quote_all = quote_all or any(
        _needs_quotes(v) for c in frame.columns for v in (c, *texts[c])
    )
    frame.to_csv(file, index=False, header=header, lineterminator="\n",
                 quoting=csv.QUOTE_NONNUMERIC if quote_all else csv.QUOTE_MINIMAL)


def _distinct_text(column: pd.Series) -> list[str]:
    import pandas as pd
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return []
    # hashing the cells is vectorised; the per-value checks then run on distinct values only
    return [v for v in pd.unique(column.to_numpy(dtype=object)) if isinstance(v, str)]


def _needs_quotes(value: str) -> bool:
    return "\r" in value or not value.strip()


def _looks_like_formula(value: str) -> bool:
    if not value.startswith(FORMULA_PREFIXES):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return value[0] in "\t\r"  # " 5"-like numbers are safe, a leading tab/CR never is
