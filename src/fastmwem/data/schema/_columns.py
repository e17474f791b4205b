"""The column kinds of a schema: :class:`Categorical`, :class:`Numeric` and :class:`Integer`.

Each kind validates its public declaration, encodes a raw column to codes (reporting problems
without quoting cell values), decodes codes back, and writes itself as a JSON-ready dict.

Every kind takes ``missing=True`` to declare that the column may have gaps (NaN, None,
``pd.NA``, ``NaT`` or an empty CSV cell): they get one more code, the last, and decode back to
the column's missing value (NaN; ``pd.NA`` in a nullable ``Int64`` column for
:class:`Integer`). Without the declaration a gap is an error whose message names the column and
the flag only: how many cells are missing, and where, is private.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

from fastmwem.data.io.checks import describe, parse_numbers
from fastmwem.data.schema._values import (
    MAX_EXACT_INT,
    Label,
    check_flag,
    check_label,
    check_name,
    check_real,
    check_size,
    check_whole,
    datetime_seconds,
    json_number,
)

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Categorical:
    """A column of labels from a public list; code ``i`` is ``labels[i]``.

    Args:
        name: column name.
        categories: the declared labels (strings or numbers), unique, in code order.
        other: optional catch-all label. Values that are not declared are encoded as ``other``
            (appended as the last code when it is not already a category). Without ``other``
            they are an error.
        missing: whether the column may have missing cells; they get the last code and decode
            to NaN. Without it a missing cell is an error (``other`` does not catch it).

    A cell matches a label when it equals it (``1 == 1.0``) or when its text equals the label's
    text (``"1"`` matches ``1``), so that labels declared as numbers match CSV text.

    >>> c = Categorical("sex", ["F", "M"], other="?")
    >>> c.labels, c.size
    (('F', 'M', '?'), 3)
    >>> Categorical("sex", ["F", "M"], missing=True).size
    3
    """

    name: str
    categories: tuple[Label, ...]
    other: Label | None = None
    missing: bool = False

    def __init__(self, name: str, categories: Iterable[Label], other: Label | None = None,
                 *, missing: bool = False):
        name = check_name(name)
        if isinstance(categories, (str, bytes)):
            raise TypeError(f"categories of {name!r} must be a list of labels, not a string")
        cats = tuple(check_label(c, f"category of {name!r}") for c in categories)
        if not cats:
            raise ValueError(f"categories of {name!r} must not be empty")
        texts = [str(c) for c in cats]
        dup = sorted({t for t in texts if texts.count(t) > 1})
        if dup or len(set(cats)) != len(cats):
            raise ValueError(f"categories of {name!r} must be unique (also as text), repeated: {dup}")
        oth = None if other is None else check_label(other, f"other of {name!r}")
        if oth is not None and oth not in cats and str(oth) in texts:
            raise ValueError(f"other of {name!r} ({oth!r}) clashes with a category's text")
        gaps = check_flag(missing, f"missing of {name!r}")
        check_size(len(cats) + (oth is not None and oth not in cats) + gaps,
                   f"categories of {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "other", oth)
        object.__setattr__(self, "missing", gaps)

    @property
    def labels(self) -> tuple[Label, ...]:
        """Every label in code order (``other`` last when it is not a declared category)."""
        if self.other is not None and self.other not in self.categories:
            return (*self.categories, self.other)
        return self.categories

    @property
    def size(self) -> int:
        """Number of codes: the labels, and one for missing cells when declared."""
        return len(self.labels) + self.missing

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
            if self.missing:
                codes[missing] = self.size - 1
            else:
                problems.append(undeclared_missing(self.name))
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
        table[:] = [*self.labels, *([np.nan] if self.missing else [])]
        return pd.Series(table[codes], name=self.name).infer_objects()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": "categorical",
                                  "categories": list(self.categories)}
        if self.other is not None:
            out["other"] = self.other
        if self.missing:
            out["missing"] = True
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
            so it costs no privacy.
        missing: whether the column may have missing cells (NaN, empty): they get the last
            code and decode to NaN. Without it they are an error.

    Decoding maps a code to its bin's midpoint, or (``numeric="uniform"``) to a uniform draw
    inside the bin. A datetime column encodes as its seconds since 1970-01-01 UTC (bounds and
    edges in seconds too), and decodes to those seconds.

    >>> Numeric("age", 0, 100, bins=4).edges
    (0.0, 25.0, 50.0, 75.0, 100.0)
    """

    name: str
    edges: tuple[float, ...]
    clip: bool = False
    equal_width: bool = True
    missing: bool = False

    def __init__(
        self,
        name: str,
        lower: float | None = None,
        upper: float | None = None,
        *,
        bins: int | None = None,
        edges: Sequence[float] | None = None,
        clip: bool = False,
        missing: bool = False,
    ):
        name = check_name(name)
        gaps = check_flag(missing, f"missing of {name!r}")
        if (bins is None) == (edges is None):
            raise ValueError(f"numeric column {name!r} needs exactly one of bins= or edges=")
        if not isinstance(clip, (bool, np.bool_)):
            raise TypeError(f"clip of {name!r} must be True or False, got {clip!r}")
        if bins is not None:
            if lower is None or upper is None:
                raise ValueError(f"numeric column {name!r} with bins= needs lower and upper")
            lo = check_real(lower, f"lower of {name!r}")
            hi = check_real(upper, f"upper of {name!r}")
            if not lo < hi:
                raise ValueError(f"numeric column {name!r} needs lower < upper, got {lo}, {hi}")
            k = check_whole(bins, f"bins of {name!r}")
            if k < 1:
                raise ValueError(f"bins of {name!r} must be >= 1, got {k}")
            check_size(k + gaps, f"bins of {name!r}")
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
            edge_tuple = tuple(check_real(e, f"edges of {name!r}") for e in edges)
            if len(edge_tuple) < 2:
                raise ValueError(f"edges of {name!r} need at least 2 values, got {len(edge_tuple)}")
            check_size(len(edge_tuple) - 1 + gaps, f"edges of {name!r}")
            if any(b <= a for a, b in zip(edge_tuple, edge_tuple[1:])):
                raise ValueError(f"edges of {name!r} must be strictly increasing, got {list(edge_tuple)}")
            for bound, value, i in (("lower", lower, 0), ("upper", upper, -1)):
                if value is not None and check_real(value, f"{bound} of {name!r}") != edge_tuple[i]:
                    raise ValueError(
                        f"{bound} of {name!r} ({value}) differs from its edges ({edge_tuple[i]})"
                    )
            equal = False
        _check_bin_widths(name, np.asarray(edge_tuple))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "edges", edge_tuple)
        object.__setattr__(self, "clip", bool(clip))
        object.__setattr__(self, "equal_width", equal)
        object.__setattr__(self, "missing", gaps)

    @property
    def lower(self) -> float:
        return self.edges[0]

    @property
    def upper(self) -> float:
        return self.edges[-1]

    @property
    def bins(self) -> int:
        """Number of bins."""
        return len(self.edges) - 1

    @property
    def size(self) -> int:
        """Number of codes: the bins, and one for missing cells when declared."""
        return self.bins + self.missing

    def midpoints(self) -> np.ndarray:
        """The midpoint of every bin (not of the missing code)."""
        return _midpoints(np.asarray(self.edges))

    def encode(self, values: pd.Series) -> tuple[np.ndarray, list[str]]:
        x, problems, gaps = _numbers(values, self.name, self.missing)
        if problems:
            return np.zeros(len(x), dtype=np.int64), problems
        x = np.where(gaps, self.lower, x)  # any value in range; the code is set below
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
        np.minimum(codes, self.bins - 1, out=codes)  # x == upper belongs to the last bin
        codes[gaps] = self.bins
        return codes.astype(np.int64), problems

    def decode(self, codes: np.ndarray, rng: np.random.Generator | None) -> pd.Series:
        import pandas as pd
        gaps = codes >= self.bins
        inside = np.where(gaps, 0, codes)
        if rng is None:
            x = self.midpoints()[inside]
        else:
            e = np.asarray(self.edges)
            lo, hi = e[inside], e[inside + 1]
            x = lo + rng.random(codes.shape[0]) * (hi - lo)
            # rounding can land exactly on the open right edge; keep the draw inside its bin
            x = np.maximum(np.where(x < hi, x, np.nextafter(hi, lo)), lo)
        return pd.Series(np.where(gaps, np.nan, x), name=self.name)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": "numeric"}
        if self.equal_width:
            out.update(lower=json_number(self.lower), upper=json_number(self.upper), bins=self.bins)
        else:
            out["edges"] = [json_number(e) for e in self.edges]
        if self.clip:
            out["clip"] = True
        if self.missing:
            out["missing"] = True
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
    """A column of whole numbers ``lower .. upper``: one code per value, or integer bins.

    Without ``edges`` value ``v`` has code ``v - lower``. With ``edges`` (strictly increasing
    whole numbers) bin ``i`` holds ``edges[i] <= v < edges[i+1]``, so ``lower = edges[0]`` and
    ``upper = edges[-1] - 1`` (``lower``/``upper`` may be omitted, and must match if given).

    Cells such as ``3.0`` are accepted, ``3.5`` is an error. ``clip=True`` maps values outside
    the bounds to the nearest bound (a data-independent map); otherwise they are an error.
    ``missing=True`` gives missing cells the last code; they decode to ``pd.NA`` in a nullable
    ``Int64`` column (without it they are an error, and the column decodes to ``int64``).
    Decoding returns the integer value; a bin of several integers decodes to its middle one
    (rounded down), or with ``numeric="uniform"`` to a uniform draw among its integers. The
    bounds lie within ``+-(2**53 - 1)``, where floats hold every whole number exactly.

    >>> Integer("kids", 0, 5).size
    6
    >>> Integer("income", edges=[0, 10, 100, 1000], missing=True).size
    4
    """

    name: str
    lower: int
    upper: int
    clip: bool = False
    edges: tuple[int, ...] | None = None
    missing: bool = False

    def __init__(self, name: str, lower: int | None = None, upper: int | None = None,
                 clip: bool = False, *, edges: Sequence[int] | None = None,
                 missing: bool = False):
        name = check_name(name)
        cuts = None if edges is None else _integer_edges(name, edges, lower, upper)
        if cuts is not None:
            lo, hi = cuts[0], cuts[-1] - 1
        elif lower is None or upper is None:
            raise ValueError(f"integer column {name!r} needs lower and upper, or edges")
        else:
            lo = check_whole(lower, f"lower of {name!r}")
            hi = check_whole(upper, f"upper of {name!r}")
        if hi < lo:
            raise ValueError(f"integer column {name!r} needs lower <= upper, got {lo}, {hi}")
        gaps = check_flag(missing, f"missing of {name!r}")
        codes = hi - lo + 1 if cuts is None else len(cuts) - 1
        check_size(codes + gaps, f"integer column {name!r} ({lo}..{hi})")
        if max(-lo, hi) > MAX_EXACT_INT:
            # cells are compared as floats, which hold every whole number only up to 2**53
            raise ValueError(f"integer column {name!r}: lower and upper must lie within "
                             f"+-(2**53 - 1), got {lo}, {hi}")
        check_flag(clip, f"clip of {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "clip", bool(clip))
        object.__setattr__(self, "edges", cuts)
        object.__setattr__(self, "missing", gaps)

    @property
    def bins(self) -> int:
        """Number of codes for values: one per integer, or one per bin with ``edges``."""
        return self.upper - self.lower + 1 if self.edges is None else len(self.edges) - 1

    @property
    def size(self) -> int:
        """Number of codes: the values (or bins), and one for missing cells when declared."""
        return self.bins + self.missing

    def encode(self, values: pd.Series) -> tuple[np.ndarray, list[str]]:
        import pandas as pd
        if pd.api.types.is_integer_dtype(values.dtype) and not values.isna().any():
            x = values.to_numpy().astype(np.float64)
            problems: list[str] = []
            gaps = np.zeros(len(x), dtype=bool)
        else:
            x, problems, gaps = _numbers(values, self.name, self.missing)
        if problems:
            return np.zeros(len(x), dtype=np.int64), problems
        x = np.where(gaps, self.lower, x)  # any value in range; the code is set below
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
        if self.edges is None:
            codes = (x - self.lower).astype(np.int64)
        else:
            codes = np.searchsorted(np.asarray(self.edges, dtype=np.float64), x, side="right") - 1
        codes[gaps] = self.bins
        return codes.astype(np.int64), []

    def decode(self, codes: np.ndarray, rng: np.random.Generator | None) -> pd.Series:
        import pandas as pd
        gaps = codes >= self.bins
        inside = np.where(gaps, 0, codes).astype(np.int64)
        if self.edges is None:
            values = inside + self.lower
        else:
            e = np.asarray(self.edges, dtype=np.int64)
            lo, hi = e[inside], e[inside + 1]  # the bin holds lo .. hi - 1
            if rng is None:
                values = lo + (hi - 1 - lo) // 2
            else:
                values = lo + _uniform_below(rng, hi - lo)
        if not self.missing:
            return pd.Series(values, name=self.name)
        out = pd.array(values, dtype="Int64")
        out[gaps] = pd.NA
        return pd.Series(out, name=self.name)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": "integer"}
        if self.edges is None:
            out.update(lower=self.lower, upper=self.upper)
        else:
            out["edges"] = list(self.edges)
        if self.clip:
            out["clip"] = True
        if self.missing:
            out["missing"] = True
        return out


def _integer_edges(name: str, edges: object, lower: object, upper: object) -> tuple[int, ...]:
    """The bin edges of an :class:`Integer` column, checked (and ``lower``/``upper`` against them)."""
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
        raise TypeError(f"edges of {name!r} must be a list of whole numbers")
    cuts = tuple(check_whole(e, f"edges of {name!r}") for e in edges)
    if len(cuts) < 2:
        raise ValueError(f"edges of {name!r} need at least 2 values, got {len(cuts)}")
    if any(b <= a for a, b in zip(cuts, cuts[1:])):
        raise ValueError(f"edges of {name!r} must be strictly increasing, got {list(cuts)}")
    for bound, value, implied in (("lower", lower, cuts[0]), ("upper", upper, cuts[-1] - 1)):
        if value is not None and check_whole(value, f"{bound} of {name!r}") != implied:
            raise ValueError(f"{bound} of {name!r} ({value}) differs from its edges "
                             f"(bins hold edges[i] <= v < edges[i+1], so {bound} = {implied})")
    return cuts


def _uniform_below(rng: np.random.Generator, width: np.ndarray) -> np.ndarray:
    """A uniform integer in ``[0, width[i])`` for every entry (``width >= 1``)."""
    return rng.integers(0, width) if width.size else np.zeros(0, dtype=np.int64)


#: How a problem names undeclared missing cells, after ``column 'name' has``: neither their
#: number nor their rows (both are private).
UNDECLARED_MISSING = ("missing values (NaN/None/empty cells) but does not declare them: set "
                      "missing=True on its spec (\"missing\": true in schema JSON) to give them "
                      "a code of their own")


def undeclared_missing(name: str) -> str:
    """The problem of a column with missing cells that were not declared."""
    return f"column {name!r} has {UNDECLARED_MISSING}"


def _numbers(values: pd.Series, name: str, declared: bool
             ) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The cells as float64, the problems, and where the missing cells are.

    Missing cells are a problem (named without counts or rows) unless ``declared``; a
    datetime column is read as its seconds since the epoch.
    """
    import pandas as pd
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        values = datetime_seconds(values)
    x, gaps, problems = parse_numbers(values, name)
    if gaps.any() and not declared:
        problems.append(undeclared_missing(name))
    return x, problems, gaps


ColumnSpec = Union[Categorical, Numeric, Integer]
SPEC_TYPES = (Categorical, Numeric, Integer)
