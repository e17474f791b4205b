"""Read column specs off a (private) table, for :meth:`Schema.infer <fastmwem.data.schema.Schema.infer>`.

The caller has already required the explicit opt-in and warned: the result leaks privacy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fastmwem.data.schema._columns import Categorical, ColumnSpec, Integer, Numeric
from fastmwem.data.schema._values import check_label, datetime_seconds

if TYPE_CHECKING:
    import pandas as pd


def infer_categorical(name: str, col: pd.Series, gaps: bool = False) -> Categorical:
    import pandas as pd
    values = pd.unique(col.to_numpy(dtype=object))
    try:
        labels = sorted((check_label(v, f"value of {name!r}") for v in values),
                        key=lambda v: (type(v).__name__, v))
        return Categorical(name, labels, missing=gaps)
    except (TypeError, ValueError):
        # the values are private: say what kind of value is wrong, never which one
        raise ValueError(
            f"column {name!r} cannot be a categorical column: it holds an empty string, a "
            "non-finite number, a value that is neither text nor a number, or two values with "
            "the same text (such as 1 and '1'); declare the schema instead"
        ) from None


def infer_specs(df: pd.DataFrame, bins: int) -> list[ColumnSpec]:
    """One spec per column of ``df`` (non-empty; ``bins >= 1``), by the rules of ``Schema.infer``."""
    import pandas as pd
    specs: list[ColumnSpec] = []
    empty = [str(c) for c in df.columns if df[c].isna().all()]
    if empty:
        raise ValueError(f"columns {empty} hold only missing values: nothing to infer")
    for name in df.columns:
        gaps = bool(df[name].isna().any())
        col = df[name].dropna()
        dtype = col.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):  # as Numeric encodes it: epoch seconds
            col, dtype = datetime_seconds(col), np.dtype(np.float64)
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            x = col.to_numpy(dtype=np.float64)
            finite = x[np.isfinite(x)]
            if finite.size == 0:
                raise ValueError(f"column {name!r} holds no finite values: nothing to infer")
            lo, hi = float(finite.min()), float(finite.max())
            whole = bool(np.all(finite == np.floor(finite)))
            if whole and hi - lo + 1 <= bins:
                specs.append(Integer(name, int(lo), int(hi), missing=gaps))
            else:
                specs.append(Numeric(name, lo, hi if hi > lo else lo + 1.0, bins=bins,
                                     missing=gaps))
        else:
            specs.append(infer_categorical(name, col, gaps))
    return specs
