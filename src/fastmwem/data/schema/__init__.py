"""Encode raw tables into a :class:`Domain` from public declarations, and decode codes back.

A :class:`Schema` is a list of column specifications, each declared from public knowledge
(category lists, numeric bounds and bin edges), never read off the private data:

- :class:`Categorical` maps each declared label to a code (declaration order); values that are
  not declared are an error, or go to a declared ``other`` label.
- :class:`Numeric` cuts ``[lower, upper]`` into bins (``bins`` equal-width bins or explicit
  ``edges``); values outside the bounds are an error, or are clipped with ``clip=True``.
- :class:`Integer` maps the whole numbers ``lower .. upper`` to codes ``0 .. upper - lower``
  (for columns that are already small integer codes or counts).

JSON format (``Schema.to_json`` / ``Schema.from_json``)::

    {"columns": [
      {"name": "sex",    "type": "categorical", "categories": ["F", "M"]},
      {"name": "job",    "type": "categorical", "categories": ["a", "b"], "other": "other"},
      {"name": "age",    "type": "numeric", "lower": 0, "upper": 100, "bins": 10},
      {"name": "income", "type": "numeric", "edges": [0, 1e4, 5e4, 1e6], "clip": true},
      {"name": "kids",   "type": "integer", "lower": 0, "upper": 5}
    ]}

``other`` and ``clip`` are optional (defaults ``null`` and ``false``); unknown keys are errors.

Error messages name the file, the column and the first 0-based data rows of bad cells, never
the cell values themselves (a value can identify a record). Declared labels are public and may be
quoted. The empty string is not a valid label: in a CSV file an empty cell means "missing", and
a blank line (the only cell of a one-column row) is skipped. Every spec has at most
``MAX_DENSE_CELLS`` values (:func:`~fastmwem.data.dense_cell_limit`): a column with more could
never be part of a histogram or marginal, and its bin table alone might not fit in memory.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union, cast

import numpy as np

from fastmwem.data._checks import (
    check_columns,
    check_extra_columns_option,
    check_frame,
    describe,
    raise_problems,
    to_numbers,
)
from fastmwem.data._files import load_json
from fastmwem.data.csvfile import read_csv_columns
from fastmwem.data.dataset import Dataset, codes_array, dense_cell_limit
from fastmwem.data.domain import Domain
from fastmwem.data.warnings import PrivacyLeakWarning
from fastmwem.random import make_rng

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Categorical", "Numeric", "Integer", "ColumnSpec", "Schema"]

Label = Union[str, int, float, bool]


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"column name must be a non-empty string, got {name!r}")
    return name


def _check_label(label: object, what: str) -> Label:
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


def _check_real(value: object, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {type(value).__name__}: {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{what} must be finite, got {x}")
    return x


def _check_whole(value: object, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}: {value!r}")
    return int(value)


#: Largest whole number below which floats are exact (cells are parsed as float64).
_MAX_EXACT_INT = 2**53 - 1


def _check_size(size: int, what: str) -> None:
    """Refuse a column with more values than any dense histogram may have, before allocating."""
    limit = dense_cell_limit()
    if size > limit:
        raise ValueError(
            f"{what} gives {size} values, more than the dense limit MAX_DENSE_CELLS = {limit}: "
            "no histogram or marginal over this column could be built; use fewer bins"
        )


def _number(x: float) -> int | float:
    """Write whole floats as ints in JSON (``0`` rather than ``0.0``)."""
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


@dataclass(frozen=True)
class Categorical:
    """A column of labels from a public list; code ``i`` is ``labels[i]``.

    Args:
        name: column name.
        categories: the declared labels (strings or numbers), unique, in code order.
        other: optional catch-all label. Values that are not declared are encoded as ``other``
            (appended as the last code when it is not already a category). Without ``other``
            they are an error. Missing cells are an error either way.

    A cell matches a label when it equals it (``1 == 1.0``) or when its text equals the label's
    text (``"1"`` matches ``1``), so that labels declared as numbers match CSV text.

    >>> c = Categorical("sex", ["F", "M"], other="?")
    >>> c.labels, c.size
    (('F', 'M', '?'), 3)
    """

    name: str
    categories: tuple[Label, ...]
    other: Label | None = None

    def __init__(self, name: str, categories: Iterable[Label], other: Label | None = None):
        name = _check_name(name)
        if isinstance(categories, (str, bytes)):
            raise TypeError(f"categories of {name!r} must be a list of labels, not a string")
        cats = tuple(_check_label(c, f"category of {name!r}") for c in categories)
        if not cats:
            raise ValueError(f"categories of {name!r} must not be empty")
        texts = [str(c) for c in cats]
        dup = sorted({t for t in texts if texts.count(t) > 1})
        if dup or len(set(cats)) != len(cats):
            raise ValueError(f"categories of {name!r} must be unique (also as text), repeated: {dup}")
        oth = None if other is None else _check_label(other, f"other of {name!r}")
        if oth is not None and oth not in cats and str(oth) in texts:
            raise ValueError(f"other of {name!r} ({oth!r}) clashes with a category's text")
        _check_size(len(cats) + (oth is not None and oth not in cats), f"categories of {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "other", oth)

    @property
    def labels(self) -> tuple[Label, ...]:
        """Every label in code order (``other`` last when it is not a declared category)."""
        if self.other is not None and self.other not in self.categories:
            return (*self.categories, self.other)
        return self.categories

    @property
    def size(self) -> int:
        return len(self.labels)

    def encode(self, values: pd.Series) -> tuple[np.ndarray, list[str]]:
        """Codes for ``values`` and a list of problems (empty when all cells are valid)."""
        import pandas as pd
        labels = self.labels
        obj = values.to_numpy(dtype=object)
        missing = pd.isna(obj)
        codes = pd.Index(list(labels), dtype=object).get_indexer(obj)
        unmatched = (codes < 0) & ~missing
        if unmatched.any():
            as_text = np.array([str(v) for v in obj[unmatched]], dtype=object)
            by_text = pd.Index([str(lab) for lab in labels], dtype=object).get_indexer(as_text)
            codes[np.flatnonzero(unmatched)] = by_text
            unmatched = (codes < 0) & ~missing
        problems = []
        if missing.any():
            problems.append(describe(missing, self.name, "missing (NaN/empty) values"))
        if unmatched.any():
            if self.other is not None:
                codes[unmatched] = labels.index(self.other)
            else:
                problems.append(
                    describe(unmatched, self.name, "values that are not declared categories")
                    + " (declare them or set other=)"
                )
        return codes.astype(np.int64), problems

    def decode(self, codes: np.ndarray, rng: np.random.Generator | None) -> pd.Series:
        import pandas as pd
        table = np.empty(self.size, dtype=object)
        table[:] = list(self.labels)
        return pd.Series(table[codes], name=self.name).infer_objects()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": "categorical",
                                  "categories": list(self.categories)}
        if self.other is not None:
            out["other"] = self.other
        return out


@dataclass(frozen=True)
class Numeric:
    """A real-valued column cut into bins over public bounds ``[lower, upper]``.

    Give either ``bins`` (equal-width bins between ``lower`` and ``upper``) or ``edges`` (strictly
    increasing; ``lower``/``upper`` default to the first/last edge and must match them if given).
    Bin ``i`` is ``[edges[i], edges[i+1])``; the last bin also holds ``upper``.

    Args:
        name: column name.
        lower, upper: public bounds (finite, ``lower < upper``).
        bins: number of equal-width bins (>= 1).
        edges: explicit bin edges.
        clip: values below ``lower`` / above ``upper`` (including +-inf) go to the first / last bin.
            The default ``False`` makes them an error. Clipping is a fixed, data-independent map,
            so it costs no privacy. Missing values (NaN, empty) are always an error.

    Decoding maps a code to its bin's midpoint, or (``numeric="uniform"``) to a uniform draw
    inside the bin.

    >>> Numeric("age", 0, 100, bins=4).edges
    (0.0, 25.0, 50.0, 75.0, 100.0)
    """

    name: str
    edges: tuple[float, ...]
    clip: bool = False
    equal_width: bool = True

    def __init__(
        self,
        name: str,
        lower: float | None = None,
        upper: float | None = None,
        *,
        bins: int | None = None,
        edges: Sequence[float] | None = None,
        clip: bool = False,
    ):
        name = _check_name(name)
        if (bins is None) == (edges is None):
            raise ValueError(f"numeric column {name!r} needs exactly one of bins= or edges=")
        if not isinstance(clip, (bool, np.bool_)):
            raise TypeError(f"clip of {name!r} must be True or False, got {clip!r}")
        if bins is not None:
            if lower is None or upper is None:
                raise ValueError(f"numeric column {name!r} with bins= needs lower and upper")
            lo = _check_real(lower, f"lower of {name!r}")
            hi = _check_real(upper, f"upper of {name!r}")
            if not lo < hi:
                raise ValueError(f"numeric column {name!r} needs lower < upper, got {lo}, {hi}")
            k = _check_whole(bins, f"bins of {name!r}")
            if k < 1:
                raise ValueError(f"bins of {name!r} must be >= 1, got {k}")
            _check_size(k, f"bins of {name!r}")
            if not math.isfinite(hi - lo):
                raise ValueError(
                    f"numeric column {name!r}: upper - lower overflows ({lo}, {hi}); "
                    "narrow the bounds"
                )
            cut = np.linspace(lo, hi, k + 1)
            cut[0], cut[-1] = lo, hi
            edge_tuple = tuple(float(e) for e in cut)
            equal = True
        else:
            if edges is None or isinstance(edges, (str, bytes)):  # (None was refused above)
                raise TypeError(f"edges of {name!r} must be a list of numbers")
            edge_tuple = tuple(_check_real(e, f"edges of {name!r}") for e in edges)
            if len(edge_tuple) < 2:
                raise ValueError(f"edges of {name!r} need at least 2 values, got {len(edge_tuple)}")
            _check_size(len(edge_tuple) - 1, f"edges of {name!r}")
            if any(b <= a for a, b in zip(edge_tuple, edge_tuple[1:])):
                raise ValueError(f"edges of {name!r} must be strictly increasing, got {list(edge_tuple)}")
            for bound, value, i in (("lower", lower, 0), ("upper", upper, -1)):
                if value is not None and _check_real(value, f"{bound} of {name!r}") != edge_tuple[i]:
                    raise ValueError(
                        f"{bound} of {name!r} ({value}) differs from its edges ({edge_tuple[i]})"
                    )
            equal = False
        _check_bin_widths(name, np.asarray(edge_tuple))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "edges", edge_tuple)
        object.__setattr__(self, "clip", bool(clip))
        object.__setattr__(self, "equal_width", equal)

    @property
    def lower(self) -> float:
        return self.edges[0]

    @property
    def upper(self) -> float:
        return self.edges[-1]

    @property
    def size(self) -> int:
        """Number of bins."""
        return len(self.edges) - 1

    def midpoints(self) -> np.ndarray:
        return _midpoints(np.asarray(self.edges))

    def encode(self, values: pd.Series) -> tuple[np.ndarray, list[str]]:
        x, problems = to_numbers(values, self.name)
        if problems:
            return np.zeros(len(x), dtype=np.int64), problems
        outside = (x < self.lower) | (x > self.upper)
        if outside.any():
            if not self.clip:
                problems.append(
                    describe(outside, self.name, f"values outside [{self.lower}, {self.upper}]")
                    + " (widen the bounds or set clip=True)"
                )
                return np.zeros(len(x), dtype=np.int64), problems
            x = np.clip(x, self.lower, self.upper)
        codes = np.searchsorted(np.asarray(self.edges), x, side="right") - 1
        np.minimum(codes, self.size - 1, out=codes)  # x == upper belongs to the last bin
        return codes.astype(np.int64), problems

    def decode(self, codes: np.ndarray, rng: np.random.Generator | None) -> pd.Series:
        import pandas as pd
        if rng is None:
            return pd.Series(self.midpoints()[codes], name=self.name)
        e = np.asarray(self.edges)
        lo, hi = e[codes], e[codes + 1]
        x = lo + rng.random(codes.shape[0]) * (hi - lo)
        # rounding can land exactly on the open right edge; keep the draw inside its own bin
        x = np.where(x < hi, x, np.nextafter(hi, lo))
        return pd.Series(np.maximum(x, lo), name=self.name)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": "numeric"}
        if self.equal_width:
            out.update(lower=_number(self.lower), upper=_number(self.upper), bins=self.size)
        else:
            out["edges"] = [_number(e) for e in self.edges]
        if self.clip:
            out["clip"] = True
        return out


def _midpoints(e: np.ndarray) -> np.ndarray:
    # lower + width / 2 stays finite whenever the width is (lower + upper may overflow)
    return e[:-1] + np.diff(e) / 2


def _check_bin_widths(name: str, e: np.ndarray) -> None:
    """Every bin has a finite width and a midpoint inside it (decode then encode is the identity)."""
    with np.errstate(over="ignore"):
        widths = np.diff(e)
    if not np.all(np.isfinite(widths)):
        raise ValueError(
            f"numeric column {name!r}: a bin is wider than the largest float; narrow the bounds"
        )
    mids = _midpoints(e)
    if not np.all((e[:-1] <= mids) & (mids < e[1:])):
        raise ValueError(
            f"numeric column {name!r}: bins are too narrow for floating point (a bin's midpoint "
            "does not lie inside it); use fewer bins or wider bounds"
        )


@dataclass(frozen=True)
class Integer:
    """A column of whole numbers ``lower .. upper``; value ``v`` has code ``v - lower``.

    Cells such as ``3.0`` are accepted, ``3.5`` is an error. ``clip=True`` maps values outside
    the bounds to the nearest bound (a data-independent map); otherwise they are an error.
    Decoding returns the integer value. The bounds lie within ``+-(2**53 - 1)``, where floats
    hold every whole number exactly.

    >>> Integer("kids", 0, 5).size
    6
    """

    name: str
    lower: int
    upper: int
    clip: bool = False

    def __init__(self, name: str, lower: int, upper: int, clip: bool = False):
        name = _check_name(name)
        lo = _check_whole(lower, f"lower of {name!r}")
        hi = _check_whole(upper, f"upper of {name!r}")
        if hi < lo:
            raise ValueError(f"integer column {name!r} needs lower <= upper, got {lo}, {hi}")
        _check_size(hi - lo + 1, f"integer column {name!r} ({lo}..{hi})")
        if max(-lo, hi) > _MAX_EXACT_INT:
            # cells are compared as floats, which hold every whole number only up to 2**53
            raise ValueError(f"integer column {name!r}: lower and upper must lie within "
                             f"+-(2**53 - 1), got {lo}, {hi}")
        if not isinstance(clip, (bool, np.bool_)):
            raise TypeError(f"clip of {name!r} must be True or False, got {clip!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "clip", bool(clip))

    @property
    def size(self) -> int:
        return self.upper - self.lower + 1

    def encode(self, values: pd.Series) -> tuple[np.ndarray, list[str]]:
        import pandas as pd
        if pd.api.types.is_integer_dtype(values.dtype) and not values.isna().any():
            x = values.to_numpy().astype(np.float64)
            problems: list[str] = []
        else:
            x, problems = to_numbers(values, self.name)
        if problems:
            return np.zeros(len(x), dtype=np.int64), problems
        frac = np.isfinite(x) & (x != np.floor(x))
        if frac.any():
            return np.zeros(len(x), dtype=np.int64), [describe(frac, self.name, "non-integer values")]
        outside = (x < self.lower) | (x > self.upper)
        if outside.any():
            if not self.clip:
                return np.zeros(len(x), dtype=np.int64), [
                    describe(outside, self.name, f"values outside {self.lower}..{self.upper}")
                    + " (widen the bounds or set clip=True)"
                ]
            x = np.clip(x, self.lower, self.upper)
        return (x - self.lower).astype(np.int64), []

    def decode(self, codes: np.ndarray, rng: np.random.Generator | None) -> pd.Series:
        import pandas as pd
        return pd.Series(codes.astype(np.int64) + self.lower, name=self.name)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": "integer",
                                  "lower": self.lower, "upper": self.upper}
        if self.clip:
            out["clip"] = True
        return out


ColumnSpec = Union[Categorical, Numeric, Integer]
_SPEC_TYPES = (Categorical, Numeric, Integer)


def _infer_categorical(name: str, col: pd.Series) -> Categorical:
    import pandas as pd
    values = pd.unique(col.to_numpy(dtype=object))
    try:
        labels = sorted((_check_label(v, f"value of {name!r}") for v in values),
                        key=lambda v: (type(v).__name__, v))
        return Categorical(name, labels)
    except (TypeError, ValueError):
        # the values are private: say what kind of value is wrong, never which one
        raise ValueError(
            f"column {name!r} cannot be a categorical column: it holds an empty string, a "
            "non-finite number, a value that is neither text nor a number, or two values with "
            "the same text (such as 1 and '1'); declare the schema instead"
        ) from None

_KEYS = {
    "categorical": ({"name", "type", "categories"}, {"other"}),
    "numeric": ({"name", "type"}, {"lower", "upper", "bins", "edges", "clip"}),
    "integer": ({"name", "type", "lower", "upper"}, {"clip"}),
}


def _spec_from_dict(raw: object, where: str) -> ColumnSpec:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind not in _KEYS:
        raise ValueError(f"{where} has type {kind!r}; expected one of {sorted(_KEYS)}")
    required, optional = _KEYS[kind]
    missing = sorted(required - set(raw))
    unknown = sorted(set(raw) - required - optional)
    if missing or unknown:
        raise ValueError(
            f"{where} ({kind}): " + "; ".join(
                p for p in (missing and f"missing keys {missing}", unknown and f"unknown keys {unknown}") if p
            )
        )
    try:
        if kind == "categorical":
            return Categorical(raw["name"], raw["categories"], other=raw.get("other"))
        if kind == "numeric":
            return Numeric(raw["name"], raw.get("lower"), raw.get("upper"), bins=raw.get("bins"),
                           edges=raw.get("edges"), clip=raw.get("clip", False))
        return Integer(raw["name"], raw["lower"], raw["upper"], clip=raw.get("clip", False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class Schema:
    """Public column declarations that map a raw table to a :class:`Domain` and back.

    >>> s = Schema([Categorical("sex", ["F", "M"]), Numeric("age", 0, 100, bins=4)])
    >>> s.domain
    Domain(attributes=('sex', 'age'), shape=(2, 4))
    >>> import pandas as pd
    >>> ds = s.encode(pd.DataFrame({"age": [3, 99.5, 100], "sex": ["M", "F", "F"]}))
    >>> ds.records.tolist()
    [[1, 0], [0, 3], [0, 3]]
    >>> s.decode(ds).to_dict("list")
    {'sex': ['M', 'F', 'F'], 'age': [12.5, 87.5, 87.5]}
    """

    columns: tuple[ColumnSpec, ...]

    def __init__(self, columns: Iterable[ColumnSpec]):
        cols = tuple(columns)
        if not cols:
            raise ValueError("a schema needs at least one column")
        for c in cols:
            if not isinstance(c, _SPEC_TYPES):
                raise TypeError(
                    f"schema columns must be Categorical, Numeric or Integer, got {type(c).__name__}"
                )
        names = [c.name for c in cols]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"schema column names must be unique, repeated: {dup}")
        object.__setattr__(self, "columns", cols)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_domain(cls, domain: Domain) -> Schema:
        """A schema for data that is already coded: each attribute an ``Integer(0, size-1)``."""
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
        return cls(Integer(a, 0, s - 1) for a, s in zip(domain.attributes, domain.shape))

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> Schema:
        """Build from the JSON format described in this module's docstring."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"a schema must be a JSON object, got {type(raw).__name__}")
        unknown = sorted(set(raw) - {"columns"})
        if unknown:
            raise ValueError(f"schema has unknown keys {unknown}; expected only 'columns'")
        cols = raw.get("columns")
        if not isinstance(cols, list):
            raise ValueError("schema must have a 'columns' list")
        return cls(_spec_from_dict(c, f"schema column {i}") for i, c in enumerate(cols))

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Schema:
        """Read a schema JSON file (format in this module's docstring)."""
        raw = load_json(path, "schema file")
        try:
            return cls.from_dict(cast("Mapping[str, object]", raw))  # which refuses a non-mapping
        except ValueError as exc:
            raise ValueError(f"schema file {os.fspath(path)!r}: {exc}") from None

    def to_dict(self) -> dict[str, object]:
        return {"columns": [c.to_dict() for c in self.columns]}

    def to_json(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=1)
            fh.write("\n")

    @classmethod
    def infer(
        cls,
        df: pd.DataFrame,
        *,
        allow_private_inference: bool = False,
        bins: int = 10,
    ) -> Schema:
        """Read a schema off the data itself. This leaks privacy and needs an explicit opt-in.

        Category lists and numeric bounds computed from the private data are not protected by
        differential privacy (they reveal, e.g., a rare category's presence or the exact maximum).
        Declare a schema from public knowledge instead whenever possible.

        Rules: boolean and non-numeric columns become :class:`Categorical` over their sorted
        distinct values; whole-number columns spanning at most ``bins`` values become
        :class:`Integer` over ``[min, max]``; other numeric columns become :class:`Numeric` over
        ``[min, max]`` with ``bins`` equal-width bins. Missing cells are ignored here (and are an
        error when encoding).

        Args:
            df: the (private) table.
            allow_private_inference: must be ``True`` to proceed; a
                :class:`PrivacyLeakWarning` is then emitted.
            bins: number of bins for numeric columns.

        Raises:
            ValueError: without the opt-in; for an empty table or an all-missing column.
        """
        import pandas as pd
        if not isinstance(allow_private_inference, (bool, np.bool_)):
            raise TypeError(
                f"allow_private_inference must be True or False, got {allow_private_inference!r}"
            )
        if not allow_private_inference:
            raise ValueError(
                "Schema.infer reads category lists and numeric bounds from the private data, which "
                "leaks privacy (the domain itself reveals which values occur and the exact min/max, "
                "outside any differential-privacy guarantee). Declare the schema from public "
                "knowledge (Schema([...]) or Schema.from_json), or pass "
                "allow_private_inference=True to accept the leak."
            )
        check_frame(df)
        k = _check_whole(bins, "bins")
        if k < 1:
            raise ValueError(f"bins must be >= 1, got {k}")
        if len(df) == 0 or len(df.columns) == 0:
            raise ValueError("df is empty: nothing to infer a schema from")
        warnings.warn(
            "Schema.infer derived categories and bounds from the private data; the resulting "
            "domain is not differentially private",
            PrivacyLeakWarning,
            stacklevel=2,
        )
        specs: list[ColumnSpec] = []
        empty = [str(c) for c in df.columns if df[c].isna().all()]
        if empty:
            raise ValueError(f"columns {empty} hold only missing values: nothing to infer")
        for name in df.columns:
            col = df[name].dropna()
            dtype = col.dtype
            if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
                x = col.to_numpy(dtype=np.float64)
                finite = x[np.isfinite(x)]
                if finite.size == 0:
                    raise ValueError(f"column {name!r} holds no finite values: nothing to infer")
                lo, hi = float(finite.min()), float(finite.max())
                whole = bool(np.all(finite == np.floor(finite)))
                if whole and hi - lo + 1 <= k:
                    specs.append(Integer(name, int(lo), int(hi)))
                else:
                    specs.append(Numeric(name, lo, hi if hi > lo else lo + 1.0, bins=k))
            else:
                specs.append(_infer_categorical(name, col))
        return cls(specs)

    # -- accessors ---------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def domain(self) -> Domain:
        return Domain(self.names, [c.size for c in self.columns])

    def __getitem__(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"no column {name!r} in the schema; it has {list(self.names)}")

    # -- encoding ----------------------------------------------------------------------------
    def encode(self, df: pd.DataFrame, *, extra_columns: str = "error") -> Dataset:
        """Encode a raw table into a :class:`Dataset` over :attr:`domain`.

        Args:
            df: a DataFrame holding every schema column (any order).
            extra_columns: ``"error"`` (default) refuses and names other columns; ``"ignore"``
                drops them.

        Raises:
            ValueError: missing/extra/repeated columns, no rows, missing cells, non-numeric or
                out-of-bounds numbers (without ``clip``), undeclared categories (without
                ``other``). All problems are reported together, naming columns and the first
                0-based rows.
        """
        check_frame(df)
        return self._encode(df, check_extra_columns_option(extra_columns), "df")

    def encode_csv(self, path: str | os.PathLike[str], *, extra_columns: str = "error") -> Dataset:
        """Read a raw CSV (header row required) and encode it; see :meth:`encode`.

        Cells are read as text; only empty cells count as missing (so ``"NA"`` can be a
        category). Numeric cells are parsed as numbers; a categorical cell matches a label whose
        text (``str(label)``) it equals exactly. A row with more fields than the header is an
        error. A table decoded by :meth:`decode` and written with :func:`~fastmwem.data.write_csv`
        encodes back to the same codes.
        """
        mode = check_extra_columns_option(extra_columns)
        context = f"CSV file {os.fspath(path)!r}"
        df = read_csv_columns(path, self.names, extra_columns=mode)
        return self._encode(df, mode, context)

    def encode_parquet(
        self, path: str | os.PathLike[str], *, extra_columns: str = "error"
    ) -> Dataset:
        """Read a raw Parquet file and encode it; see :meth:`encode` (needs pyarrow)."""
        from fastmwem.data.parquetfile import read_parquet_columns

        mode = check_extra_columns_option(extra_columns)
        context = f"Parquet file {os.fspath(path)!r}"
        df = read_parquet_columns(path, self.names, extra_columns=mode)
        return self._encode(df, mode, context)

    def _encode(self, df: pd.DataFrame, mode: str, context: str) -> Dataset:
        check_columns(list(df.columns), self.names, mode, context)
        if len(df) == 0:
            raise ValueError(f"{context}: no data rows; a dataset needs at least one row")
        out = np.empty((len(df), len(self.columns)), dtype=np.int64)
        problems: list[str] = []
        for j, spec in enumerate(self.columns):
            codes, col_problems = spec.encode(df[spec.name])
            problems.extend(col_problems)
            out[:, j] = codes
        raise_problems(problems, context)
        return Dataset._trusted(out, self.domain)

    # -- decoding ----------------------------------------------------------------------------
    def decode(
        self,
        data: Dataset | pd.DataFrame | np.ndarray,
        *,
        numeric: str = "midpoint",
        rng: int | np.random.Generator | None = None,
    ) -> pd.DataFrame:
        """Map integer codes back to raw labels: a DataFrame with the schema's columns.

        Categorical codes become their labels and Integer codes their values. A Numeric code
        becomes its bin's midpoint (``numeric="midpoint"``, deterministic; ``rng`` unused) or a
        uniform draw inside the bin (``numeric="uniform"``, using ``rng`` through
        :func:`~fastmwem.random.make_rng`). Decoding is post-processing of already-private codes
        and costs no privacy.

        Args:
            data: a :class:`Dataset` over :attr:`domain`, or a DataFrame (columns by name) /
                ``(n, d)`` array (schema's column order) of integer codes, validated like a
                ``Dataset`` except that zero rows are allowed (giving an empty frame).
            numeric: ``"midpoint"`` or ``"uniform"``.
            rng: seed or Generator for ``numeric="uniform"``.
        """
        import pandas as pd
        if numeric not in ("midpoint", "uniform"):
            raise ValueError(f"numeric must be 'midpoint' or 'uniform', got {numeric!r}")
        domain = self.domain
        if isinstance(data, Dataset):
            if data.domain != domain:
                raise ValueError(
                    f"the dataset's domain {data.domain} differs from the schema's domain {domain}"
                )
            recs = data.records
        else:
            recs = codes_array(data, domain, allow_empty=True)
        gen = make_rng(rng) if numeric == "uniform" else None
        cols = {spec.name: spec.decode(recs[:, j], gen) for j, spec in enumerate(self.columns)}
        return pd.DataFrame(cols)
