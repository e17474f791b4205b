"""Checks of the public values a column declaration is made of: names, labels, bounds, sizes."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Union

import numpy as np

from fastmwem.data.dataset import dense_cell_limit

if TYPE_CHECKING:
    import pandas as pd

Label = Union[str, int, float, bool]


def check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"column name must be a non-empty string, got {name!r}")
    return name


def check_label(label: object, what: str) -> Label:
    if isinstance(label, (bool, np.bool_)):
        return bool(label)
    if isinstance(label, str):
        if not label:
            raise ValueError(
                f"{what} must not be the empty string: an empty CSV cell means a missing value"
            )
        return label
    if isinstance(label, numbers.Integral):
        return int(label)
    if isinstance(label, numbers.Real):
        x = float(label)
        if not math.isfinite(x):
            raise ValueError(f"{what} must be finite, got {x}")
        return x
    raise TypeError(f"{what} must be a string or a number, got {type(label).__name__}: {label!r}")


def check_flag(value: object, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be True or False, got {value!r}")
    return bool(value)


def datetime_seconds(values: pd.Series) -> pd.Series:
    """A datetime column as float seconds since 1970-01-01 UTC (NaN where it is NaT).

    A time-zone-aware column is converted to UTC first; a naive one is read as UTC.
    """
    import pandas as pd
    if getattr(values.dtype, "tz", None) is not None:
        values = values.dt.tz_convert("UTC").dt.tz_localize(None)
    return (values - pd.Timestamp(0)) / pd.Timedelta(seconds=1)


def check_real(value: object, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {type(value).__name__}: {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{what} must be finite, got {x}")
    return x


def check_whole(value: object, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}: {value!r}")
    return int(value)


#: Largest whole number below which floats are exact (cells are parsed as float64).
MAX_EXACT_INT = 2**53 - 1


def check_size(size: int, what: str) -> None:
    """Refuse a column with more values than any dense histogram may have, before allocating."""
    limit = dense_cell_limit()
    if size > limit:
        raise ValueError(
            f"{what} gives {size} values, more than the dense limit MAX_DENSE_CELLS = {limit}: "
            "no histogram or marginal over this column could be built; use fewer bins"
        )


def json_number(x: float) -> int | float:
    """Write whole floats as ints in JSON (``0`` rather than ``0.0``)."""
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)
