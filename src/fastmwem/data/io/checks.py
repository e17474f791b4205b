"""Shared helpers that turn bad cells into one readable error message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: How many offending rows (and problem columns) an error message lists.
MAX_LISTED = 5

EXTRA_COLUMNS_CHOICES = ("error", "ignore")


def first_rows(mask: np.ndarray, limit: int = MAX_LISTED) -> list[int]:
    """0-based positions of the first ``limit`` True entries of a boolean vector."""
    return [int(i) for i in np.flatnonzero(mask)[:limit]]


def describe(mask: np.ndarray, column: str, what: str) -> str:
    """``"column 'age' has 3 <what>, first rows [5, 17, 40]"``."""
    count = int(np.count_nonzero(mask))
    return f"column {column!r} has {count} {what}, first rows {first_rows(mask)}"


def raise_problems(problems: Sequence[str], context: str = "") -> None:
    """Raise one ``ValueError`` listing the first problems (no-op when there are none)."""
    if not problems:
        return
    shown = list(problems[:MAX_LISTED])
    more = len(problems) - len(shown)
    if more > 0:
        shown.append(f"... and {more} more column(s) with problems")
    prefix = f"{context}: " if context else ""
    rows = " (rows are 0-based data-row positions)" if any("first rows" in p for p in shown) else ""
    raise ValueError(prefix + "; ".join(shown) + rows)


def check_extra_columns_option(extra_columns: object) -> str:
    if extra_columns not in EXTRA_COLUMNS_CHOICES:
        raise ValueError(
            f"extra_columns must be one of {list(EXTRA_COLUMNS_CHOICES)}, got {extra_columns!r}"
        )
    return str(extra_columns)


def check_columns(
    present: Sequence[object], required: Sequence[str], extra_columns: str, context: str
) -> None:
    """Check that ``present`` holds every required name once, and (by default) nothing else."""
    names = [str(c) for c in present]
    problems = []
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        problems.append(f"repeated columns {dup}")
    missing = [c for c in required if c not in names]
    if missing:
        problems.append(f"missing columns {missing}")
    if extra_columns == "error":
        wanted = set(required)
        extra = [c for c in names if c not in wanted]
        if extra:
            problems.append(
                f"unexpected columns {extra} (pass extra_columns='ignore' to drop them)"
            )
    if problems:
        raise ValueError(f"{context}: " + "; ".join(problems))


def check_frame(df: object, name: str = "df") -> pd.DataFrame:
    import pandas as pd
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    for c in df.columns:
        if not isinstance(c, str):
            raise TypeError(f"{name} column labels must be strings, got {c!r}")
    return df


def to_numbers(values: pd.Series, column: str) -> tuple[np.ndarray, list[str]]:
    """Parse a column into float64; return the array and problems (missing / non-numeric)."""
    out, missing, problems = parse_numbers(values, column)
    if missing.any():
        problems.append(describe(missing, column, "missing (NaN/empty) values"))
    return out, problems


def parse_numbers(values: pd.Series, column: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Parse a column into float64: the array, where cells are missing (NaN there), and the
    problems other than missing cells (booleans, non-numeric text)."""
    import pandas as pd
    problems: list[str] = []
    if pd.api.types.is_bool_dtype(values.dtype):
        problems.append(f"column {column!r} holds booleans, not numbers")
        return np.zeros(len(values)), np.zeros(len(values), dtype=bool), problems
    if pd.api.types.is_numeric_dtype(values.dtype):
        out = values.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.isnan(out)
    else:
        missing = values.isna().to_numpy()
        text = values.astype(object).where(~missing, None)
        parsed = pd.to_numeric(text, errors="coerce")
        out = np.asarray(parsed, dtype=np.float64)
        bad = np.isnan(out) & ~missing
        # the literal text "nan" parses to NaN: count it as missing, not as non-numeric
        if bad.any():
            is_nan_word = text[bad].astype(str).str.strip().str.lower().isin(["nan", "+nan", "-nan"])
            idx = np.flatnonzero(bad)[is_nan_word.to_numpy()]
            missing = missing.copy()
            missing[idx] = True
            bad[idx] = False
        if bad.any():
            problems.append(describe(bad, column, "non-numeric values"))
    return out, missing, problems
