"""The column kinds of a schema: :class:`Categorical`, :class:`Numeric` and :class:`Integer`.

Each kind validates its public declaration, encodes a raw column to codes (reporting problems
without quoting cell values), decodes codes back, and writes itself as a JSON-ready dict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

from fastmwem.data.io.checks import describe, to_numbers
from fastmwem.data.schema._values import (
    MAX_EXACT_INT,
    Label,
    check_label,
    check_name,
    check_real,
    check_size,
    check_whole,
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
        check_size(len(cats) + (oth is not None and oth not in cats), f"categories of {name!r}")
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
        name = check_name(name)
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
            check_size(k, f"bins of {name!r}")
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
            check_size(len(edge_tuple) - 1, f"edges of {name!r}")
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
            out.update(lower=json_number(self.lower), upper=json_number(self.upper), bins=self.size)
        else:
            out["edges"] = [json_number(e) for e in self.edges]
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
        name = check_name(name)
        lo = check_whole(lower, f"lower of {name!r}")
        hi = check_whole(upper, f"upper of {name!r}")
        if hi < lo:
            raise ValueError(f"integer column {name!r} needs lower <= upper, got {lo}, {hi}")
        check_size(hi - lo + 1, f"integer column {name!r} ({lo}..{hi})")
        if max(-lo, hi) > MAX_EXACT_INT:
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
SPEC_TYPES = (Categorical, Numeric, Integer)
