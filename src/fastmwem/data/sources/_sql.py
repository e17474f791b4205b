"""Cells to codes in SQL: the checks and encodings of Dataset and Schema, for query engines.

For every column this builds the SQL that a query engine evaluates where the data lives:
the code of each cell, and the predicates whose counts decide whether the column is valid. The
rules are those of the in-memory path (``Dataset.from_csv`` for codes, the :class:`Schema`
column specs for raw values), including which problems are reported together: the predicates
of a column come in stages, and the first stage with any offending cell is the one reported,
as the in-memory encoders stop at their first kind of problem. Messages are built from the
counts and the first offending rows, exactly as :func:`fastmwem.data.io.checks.describe` writes
them.

Engines differ only in spelling (:class:`Dialect`): identifiers, literals, a regular-expression
match and a cast that gives NULL where the text is not a number.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fastmwem.data.domain import Domain
from fastmwem.data.schema import Categorical, ColumnSpec, Integer, Label, Numeric, Schema
from fastmwem.data.schema._columns import UNDECLARED_MISSING

__all__ = ["Check", "ColumnPlan", "Dialect", "DUCKDB", "SPARK", "MAX_SQL_BINS", "build_plans"]

#: Numeric columns with more bins than this are refused by the engines (the bin search is a
#: nested CASE of this many branches); the memory engine has no such limit.
MAX_SQL_BINS = 4096

# Text that pandas.to_numeric reads as a number, as the in-memory path parses CSV text:
# finite numbers may have ASCII whitespace around them, infinities may not, and the words
# nan/+nan/-nan (whitespace allowed) count as missing cells.
_WS = r"[ \t\n\x0B\f\r]*"
_NUMBER_TEXT = (
    r"(?i)(" + _WS + r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?" + _WS
    + r"|[+-]?(inf|infinity)|" + _WS + r"[+-]?nan" + _WS + ")"
)
_ANCHORED_NUMBER_TEXT = r"\A" + _NUMBER_TEXT + r"\z"
_MAX_FLOAT = 1.7976931348623157e308


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the little SQL the plans use."""

    name: str
    quote: str
    text_type: str

    def ident(self, name: str) -> str:
        q = self.quote
        return q + name.replace(q, q + q) + q

    def text(self, value: str) -> str:
        if self.name == "spark":
            # Spark string literals take backslash escapes; hex sidesteps every quoting rule.
            return f"decode(unhex('{binascii.hexlify(value.encode('utf-8')).decode()}'), 'UTF-8')"
        return "'" + value.replace("'", "''") + "'"

    def double(self, value: float) -> str:
        return f"CAST('{float(value)!r}' AS DOUBLE)"

    def number_text(self, expr: str) -> str:
        """Whether the text ``expr`` is a number (or a NaN word) to pandas."""
        if self.name == "spark":  # RLIKE finds a match anywhere: anchor it
            return f"({expr} RLIKE {self.text(_ANCHORED_NUMBER_TEXT)})"
        return f"regexp_full_match({expr}, {self.text(_NUMBER_TEXT)})"

    def try_double(self, expr: str) -> str:
        return f"TRY_CAST({expr} AS DOUBLE)"

    def as_text(self, expr: str) -> str:
        return f"CAST({expr} AS {self.text_type})"

    def fractional(self, expr: str) -> str:
        # Spark's floor() returns a BIGINT, which overflows on large doubles
        if self.name == "spark":
            return f"(({expr}) % 1.0 <> 0)"
        return f"(({expr}) <> floor({expr}))"


DUCKDB = Dialect("duckdb", '"', "VARCHAR")
SPARK = Dialect("spark", "`", "STRING")


@dataclass(frozen=True)
class Check:
    """A kind of bad cell in one column: its SQL predicate and how the message names it.

    A ``bare`` check's message names neither the count nor the rows (undeclared missing cells
    of a schema column).
    """

    key: str
    column: str
    what: str
    predicate: str
    suffix: str = ""
    bare: bool = False


@dataclass(frozen=True)
class ColumnPlan:
    """One column: derived values (computed once per row), its code, and its checks by stage."""

    column: str
    derived: tuple[tuple[str, str], ...]
    code: str
    stages: tuple[tuple[Check, ...], ...]
    static: tuple[str, ...] = ()

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(c for stage in self.stages for c in stage)

    def reported(self, counts: dict[str, int]) -> list[Check]:
        """The checks the in-memory path would report, given every check's count."""
        for stage in self.stages:
            hit = [c for c in stage if counts.get(c.key, 0) > 0]
            if hit:
                return hit
        return []


def build_plans(kinds: dict[str, str], target: Domain | Schema, dialect: Dialect) -> list[ColumnPlan]:
    """The plan of every column of ``target``, given each column's kind in the engine.

    Kinds: ``"text"``, ``"integer"``, ``"float"``, ``"boolean"``, or anything else (a type the
    engine has that is none of these, given as its name).
    """
    plans = []
    prefix = _alias_prefix(kinds)
    for j, name in enumerate(_names(target)):
        b = _Builder(j, name, kinds[name], dialect, prefix)
        if isinstance(target, Domain):
            plans.append(b.codes(target.shape[j]))
        else:
            plans.append(b.spec(target[name]))
    return plans


def _names(target: Domain | Schema) -> Sequence[str]:
    return target.attributes if isinstance(target, Domain) else target.names


def _alias_prefix(columns: Iterable[str]) -> str:
    """A prefix that no column of the file starts with (case aside), for derived values.

    Derived values share a scope with the file's columns: an alias equal to a column's name
    would be ambiguous, or (DuckDB) silently read as the column.
    """
    names = [c.lower() for c in columns]
    prefix = "q_"
    while any(n.startswith(prefix) for n in names):
        prefix = "q" + prefix
    return prefix


class _Builder:
    """The SQL of one column; ``c`` is the raw column, ``x`` its value as a double."""

    def __init__(self, j: int, name: str, kind: str, d: Dialect, prefix: str) -> None:
        self.j, self.name, self.kind, self.d, self.prefix = j, name, kind, d, prefix
        self.c = d.ident(name)
        self.x = self._alias("x")
        self.derived: list[tuple[str, str]] = []
        self._numbers: tuple[Check, ...] | None = None

    def _alias(self, letter: str) -> str:
        return f"{self.prefix}{letter}{self.j}"

    def _check(self, tag: str, what: str, predicate: str, suffix: str = "") -> Check:
        return Check(f"p{self.j}_{tag}", self.name, what, predicate, suffix)

    def _plan(self, code: str, *stages: tuple[Check, ...], static: tuple[str, ...] = ()) -> ColumnPlan:
        return ColumnPlan(self.name, tuple(self.derived), code,
                          tuple(s for s in stages if s), static)

    def _missing(self, spec: ColumnSpec | None = None) -> Check:
        """Missing cells: a problem (of a schema column: a bare one, whose message has no
        counts or rows). A spec that declares them gives them its last code instead
        (:meth:`_gaps`)."""
        pred = f"({self.c} IS NULL)"
        if self.kind == "float":
            pred = f"({self.c} IS NULL OR isnan({self.c}))"
        elif self.kind == "text" and self._numbers is not None:
            # a NaN word that the engine's cast does not read (Spark: "-nan") is missing too
            m = self._alias("m")
            pred = f"({self.c} IS NULL OR ({m} AND ({self.x} IS NULL OR isnan({self.x}))))"
        if spec is not None:
            return Check(f"p{self.j}_missing", self.name, UNDECLARED_MISSING, pred, bare=True)
        return self._check("missing", "missing (NaN/empty) values", pred)

    def _gaps(self, spec: ColumnSpec, code: str, stages: Sequence[tuple[Check, ...]]
              ) -> tuple[str, list[tuple[Check, ...]]]:
        """The code and the stages of a schema column, its missing cells as the spec says."""
        key = f"p{self.j}_missing"
        missing = [c for stage in stages for c in stage if c.key == key]
        if not spec.missing or not missing:
            return code, list(stages)
        kept = [tuple(c for c in stage if c.key != key) for stage in stages]
        return f"(CASE WHEN {missing[0].predicate} THEN {spec.size - 1} ELSE {code} END)", kept

    def _unsupported(self) -> ColumnPlan | None:
        if self.kind in ("text", "integer", "float", "boolean"):
            return None
        return self._plan("NULL", static=(
            f"column {self.name!r} has type {self.kind}, which is neither numbers, text nor "
            "booleans",))

    def _number_stage(self, spec: ColumnSpec | None = None) -> tuple[Check, ...]:
        """to_numbers: the value as a double, and its problems (non-numeric text, missing)."""
        if self.kind == "text":
            m = self._alias("m")
            self.derived.append((m, self.d.number_text(self.c)))
            self.derived.append((self.x, f"CASE WHEN {m} THEN {self.d.try_double(self.c)} END"))
            self._numbers = (self._check("text", "non-numeric values",
                                         f"({self.c} IS NOT NULL AND NOT {m})"),)
        else:
            self.derived.append((self.x, f"CAST({self.c} AS DOUBLE)"))
            self._numbers = ()
        return (*self._numbers, self._missing(spec))

    def _booleans(self) -> ColumnPlan:
        return self._plan("NULL", static=(f"column {self.name!r} holds booleans, not numbers",))

    def _outside(self, lo: float, hi: float, what: str, suffix: str = "",
                 value: str | None = None) -> Check:
        v = value or self.x
        pred = f"({v} < {self.d.double(lo)} OR {v} > {self.d.double(hi)})"
        return self._check("outside", what, pred, suffix)

    def _finite(self, v: str) -> str:
        return f"({v} >= {self.d.double(-_MAX_FLOAT)} AND {v} <= {self.d.double(_MAX_FLOAT)})"

    # -- integer codes over a domain (Dataset.from_csv / from_parquet) -----------------------
    def codes(self, size: int) -> ColumnPlan:
        if (plan := self._unsupported()) is not None:
            return plan
        what = f"values outside 0..{size - 1}"
        if self.kind == "integer":
            self.derived.append((self.x, self.c))
            outside = self._check("outside", what, f"({self.c} < 0 OR {self.c} > {size - 1})")
            return self._plan(f"CAST({self.x} AS BIGINT)", (self._missing(),), (outside,))
        if self.kind == "boolean":
            return self._booleans()
        numbers = self._number_stage()
        outside = self._outside(0, size - 1, what)
        frac = self._check("frac", "non-integer values",
                           f"(NOT {outside.predicate} AND {self.d.fractional(self.x)})")
        return self._plan(f"CAST({self.x} AS BIGINT)", numbers, (frac, outside))

    # -- schema columns --------------------------------------------------------------------
    def spec(self, spec: ColumnSpec) -> ColumnPlan:
        if (plan := self._unsupported()) is not None:
            return plan
        if isinstance(spec, Categorical):
            return self.categorical(spec)
        if self.kind == "boolean":
            return self._booleans()
        if isinstance(spec, Integer):
            return self.integer(spec)
        return self.numeric(spec)

    def _clipped(self, lo: float, hi: float) -> str:
        return f"LEAST(GREATEST({self.x}, {self.d.double(lo)}), {self.d.double(hi)})"

    def integer(self, spec: Integer) -> ColumnPlan:
        what = f"values outside {spec.lower}..{spec.upper}"
        suffix = " (widen the bounds or set clip=True)"
        outside = () if spec.clip else (self._outside(spec.lower, spec.upper, what, suffix),)
        stages: list[tuple[Check, ...]]
        if self.kind == "integer":
            self.derived.append((self.x, f"CAST({self.c} AS DOUBLE)"))
            stages = [(self._missing(spec),), outside]
        else:  # the value x is derived by the number stage
            frac = self._check("frac", "non-integer values",
                               f"({self._finite(self.x)} AND {self.d.fractional(self.x)})")
            stages = [self._number_stage(spec), (frac,), outside]
        value = self._clipped(spec.lower, spec.upper) if spec.clip else self.x
        if spec.edges is None:
            code = f"CAST({value} - {self.d.double(spec.lower)} AS BIGINT)"
        else:
            v = self._alias("v")
            self.derived.append((v, value))
            code = _bin_search(v, spec.edges, self.d)
        code, stages = self._gaps(spec, code, stages)
        return self._plan(code, *stages)

    def numeric(self, spec: Numeric) -> ColumnPlan:
        if spec.size > MAX_SQL_BINS:
            return self._plan("NULL", static=(
                f"column {self.name!r} has {spec.size} bins, more than the {MAX_SQL_BINS} a "
                "query engine encodes; use the memory engine or fewer bins",))
        numbers = self._number_stage(spec)
        what = f"values outside [{spec.lower}, {spec.upper}]"
        suffix = " (widen the bounds or set clip=True)"
        outside = () if spec.clip else (self._outside(spec.lower, spec.upper, what, suffix),)
        value = self._clipped(spec.lower, spec.upper) if spec.clip else self.x
        v = self._alias("v")
        self.derived.append((v, value))
        code, stages = self._gaps(spec, _bin_search(v, spec.edges, self.d), [numbers, outside])
        return self._plan(code, *stages)

    def categorical(self, spec: Categorical) -> ColumnPlan:
        labels = spec.labels
        other = None if spec.other is None else labels.index(spec.other)
        k = self._alias("k")
        self.derived.append((k, self._label_case(labels, other)))
        missing = self._missing(spec)
        stage: tuple[Check, ...] = (missing,)
        if other is None:
            unmatched = self._check(
                "unknown", "values that are not declared categories",
                f"(NOT {missing.predicate} AND {k} IS NULL)", " (declare them or set other=)")
            stage = (missing, unmatched)
        code, stages = self._gaps(spec, k, [stage])
        return self._plan(code, *stages)

    def _label_case(self, labels: Sequence[Label], other: int | None) -> str:
        """The code of a cell: equal to a label, else its text equal to a label's text."""
        d = self.d
        if self.kind == "text":
            whens = [(f"{self.c} = {d.text(str(lab))}", i) for i, lab in enumerate(labels)]
        else:
            value = f"(CASE WHEN {self.c} THEN 1 ELSE 0 END)" if self.kind == "boolean" else self.c
            text = (f"(CASE WHEN {self.c} THEN 'True' ELSE 'False' END)"
                    if self.kind == "boolean" else d.as_text(self.c))
            whens = [(f"{value} = {d.double(float(lab))}", i) for i, lab in enumerate(labels)
                     if not isinstance(lab, str)]
            whens += [(f"{text} = {d.text(lab)}", i) for i, lab in enumerate(labels)
                      if isinstance(lab, str)]
        body = " ".join(f"WHEN {cond} THEN {i}" for cond, i in whens)
        tail = "NULL" if other is None else str(other)
        return f"CASE {body} ELSE {tail} END"


def _bin_search(v: str, edges: Sequence[float], d: Dialect) -> str:
    """``searchsorted(edges, v, side="right") - 1`` capped at the last bin, as nested CASEs."""

    def search(lo: int, hi: int) -> str:
        if lo == hi:
            return str(lo)
        mid = (lo + hi + 1) // 2
        return (f"CASE WHEN {v} >= {d.double(edges[mid])} THEN {search(mid, hi)} "
                f"ELSE {search(lo, mid - 1)} END")

    return search(0, len(edges) - 2)


def first_rows_needed(plans: Sequence[ColumnPlan], counts: dict[str, int]) -> list[Check]:
    """Every check to report, in the order the in-memory path lists its problems."""
    return [c for plan in plans if not plan.static for c in plan.reported(counts)]


def problems(plans: Sequence[ColumnPlan], counts: dict[str, int],
             rows: dict[str, list[int]]) -> list[str]:
    """The problem lines, column by column, as :func:`~fastmwem.data.io.checks.describe` words them."""
    out: list[str] = []
    for plan in plans:
        out.extend(plan.static)
        for c in plan.reported(counts):
            if c.bare:
                out.append(f"column {c.column!r} has {c.what}{c.suffix}")
                continue
            out.append(f"column {c.column!r} has {counts[c.key]} {c.what}, first rows "
                       f"{rows.get(c.key, [])}{c.suffix}")
    return out


def inner_select(plans: Sequence[ColumnPlan], d: Dialect, source: str,
                 keep: Sequence[str] = ()) -> str:
    """``SELECT <raw columns and derived values> FROM source``: what every query reads."""
    items = [*keep, *(d.ident(p.column) for p in plans)]
    items += [f"{expr} AS {alias}" for p in plans for alias, expr in p.derived]
    return f"SELECT {', '.join(items)} FROM {source}"


def validation_query(plans: Sequence[ColumnPlan], d: Dialect, source: str) -> str:
    """One pass: the record count and the count of every check."""
    items = ["count(*) AS n_records"]
    items += [f"sum(CASE WHEN {c.predicate} THEN 1 ELSE 0 END) AS {c.key}"
              for p in plans for c in p.checks]
    return f"SELECT {', '.join(items)} FROM ({inner_select(plans, d, source)}) AS t"


def flags_query(checks: Sequence[Check], plans: Sequence[ColumnPlan], d: Dialect,
                source: str, keep: Sequence[str] = ()) -> str:
    """Each row's check flags (and the ``keep`` columns), for the first offending rows."""
    items = [*keep, *(f"CASE WHEN {c.predicate} THEN 1 ELSE 0 END AS {c.key}" for c in checks)]
    return f"SELECT {', '.join(items)} FROM ({inner_select(plans, d, source, keep)}) AS t"


def marginals_query(plans: Sequence[ColumnPlan], sets: Sequence[tuple[int, ...]],
                    used: Sequence[int], d: Dialect, source: str) -> str:
    """Counts of every set of column indices in one GROUP BY GROUPING SETS pass.

    The result has a code column ``a<j>`` per column in ``used`` (0 where not grouped), a
    flag ``g<j>`` (``GROUPING(a<j>)``: 1 where the row's set does not hold column ``j``) and
    ``n`` (the count).
    """
    coded = ", ".join(f"{plans[j].code} AS a{j}" for j in used)
    group = ", ".join(f"a{j}" for j in used)
    sets_sql = ", ".join("(" + ", ".join(f"a{j}" for j in s) + ")" for s in sets)
    keys = ", ".join(f"COALESCE(a{j}, 0) AS a{j}" for j in used)
    body = f"FROM (SELECT {coded} FROM ({inner_select(plans, d, source)}) AS t) AS u"
    if len(sets) == 1:  # a plain GROUP BY
        flags = ", ".join(f"0 AS g{j}" for j in used)
        return f"SELECT {keys}, {flags}, count(*) AS n {body} GROUP BY {group}"
    flags = ", ".join(f"GROUPING(a{j}) AS g{j}" for j in used)
    return (f"SELECT {keys}, {flags}, count(*) AS n {body} "
            f"GROUP BY GROUPING SETS ({sets_sql})")
