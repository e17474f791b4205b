"""What the DuckDB and Spark sources share: validation on open, and marginals by GROUPING SETS.

Marginals are counted in batches: one GROUPING SETS query per batch, each batch bounded in the
sets it holds (the engines keep state per set of a query: DuckDB a hash table per set and
thread, Spark a copy of each row per set), in the columns it groups, and in the counts it
returns, so that the memory of a query does not grow with the workload.

A subclass says how to run a query where the data lives (:meth:`QuerySource._query_one`,
:meth:`QuerySource._query_columns`) and how to find the first offending rows in the source's
row order (:meth:`QuerySource._first_rows`); everything else is here, in the engines' common SQL
(:mod:`fastmwem.data.sources._sql`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np

from fastmwem.data.dataset import _check_dense
from fastmwem.data.domain import Domain
from fastmwem.data.io.checks import MAX_LISTED, raise_problems
from fastmwem.data.schema import Schema
from fastmwem.data.sources._sql import (
    Check,
    ColumnPlan,
    Dialect,
    build_plans,
    marginals_query,
    problems,
    validation_query,
)
from fastmwem.data.sources.base import check_attribute_sets, fill_marginal

__all__ = ["SETS_PER_QUERY", "QuerySource", "target_domain"]

# Columns one GROUPING SETS query groups at most (the engines' grouping bitmaps are 64-bit).
_MAX_GROUPED_COLUMNS = 60
#: Attribute sets one GROUPING SETS query counts at most (an engine may ask for fewer).
SETS_PER_QUERY = 128
# Values (result rows times columns) one query returns at most, unless one set alone has more.
_RESULT_VALUES = 2**24


def target_domain(target: object) -> Domain:
    """The domain of a ``Domain`` or ``Schema`` (the public description of the data)."""
    if isinstance(target, Domain):
        return target
    if isinstance(target, Schema):
        return target.domain
    raise TypeError(f"domain_or_schema must be a Domain or a Schema, got {type(target).__name__}")


class QuerySource:
    """A table counted by a query engine; validated when it is opened (see :meth:`_open`)."""

    dialect: Dialect
    engine = "query"

    def __init__(self) -> None:
        self._plans: list[ColumnPlan] = []
        self._domain: Domain | None = None
        self._n = 0
        self._context = ""
        self._sets_per_query = SETS_PER_QUERY

    # -- what a subclass provides ------------------------------------------------------------
    def _source(self) -> str:
        """The table expression queries read (a table function or a view name)."""
        raise NotImplementedError

    def _query_one(self, sql: str) -> dict[str, Any]:
        """The single row of ``sql`` as a dict."""
        raise NotImplementedError

    def _query_columns(self, sql: str) -> dict[str, np.ndarray]:
        """The result of ``sql`` as one array per column."""
        raise NotImplementedError

    def _first_rows(self, checks: Sequence[Check]) -> dict[str, list[int]]:
        """The first ``MAX_LISTED`` 0-based row positions where each check holds."""
        raise NotImplementedError

    # -- opening -----------------------------------------------------------------------------
    def _open(self, kinds: dict[str, str], target: Domain | Schema, context: str) -> None:
        """Build the column plans and validate every cell in one aggregate pass.

        Raises:
            ValueError: no rows, or bad cells; the message is the in-memory path's.
        """
        self._domain = target_domain(target)
        self._context = context
        self._plans = build_plans(kinds, target, self.dialect)
        row = self._query_one(validation_query(self._plans, self.dialect, self._source()))
        counts = {k: int(v or 0) for k, v in row.items()}
        n = counts.pop("n_records")
        if n == 0:
            raise ValueError(f"{context}: no data rows; a dataset needs at least one row")
        listed = self._listed_checks(counts)
        rows = self._first_rows(listed) if listed else {}
        raise_problems(problems(self._plans, counts, rows), context)
        self._n = n

    def _listed_checks(self, counts: dict[str, int]) -> list[Check]:
        """The checks among the problems an error message lists (only those need rows)."""
        out: list[Check] = []
        shown = 0
        for plan in self._plans:
            shown += len(plan.static)
            for check in plan.reported(counts):
                if shown < MAX_LISTED and not check.bare:  # a bare message names no rows
                    out.append(check)
                shown += 1
        return out

    # -- the MarginalSource protocol ---------------------------------------------------------
    @property
    def domain(self) -> Domain:
        return cast(Domain, self._domain)  # set by _open

    def __len__(self) -> int:
        return self._n

    def histogram(self) -> np.ndarray:
        """Counts of every cell, C order; refuses domains above ``MAX_DENSE_CELLS``."""
        _check_dense(self.domain.size, f"the domain {self.domain.shape}")
        return self.marginal(self.domain.attributes).reshape(-1)

    def marginal(self, attrs: str | Iterable[str]) -> np.ndarray:
        """Counts of the marginal on ``attrs`` (in the order given), shaped by their sizes."""
        return self.marginals([attrs])[0]

    def marginals(self, attribute_sets: Iterable[str | Iterable[str]]) -> list[np.ndarray]:
        """The marginal of each attribute set, all counted in as few passes as possible.

        Sets are counted in GROUPING SETS queries (one pass over the data each) of at most
        ``SETS_PER_QUERY`` sets (fewer if the engine asks), 60 distinct columns and about 16M
        returned values, so that the engine's memory stays bounded however many sets there are.
        """
        names = check_attribute_sets(self.domain, attribute_sets)
        axes = [tuple(self.domain.axis(a) for a in s) for s in names]
        wanted = list(dict.fromkeys(tuple(sorted(s)) for s in axes if s))
        counted: dict[tuple[int, ...], np.ndarray] = {}
        for batch in _batches(wanted, self.domain.shape, self._n, self._sets_per_query):
            counted.update(self._count(batch))
        out = []
        for s in axes:
            if not s:
                out.append(np.array(float(self._n)))
                continue
            key = tuple(sorted(s))
            out.append(np.transpose(counted[key], [key.index(j) for j in s]).copy())
        return out

    def _count(self, sets: list[tuple[int, ...]]) -> dict[tuple[int, ...], np.ndarray]:
        used = sorted({j for s in sets for j in s})
        sql = marginals_query(self._plans, sets, used, self.dialect, self._source())
        cols = self._query_columns(sql)
        self._check_codes(cols, used)
        n = np.asarray(cols["n"], dtype=np.float64)
        out = {}
        for s in sets:
            rows = np.ones(n.shape[0], dtype=bool)
            for j in used:  # the rows of set s: grouped by its columns, by no others
                rows &= np.asarray(cols[f"g{j}"]) == (0 if j in s else 1)
            shape = tuple(self.domain.shape[j] for j in s)
            out[s] = fill_marginal(shape, [np.asarray(cols[f"a{j}"])[rows] for j in s], n[rows])
        return out

    def _check_codes(self, cols: dict[str, np.ndarray], used: Sequence[int]) -> None:
        """Refuse codes outside the domain rather than count them in a wrong cell.

        Validation proved every cell valid when the source was opened; codes outside the domain
        here mean the data changed since, or (Parquet) the file's statistics, which DuckDB
        trusts to skip work, contradict its cells.
        """
        for j in used:
            codes = np.asarray(cols[f"a{j}"])
            if codes.size and (codes.min() < 0 or codes.max() >= self.domain.shape[j]):
                raise ValueError(
                    f"{self._context}: column {self.domain.attributes[j]!r} gave codes outside "
                    "the domain while counting, though it was valid when opened: the data "
                    "changed since, or the file's statistics are wrong; open it again")

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the engine's resources (a no-op by default)."""

    def __enter__(self) -> QuerySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._context}, n={self._n}, domain={self._domain!r})"


def _batches(sets: list[tuple[int, ...]], shape: Sequence[int], n: int,
             max_sets: int) -> Iterable[list[tuple[int, ...]]]:
    """Consecutive runs of ``sets`` that one query counts within the limits.

    A run holds at most ``max_sets`` sets and ``_MAX_GROUPED_COLUMNS`` columns, and returns at
    most ``_RESULT_VALUES`` values (each set gives at most ``min(cells, n)`` rows, each row a
    code and a flag per grouped column and a count), except a set that alone exceeds it.
    """
    batch: list[tuple[int, ...]] = []
    cols: set[int] = set()
    rows = 0
    for s in sets:
        s_rows = min(math.prod(shape[j] for j in s), max(n, 1))
        grown = cols | set(s)
        if batch and (len(batch) >= max_sets or len(grown) > _MAX_GROUPED_COLUMNS
                      or (rows + s_rows) * (2 * len(grown) + 1) > _RESULT_VALUES):
            yield batch
            batch, cols, rows, grown = [], set(), 0, set(s)
        batch.append(s)
        cols = grown
        rows += s_rows
    if batch:
        yield batch
