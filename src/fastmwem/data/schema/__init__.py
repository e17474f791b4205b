"""Encode raw tables into a :class:`Domain` from public declarations, and decode codes back.

A :class:`Schema` is a list of column specifications, each declared from public knowledge
(category lists, numeric bounds and bin edges), never read off the private data:

- :class:`Categorical` maps each declared label to a code (declaration order); values that are
  not declared are an error, or go to a declared ``other`` label.
- :class:`Numeric` cuts ``[lower, upper]`` into bins (``bins`` equal-width bins or explicit
  ``edges``); values outside the bounds are an error, or are clipped with ``clip=True``.
- :class:`Integer` maps the whole numbers ``lower .. upper`` to codes ``0 .. upper - lower``
  (for columns that are already small integer codes or counts), or cuts them into integer bins
  (``edges``: bin ``i`` holds ``edges[i] <= v < edges[i+1]``).

Every kind takes ``missing=True``: missing cells (NaN, None, ``pd.NA``, ``NaT``, an empty CSV
cell) then get a code of their own, the last, and decode back to a missing value. A column with
missing cells that does not declare them is refused, naming the column and the flag only.

JSON format (``Schema.to_json`` / ``Schema.from_json``)::

    {"columns": [
      {"name": "sex",    "type": "categorical", "categories": ["F", "M"]},
      {"name": "job",    "type": "categorical", "categories": ["a", "b"], "other": "other"},
      {"name": "age",    "type": "numeric", "lower": 0, "upper": 100, "bins": 10},
      {"name": "income", "type": "numeric", "edges": [0, 1e4, 5e4, 1e6], "clip": true},
      {"name": "kids",   "type": "integer", "lower": 0, "upper": 5, "missing": true},
      {"name": "rooms",  "type": "integer", "edges": [1, 2, 3, 5, 10, 100], "clip": true}
    ]}

``other``, ``clip`` and ``missing`` are optional (defaults ``null``, ``false`` and ``false``);
unknown keys are errors.

Error messages name the file, the column and the first 0-based data rows of bad cells, never
the cell values themselves (a value can identify a record); undeclared missing cells are named
by column only. Declared labels are public and may be
quoted. The empty string is not a valid label: in a CSV file an empty cell means "missing", and
a blank line (the only cell of a one-column row) is skipped. Every spec has at most
``MAX_DENSE_CELLS`` values (:func:`~fastmwem.data.dense_cell_limit`): a column with more could
never be part of a histogram or marginal, and its bin table alone might not fit in memory.
"""


from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from fastmwem.data.dataset import Dataset, codes_array
from fastmwem.data.domain import Domain
from fastmwem.data.io.checks import (
    check_columns,
    check_extra_columns_option,
    check_frame,
    raise_problems,
)
from fastmwem.data.io.csv import read_csv_columns
from fastmwem.data.io.files import load_json
from fastmwem.data.schema._columns import SPEC_TYPES, Categorical, ColumnSpec, Integer, Numeric
from fastmwem.data.schema._infer import infer_specs
from fastmwem.data.schema._json import specs_from_dict
from fastmwem.data.schema._values import Label as Label  # imported from here by the SQL sources
from fastmwem.data.schema._values import check_whole
from fastmwem.random import make_rng
from fastmwem.warnings import PrivacyLeakWarning

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Categorical", "Numeric", "Integer", "ColumnSpec", "Schema"]


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
            if not isinstance(c, SPEC_TYPES):
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
        return cls(specs_from_dict(raw))

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
        ``[min, max]`` with ``bins`` equal-width bins. Columns with missing cells are declared
        ``missing=True``. For a private alternative see
        :func:`~fastmwem.data.schema.draft.draft_schema`.

        Args:
            df: the (private) table.
            allow_private_inference: must be ``True`` to proceed; a
                :class:`PrivacyLeakWarning` is then emitted.
            bins: number of bins for numeric columns.

        Raises:
            ValueError: without the opt-in; for an empty table or an all-missing column.
        """
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
        k = check_whole(bins, "bins")
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
        return cls(infer_specs(df, k))

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
            ValueError: missing/extra/repeated columns, no rows, undeclared missing cells, non-numeric or
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
        from fastmwem.data.io.parquet import read_parquet_columns

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

        Categorical codes become their labels and Integer codes their values (a bin of several
        integers: its middle one, or with ``numeric="uniform"`` a uniform draw among them); a
        declared missing code becomes NaN (``pd.NA`` in an ``Int64`` column). A Numeric code
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
