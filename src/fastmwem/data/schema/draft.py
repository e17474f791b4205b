"""Draft a :class:`~fastmwem.data.Schema` from a private table, with differential privacy.

:func:`draft_schema` learns what a schema needs from the data through private mechanisms whose
cost it charges to an accountant before it reads any value:

- **Kinds** come from public metadata only: each column's dtype (and its name, to look up the
  public declarations ``bounds=``, ``categories=`` and ``missing=``). The dtype is *assumed
  public*: for a table read from CSV it was guessed from the values by the reader, so a
  column whose dtype depends on one record (a single text cell in a number column, say) leaks
  that fact. Booleans become ``Categorical([False, True])``; integer dtypes :class:`Integer`
  bins; floats :class:`Numeric` bins; datetimes :class:`Numeric` bins over seconds since the
  epoch; anything else (text, objects, pandas categoricals) :class:`Categorical`.
- **Bin edges** of number and datetime columns are equal-mass quantile cuts found by
  :func:`private_cuts` (the exponential mechanism over a public grid), and the outer bounds are
  extrapolated from them (post-processing).
- **Categories** of other columns come from :func:`stable_categories` (a stability-based
  histogram), which needs ``delta > 0``; under pure DP (or a zCDP budget) they must be declared.
  Labels that are not kept are encoded as an ``other`` label.
- **Missing flags** are set from the dtype, not from the data: every dtype that can hold a
  missing value (floats, datetimes, text, objects, pandas nullable types) gets a missing code,
  whether or not the column has gaps. Learning it would cost budget, and a gap the draft missed
  would make encoding fail after the charge. A column without gaps then has a missing code the
  model learns to be (nearly) empty; declare ``missing={"col": False}`` to drop it.

Budget split: the budget is divided equally among the columns that learn something (declared
and boolean columns cost nothing). A number column spends its share over the levels of
:func:`private_cuts`, one ``BoundedRange`` charge per level; a text column spends its share of
epsilon (and an equal share of delta) in one ``ApproxDP`` charge. Every charge is labelled with
its column in the accountant's ledger, and all of them are made at once, before the data is
read; a refused charge spends nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np

from fastmwem.accounting import Accountant
from fastmwem.data.io.checks import check_frame
from fastmwem.data.schema import Categorical, ColumnSpec, Integer, Numeric, Schema
from fastmwem.data.schema._draft_budget import (
    ColumnDraft,
    draft_budget,
    draft_events,
    float_within,
)
from fastmwem.data.schema._values import (
    MAX_EXACT_INT,
    Label,
    check_label,
    check_real,
    check_whole,
    datetime_seconds,
)
from fastmwem.random import RNGLike, make_rng

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["draft_schema", "plan_columns", "check_columns", "ColumnDraft",
           "UndeclaredCategoriesError", "float_within",
           "private_quantile", "quantile_utilities", "private_cuts", "jittered",
           "edges_from_cuts", "stable_categories",
           "stability_threshold", "FLOAT_GRID", "INTEGER_GRID", "DATETIME_RANGE",
           "BOUNDED_GRID_POINTS", "MAX_CATEGORIES"]

#: The default public grid of number columns: 0 and +-10**(k/128) for 10**-6 .. 10**15
#: (128 points per decade, neighbours 1.8% apart). Values beyond are clipped.
FLOAT_GRID = np.concatenate([-np.logspace(15, -6, 21 * 128 + 1), [0.0],
                             np.logspace(-6, 15, 21 * 128 + 1)])
#: The default grid of integer columns: every quarter in -10**4 .. 10**4 (cuts between and
#: through the integers, whose values :func:`jittered` spreads), then +-10**(k/128) rounded,
#: up to 10**15 (clipped further to the dtype's range).
INTEGER_GRID = np.unique(np.concatenate([
    np.arange(-10**4, 10**4 + 0.25, 0.25),
    *(s * np.round(np.logspace(4, 15, 11 * 128 + 1)) for s in (-1.0, 1.0))]))
#: The default public range of datetime columns (UTC), on a grid of one point per day.
DATETIME_RANGE = ("1900-01-01", "2100-01-01")
#: Points of the grid over a declared ``bounds=`` range (for an integer column, every quarter
#: from ``lower - 1/2`` to ``upper + 1/2`` if there are fewer).
BOUNDED_GRID_POINTS = 2**16 + 1
#: Most categories a text column keeps (those with the largest noisy counts).
MAX_CATEGORIES = 64


class UndeclaredCategoriesError(ValueError):
    """Text columns whose categories cannot be learnt under the budget given (no delta).

    ``columns`` names them (public: column names), so that a caller can say what to declare.
    """

    def __init__(self, message: str, columns: Sequence[str]) -> None:
        super().__init__(message)
        self.columns = tuple(columns)


def plan_columns(df: pd.DataFrame, *, bounds: Mapping[str, Sequence[object]] | None = None,
                 categories: Mapping[str, Sequence[Label]] | None = None,
                 missing: Mapping[str, bool] | None = None) -> list[ColumnDraft]:
    """The draft of every column of ``df`` from its dtype and the public declarations.

    Reads no value of ``df``. ``categories`` makes a column categorical whatever its dtype.

    Raises:
        ValueError: a declaration names a column ``df`` does not have, or does not fit it.
    """
    check_frame(df)
    given_bounds, given_categories = dict(bounds or {}), dict(categories or {})
    given_missing = dict(missing or {})
    for what, given in (("bounds", given_bounds), ("categories", given_categories),
                        ("missing", given_missing)):
        unknown = sorted(set(given) - {str(c) for c in df.columns})
        if unknown:
            raise ValueError(f"{what}= names columns the table does not have: {unknown}")
    out = []
    for name in df.columns:
        dtype = df[name].dtype
        kind = _kind(dtype)
        gaps = given_missing.get(name, _can_hold_missing(dtype))
        if not isinstance(gaps, (bool, np.bool_)):
            raise TypeError(f"missing= of {name!r} must be True or False, got {gaps!r}")
        cats = given_categories.get(name)
        if cats is not None:
            if name in given_bounds:
                raise ValueError(f"column {name!r} has both categories= and bounds=")
            labels = tuple(check_label(c, f"category of {name!r}") for c in cats)
            Categorical(name, labels)  # checks them
            out.append(ColumnDraft(name, "categorical", bool(gaps), labels))
        elif kind in ("bool", "categorical"):
            if name in given_bounds:
                raise ValueError(f"bounds= of {name!r}: it is a {kind} column ({dtype}), "
                                 "not numbers")
            fixed = (False, True) if kind == "bool" else None
            out.append(ColumnDraft(name, kind, bool(gaps), fixed))
        else:
            grid = _grid(name, kind, dtype, given_bounds.get(name))
            out.append(ColumnDraft(name, kind, bool(gaps), None, grid))
    return out


def _kind(dtype: object) -> str:
    import pandas as pd
    types = pd.api.types
    if types.is_bool_dtype(dtype):
        return "bool"
    if types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if types.is_integer_dtype(dtype):
        return "integer"
    if types.is_float_dtype(dtype):
        return "numeric"
    if types.is_numeric_dtype(dtype) or types.is_timedelta64_dtype(dtype):
        raise ValueError(f"a column of dtype {dtype} cannot be drafted; convert it or declare "
                         "the schema")
    return "categorical"


def _can_hold_missing(dtype: object) -> bool:
    """Whether a column of ``dtype`` can hold a missing value (numpy ints and bools cannot)."""
    return not (isinstance(dtype, np.dtype) and dtype.kind in "iub")


def _grid(name: str, kind: str, dtype: object, bounds: Sequence[object] | None) -> np.ndarray:
    """The public candidate cuts of a number column: over ``bounds`` or the default grid."""
    if kind == "datetime":
        lo, hi = (_seconds(b, name) for b in (bounds or DATETIME_RANGE))
        if bounds is None:
            return np.arange(lo, hi + 1, 86400.0)
    elif bounds is None:
        grid = INTEGER_GRID if kind == "integer" else FLOAT_GRID
        if kind == "integer":
            info = np.iinfo(cast("np.dtype[np.integer]", getattr(dtype, "numpy_dtype", dtype)))
            grid = grid[(grid >= max(info.min, -MAX_EXACT_INT)) & (grid <= min(info.max, MAX_EXACT_INT))]
        return grid
    else:
        if isinstance(bounds, (str, bytes)) or len(bounds) != 2:
            raise ValueError(f"bounds= of {name!r} must be a pair (lower, upper)")
        check = check_whole if kind == "integer" else check_real
        lo, hi = (float(check(b, f"bounds= of {name!r}")) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi) or max(-lo, hi) > 1e300:
        raise ValueError(f"bounds= of {name!r} must be finite with lower < upper")
    if kind == "integer":
        if max(-lo, hi) > MAX_EXACT_INT:
            raise ValueError(f"bounds= of {name!r} must lie within +-(2**53 - 1)")
        if 4 * (hi - lo + 1) + 1 <= BOUNDED_GRID_POINTS:  # cuts from below lo to above hi
            return np.arange(lo - 0.5, hi + 0.75, 0.25)
        return np.unique(np.round(np.linspace(lo, hi + 1, BOUNDED_GRID_POINTS)))
    return np.linspace(lo, hi, BOUNDED_GRID_POINTS)


def _seconds(value: object, name: str) -> float:
    import pandas as pd
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        raise ValueError(f"bounds= of {name!r} must be two timestamps") from None
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    return float((stamp - pd.Timestamp(0)) / pd.Timedelta(seconds=1))


# -- the mechanisms -------------------------------------------------------------------------


def quantile_utilities(sorted_values: np.ndarray, grid: np.ndarray, q: float) -> np.ndarray:
    """The utility of each grid point as the ``q``-quantile cut of ``sorted_values``.

    With ``a(g) = #{x < g}``, ``b(g) = #{x <= g}`` and the target rank ``t = q n``, the
    utility is ``-max(a(g) - t, t - b(g), 0)``: minus the distance from ``t`` to ``[a, b]``,
    which is ``-|rank(g) - t|`` where no value equals ``g`` and 0 at a value whose ties span
    ``t`` (so that on discrete data the cut lands on a value, not anywhere in the gap below).
    Sensitivity 1 under adding or removing a record: ``a``, ``b`` move by at most 1 and ``t``
    by ``q <= 1``, in the same direction.
    """
    t = q * sorted_values.size
    below = np.searchsorted(sorted_values, grid, side="left")
    upto = np.searchsorted(sorted_values, grid, side="right")
    return -np.maximum(np.maximum(below - t, t - upto), 0.0)


def private_quantile(sorted_values: np.ndarray, grid: np.ndarray, q: float, epsilon: float,
                     rng: np.random.Generator) -> int:
    """The index of a grid point drawn as the ``q``-quantile cut of ``sorted_values``.

    The exponential mechanism over the public ``grid`` with the utilities of
    :func:`quantile_utilities` (sensitivity 1): index ``i`` has probability proportional to
    ``exp(epsilon * u_i / 2)``. Privacy: ``epsilon``-DP, and ``epsilon``-bounded range
    (``epsilon**2 / 8``-zCDP). Nothing is charged here: the caller charges first.
    """
    from fastmwem.mechanisms import ExponentialMechanism

    scores = quantile_utilities(sorted_values, grid, q)
    return ExponentialMechanism(epsilon=epsilon, sensitivity=1.0).select(scores, rng=rng)


#: How far beyond the released cuts an outermost cut may lie, in units of the spread of the
#: released cuts next to it (see :func:`private_cuts`).
SPREAD_FACTOR = 4


def private_cuts(values: np.ndarray, grid: np.ndarray, bins: int, epsilon: float,
                 rng: np.random.Generator) -> np.ndarray:
    """The ``bins - 1`` equal-mass cuts of ``values`` (the ``j / bins`` quantiles), private.

    Recursive splitting in the manner of Kaplan, Schnapp and Stemmer, "Differentially Private
    Approximate Quantiles" (arXiv:2201.03380): the middle cut is drawn first by
    :func:`private_quantile` over all records and the whole grid; each side is then solved
    within the records and the grid points between the cuts around it, for its quantile
    relative to them. An outermost problem (below the lowest cut released so far, or above the
    highest) searches only ``SPREAD_FACTOR`` times the spread of the two released cuts next to
    it (scaled by the quantiles between them) beyond it: on a wide grid the points below all
    records tie, and their number would otherwise swamp the mechanism. The limit depends on
    released cuts only (post-processing).

    The problems of one level hold disjoint records (the intervals between the cuts released
    so far), so a level is one exponential mechanism by parallel composition. Privacy:
    ``epsilon``-bounded range per level, :func:`cut_levels` levels (``ceil(log2(bins))``),
    sensitivity 1 per record per level. Missing (NaN) values must be dropped first. Returns
    grid points, non-decreasing.
    """
    x = np.sort(values)
    cuts = np.full(bins + 1, np.nan)
    cuts[0], cuts[-1] = -np.inf, np.inf
    todo = [(0, bins)]
    while todo:
        later = []
        known = [i for i in range(1, bins) if not np.isnan(cuts[i])]
        for a, b in todo:
            if b - a < 2:
                continue
            mid = (a + b) // 2
            records = x[np.searchsorted(x, cuts[a]):np.searchsorted(x, cuts[b])]
            lo, hi = _search_range(grid, cuts, known, a, b)
            cuts[mid] = grid[lo + private_quantile(records, grid[lo:hi], (mid - a) / (b - a),
                                                   epsilon, rng)]
            later += [(a, mid), (mid, b)]
        todo = later
    return cuts[1:-1]


def _search_range(grid: np.ndarray, cuts: np.ndarray, known: list[int], a: int, b: int
                  ) -> tuple[int, int]:
    """The slice of ``grid`` a problem between cuts ``a`` and ``b`` searches (see above)."""
    lo, hi = int(np.searchsorted(grid, cuts[a])), int(np.searchsorted(grid, cuts[b], "right"))
    above = [c for c in known if c > b]
    below = [c for c in known if c < a]
    if a == 0 and above:  # the lowest problem: at most so far below the cut above it
        c = above[0]
        reach = SPREAD_FACTOR * (cuts[c] - cuts[b]) * (b - a) / (c - b)
        start = int(np.searchsorted(grid, cuts[b] - reach))
        lo = max(lo, min(start, hi - 1 - SPREAD_FACTOR))
    if b == cuts.size - 1 and below:
        c = below[-1]
        reach = SPREAD_FACTOR * (cuts[a] - cuts[c]) * (b - a) / (a - c)
        stop = int(np.searchsorted(grid, cuts[a] + reach, "right"))
        hi = min(hi, max(stop, lo + 1 + SPREAD_FACTOR))
    return lo, hi


def jittered(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Whole numbers spread uniformly over ``[v - 1/2, v + 1/2)``, so that ties split.

    On tied values the relative quantiles of :func:`private_cuts` go wrong: the records below
    a cut that sits on a tie exclude the tie, so a side can be empty and its cuts fall anywhere.
    Each record moves by its own independent draw, so two neighbouring tables stay neighbours
    under the coupling that moves their common records alike: the privacy of the cuts is
    unchanged. The integer grids hold quarters, so that a cut can fall inside a tie.
    """
    return values + (rng.random(values.size) - 0.5)


def edges_from_cuts(cuts: np.ndarray, grid: np.ndarray, integer: bool) -> list[float]:
    """Bin edges from private cuts (post-processing): the distinct cuts, and outer bounds one
    neighbouring bin's width beyond them, within the grid.
    Integer cuts are rounded up first: a cut in ``(k - 1/2, k]`` leaves at least half of the
    jittered ``k`` above it, and becomes the edge ``k``."""
    if integer:
        cuts, grid = np.ceil(cuts), np.unique(np.ceil(grid))
    u = np.unique(cuts)
    if u.size >= 2:
        w_lo, w_hi = u[1] - u[0], u[-1] - u[-2]
    else:  # one distinct cut: its neighbours on the grid
        i = int(np.searchsorted(grid, u[0]))
        w_lo = u[0] - grid[max(i - 1, 0)] if i > 0 else 1.0
        w_hi = grid[min(i + 1, grid.size - 1)] - u[0] if i + 1 < grid.size else 1.0
    edges = np.unique([max(u[0] - w_lo, grid[0]), *u, min(u[-1] + w_hi, grid[-1])])
    if edges.size < 2:
        edges = np.array([grid[0], grid[-1]])
    return [float(e) for e in edges]


def stability_threshold(scale: Fraction, delta: float) -> int:
    """The smallest noisy count a label needs to be kept, for geometric noise of ``scale``.

    A label held by one record only (count 1) on one side of a pair of neighbouring tables is
    released with probability ``P[Z >= T - 1] = r**(T-1) / (1 + r) <= exp(-(T-1) / b)``,
    ``r = exp(-1 / b)``; ``T = 1 + ceil(b ln(1/delta))`` makes it at most ``delta``. This is
    the add/remove-neighbour form of the usual ``1 + 2 ln(1/(2 delta)) / epsilon`` (which is
    for the replacement relation's sensitivity 2 and continuous Laplace noise).
    """
    b = float(scale) * (1 + 1e-12)  # the float product errs upwards, never below the exact one
    return 1 + math.ceil(b * math.log(1.0 / delta))


def stable_categories(values: pd.Series, epsilon: float, delta: float,
                      rng: np.random.Generator, max_categories: int = MAX_CATEGORIES
                      ) -> list[Label]:
    """The labels of ``values`` whose noisy counts pass :func:`stability_threshold`.

    Stability-based histogram (Korolova, Kenthapadi, Mishra and Ntoulas, "Releasing Search
    Queries and Clicks Privately", 2009; Bun, Nissim and Stemmer, arXiv:1604.04618): each label
    present gets its count plus two-sided geometric noise (:class:`~fastmwem.mechanisms.Geometric`,
    exact integer noise of scale ``1 / epsilon`` rounded up), and only labels whose noisy count
    reaches the threshold are kept, at most ``max_categories`` of them, the largest first
    (post-processing). Privacy: ``(epsilon, delta)``-DP under adding or removing a record
    (sensitivity 1: a record holds one label). Missing cells are dropped. Labels that are not
    valid schema labels (the empty string, a non-finite number, other objects) are never kept.
    Nothing is charged here: the caller charges first.
    """
    from fastmwem.mechanisms import Geometric

    counts = values.dropna().value_counts(sort=False)
    mechanism = Geometric(epsilon=epsilon)
    noisy = np.asarray(mechanism.release(counts.to_numpy(dtype=np.int64), rng=rng))
    keep = np.flatnonzero(noisy >= stability_threshold(mechanism.scale, delta))
    order = keep[np.argsort(-noisy[keep], kind="stable")][:max_categories]
    labels: list[Label] = []
    seen: set[str] = set()
    for label in counts.index[order]:
        try:
            checked = check_label(label, "label")
        except (TypeError, ValueError):
            continue
        if str(checked) not in seen:
            seen.add(str(checked))
            labels.append(checked)
    return sorted(labels, key=lambda v: (type(v).__name__, str(v)))


# -- the draft -------------------------------------------------------------------------------


def draft_schema(df: pd.DataFrame, *, epsilon: float | None = None, delta: float | None = None,
                 rho: float | None = None, rng: RNGLike = None,
                 accountant: Accountant | None = None,
                 bounds: Mapping[str, Sequence[object]] | None = None,
                 categories: Mapping[str, Sequence[Label]] | None = None,
                 missing: Mapping[str, bool] | None = None, bins: int = 16,
                 max_categories: int = MAX_CATEGORIES) -> Schema:
    """A schema for ``df`` learnt with differential privacy (see the module docstring).

    Privacy: ``epsilon``-DP (pure, ``delta=None``), ``(epsilon, delta)``-DP, or ``rho``-zCDP,
    under adding or removing a record; the whole budget is charged to ``accountant`` (a fresh
    one holding it if None) before any value is read, split as the module docstring says. Text
    columns need ``delta`` (or declared ``categories``).

    Every drafted spec clips (``clip=True``) and every categorical one has an ``other`` label,
    so that the schema encodes ``df`` whatever the noise chose.

    Args:
        df: the private table (column labels are strings).
        epsilon, delta, rho: the budget: ``epsilon`` (pure), ``epsilon`` and ``delta``, or
            ``rho`` (zCDP: quantile cuts only).
        rng: ``None`` (operating-system entropy), a seed or a Generator (for tests).
        accountant: charged with the draft's events (it must be able to price them: an
            ``(epsilon, delta)`` accountant for text columns, a zCDP one for ``rho``).
        bounds: public ``(lower, upper)`` per number or datetime column: the grid of
            candidate cuts is then ``BOUNDED_GRID_POINTS`` points over it (every quarter
            around the integers, for an integer column with fewer). Default: :data:`FLOAT_GRID`, :data:`INTEGER_GRID`
            (within the dtype's range) or one point per day over :data:`DATETIME_RANGE`.
        categories: public labels per column (a declared categorical column costs nothing).
        missing: public override of the missing flag per column (default: from the dtype).
        bins: bins of each number column (at least 2; fewer when cuts coincide).
        max_categories: most labels a text column keeps.

    Raises:
        UndeclaredCategoriesError: text columns without ``delta`` (before any charge).
        ValueError: bad arguments, or a column declared ``missing=False`` that has gaps
            (named by column only), before any charge.
        BudgetExceededError: the accountant cannot afford the draft (nothing is spent).
    """
    eps, d, r = draft_budget(epsilon, delta, rho)
    k = check_whole(bins, "bins")
    if k < 2:
        raise ValueError(f"bins must be >= 2, got {k}")
    top = check_whole(max_categories, "max_categories")
    if top < 1:
        raise ValueError(f"max_categories must be >= 1, got {top}")
    plans = plan_columns(df, bounds=bounds, categories=categories, missing=missing)
    if len(df.columns) == 0 or len(df) == 0:
        raise ValueError("df is empty: nothing to draft a schema from")
    texts = [p.name for p in plans if p.learns == "categories"]
    if texts and d is None:
        raise UndeclaredCategoriesError(
            f"columns {texts} hold text: which labels occur cannot be learnt under pure DP or "
            "zCDP (it needs delta > 0, for a stability-based histogram); declare them with "
            "categories={name: [labels]}, or give delta", texts)
    check_columns(df, plans)
    events, params = draft_events(plans, k, eps, d, r)
    generator = make_rng(rng)
    if accountant is None:
        accountant = (Accountant(rho=r) if r is not None
                      else Accountant(epsilon=eps, delta=d or 0))
    elif not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if events:
        accountant.compose_all(events)
    specs: list[ColumnSpec] = []
    for p in plans:
        column = df[p.name]
        if p.learns == "categories":
            labels = stable_categories(column, *params[p.name], generator, top)
            specs.append(_categorical(p, labels))
        elif p.grid is not None:
            values = _numbers(column, p.kind)
            if p.kind == "integer":
                values = jittered(values, generator)
            cuts = private_cuts(values, p.grid, k, params[p.name][0], generator)
            edges = edges_from_cuts(cuts, p.grid, p.kind == "integer")
            if p.kind == "integer":
                specs.append(Integer(p.name, edges=[int(e) for e in edges], clip=True,
                                     missing=p.missing))
            else:
                specs.append(Numeric(p.name, edges=edges, clip=True, missing=p.missing))
        else:
            specs.append(_categorical(p, list(p.categories or ())))
    return Schema(specs)


def _categorical(plan: ColumnDraft, labels: list[Label]) -> Categorical:
    """A categorical spec with an ``other`` label unlike any of ``labels`` (as text)."""
    texts = {str(v) for v in labels}
    other = "other"
    while other in texts:
        other += "_"
    if plan.kind == "bool":
        return Categorical(plan.name, labels, missing=plan.missing)
    if not labels:  # nothing passed the threshold: every value is "other"
        return Categorical(plan.name, [other], other=other, missing=plan.missing)
    return Categorical(plan.name, labels, other=other, missing=plan.missing)


def check_columns(df: pd.DataFrame, plans: Sequence[ColumnDraft]) -> None:
    """Refuse, before any charge, a column its drafted spec could not encode or count.

    A refusal names the column and the rule only.
    """
    for plan in plans:
        _check_column(df[plan.name], plan)


def _check_column(column: pd.Series, plan: ColumnDraft) -> None:
    if not plan.missing and column.isna().any():
        raise ValueError(f"column {plan.name!r} has missing values but missing= declares it "
                         "has none; set missing={" + repr(plan.name) + ": True}")
    if plan.learns == "categories":
        try:
            column.dropna().value_counts(sort=False)
        except TypeError:
            raise ValueError(f"column {plan.name!r} holds values that cannot be counted "
                             "(unhashable objects); convert them to text") from None


def _numbers(column: pd.Series, kind: str) -> np.ndarray:
    """The non-missing values of a number column as float64 (datetimes as epoch seconds)."""
    if kind == "datetime":
        column = datetime_seconds(column)
    x = column.to_numpy(dtype=np.float64, na_value=np.nan)
    return x[~np.isnan(x)]
