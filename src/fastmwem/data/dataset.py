"""A private dataset as a table of integer codes over a :class:`~fastmwem.data.Domain`."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.data import domain as _domain
from fastmwem.data.domain import Domain, check_dense
from fastmwem.data.io.checks import (
    check_columns,
    check_frame,
    describe,
    raise_problems,
    to_numbers,
)
from fastmwem.data.io.csv import read_csv_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Dataset", "codes_array", "dense_cell_limit"]


def dense_cell_limit() -> int:
    """The largest dense histogram the library allocates (``data.domain.MAX_DENSE_CELLS``)."""
    # Read at call time, so that the limit can be lowered in tests.
    return int(_domain.MAX_DENSE_CELLS)


def _check_dense(n_cells: int, what: str) -> None:
    check_dense(n_cells, what, "use marginals over fewer attributes instead")


class Dataset:
    """``n`` records of integer codes, one column per attribute of ``domain`` (in its order).

    The records are private data. Nothing here adds noise: a :class:`Dataset` is what a
    mechanism reads after charging its privacy budget. Records are stored as a read-only,
    C-contiguous ``int64`` array of shape ``(n, len(domain))``; code ``c`` of attribute ``a``
    lies in ``0 .. domain.size_of(a) - 1``.

    Args:
        records: an ``(n, d)`` array of integer codes in the domain's attribute order, or a
            DataFrame whose columns are exactly the domain's attributes (any order) and hold
            integer dtypes. Floats are refused here (parse CSVs with :meth:`from_csv`, or raw
            tables with a :class:`~fastmwem.data.Schema`).
        domain: the public domain.

    Raises:
        TypeError: non-integer data, or a ``domain`` that is not a :class:`Domain`.
        ValueError: no records, wrong number of columns, missing/extra/repeated columns,
            missing values, or codes outside ``0 .. size - 1``; the message names the column(s)
            and lists the first offending 0-based row positions.

    >>> d = Domain(["a", "b"], [2, 3])
    >>> ds = Dataset([[0, 2], [1, 0], [1, 2]], d)
    >>> len(ds), ds.columns
    (3, ('a', 'b'))
    >>> ds.histogram()
    array([0., 0., 1., 1., 0., 1.])
    >>> ds.marginal(["b"])
    array([1., 0., 2.])
    >>> Dataset([[0, 3]], d)
    Traceback (most recent call last):
    ...
    ValueError: column 'b' has 1 values outside 0..2, first rows [0] (rows are 0-based data-row positions)
    """

    __slots__ = ("_domain", "_records")

    def __init__(self, records: np.ndarray | pd.DataFrame | Iterable[Iterable[int]], domain: Domain) -> None:
        self._init_trusted(codes_array(records, domain), domain)

    def _init_trusted(self, arr: np.ndarray, domain: Domain) -> None:
        arr = np.array(arr, dtype=np.int64, order="C", copy=True)
        arr.setflags(write=False)
        self._records = arr
        self._domain = domain

    @classmethod
    def _trusted(cls, arr: np.ndarray, domain: Domain) -> Dataset:
        """Wrap codes already known to be valid (used by :meth:`project`)."""
        obj = cls.__new__(cls)
        obj._init_trusted(arr, domain)
        return obj

    def __getstate__(self) -> tuple[np.ndarray, Domain]:
        return self._records, self._domain

    def __setstate__(self, state: tuple[np.ndarray, Domain]) -> None:
        # pickling (e.g. to worker processes) must not hand back a writable array
        self._init_trusted(state[0], state[1])

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, domain: Domain) -> Dataset:
        """Build from a DataFrame of integer codes whose columns are the domain's attributes."""
        check_frame(df)
        return cls(df, domain)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        domain: Domain,
        *,
        extra_columns: str = "error",
    ) -> Dataset:
        """Read a CSV of integer codes with a header row.

        The header must name every attribute of ``domain`` exactly once (column order does not
        matter; the dataset uses the domain's order). Cells must be whole numbers: ``3`` and
        ``3.0`` are accepted, ``3.5``, text and empty cells are errors.

        Args:
            path: the CSV file.
            domain: the public domain.
            extra_columns: ``"error"`` (default) refuses columns that are not attributes of the
                domain and names them; ``"ignore"`` drops them.

        Raises:
            FileNotFoundError, IsADirectoryError: no such file, or a directory.
            ValueError: not UTF-8, empty file, no data rows, missing/extra/repeated columns, a
                row with more fields than the header, or bad cells (the message names the file,
                the columns and the first 0-based data rows, never the cell values).
        """
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
        context = f"CSV file {os.fspath(path)!r}"
        df = read_csv_columns(path, domain.attributes, extra_columns=extra_columns, text=False)
        arr = _codes_from_frame(df, domain, allow_whole_floats=True, context=context)
        return cls._trusted(arr, domain)

    @classmethod
    def from_parquet(
        cls,
        path: str | os.PathLike[str],
        domain: Domain,
        *,
        extra_columns: str = "error",
    ) -> Dataset:
        """Read a Parquet file of integer codes; the rules and errors of :meth:`from_csv`.

        Needs pyarrow (``pip install "fastmwem[parquet]"``). Integer columns are taken as they
        are; float and text columns must hold whole numbers.
        """
        from fastmwem.data.io.parquet import read_parquet_columns

        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
        context = f"Parquet file {os.fspath(path)!r}"
        df = read_parquet_columns(path, domain.attributes, extra_columns=extra_columns)
        arr = _codes_from_frame(df, domain, allow_whole_floats=True, context=context)
        return cls._trusted(arr, domain)

    def to_dataframe(self) -> pd.DataFrame:
        """A new (writable) DataFrame of the codes, one int64 column per attribute."""
        import pandas as pd
        return pd.DataFrame(np.array(self._records), columns=list(self._domain.attributes))

    # -- accessors ---------------------------------------------------------------------------
    @property
    def domain(self) -> Domain:
        return self._domain

    @property
    def records(self) -> np.ndarray:
        """The ``(n, d)`` read-only int64 array of codes."""
        return self._records

    @property
    def columns(self) -> tuple[str, ...]:
        return self._domain.attributes

    def __len__(self) -> int:
        return int(self._records.shape[0])

    def __repr__(self) -> str:
        return f"Dataset(n={len(self)}, domain={self._domain!r})"

    # -- statistics --------------------------------------------------------------------------
    def histogram(self) -> np.ndarray:
        """Counts of every cell: a flat float64 array of ``domain.size`` entries.

        Cell order is C order over ``domain.shape`` (cell ``codes`` at
        ``np.ravel_multi_index(codes, domain.shape)``), as in :mod:`fastmwem.workloads`.

        Raises:
            ValueError: if ``domain.size`` exceeds ``MAX_DENSE_CELLS`` (the message names both).
        """
        _check_dense(self._domain.size, f"the domain {self._domain.shape}")
        return self._counts(tuple(range(len(self._domain))), self._domain.shape)

    def marginal(self, attrs: str | Iterable[str]) -> np.ndarray:
        """Counts of the marginal on ``attrs`` (in the order given), shaped by their sizes.

        Computed from the records directly, never from the full histogram. An empty ``attrs``
        gives the 0-d array holding the number of records.

        Raises:
            ValueError: unknown or repeated attribute, or a marginal above ``MAX_DENSE_CELLS``.
        """
        names = _attr_names(attrs)
        if not names:
            return np.array(float(len(self)))
        axes = self._domain.axes(names)
        shape = tuple(self._domain.shape[a] for a in axes)
        _check_dense(math.prod(shape), f"the marginal on {list(names)}")
        return self._counts(axes, shape).reshape(shape)

    def marginals(self, attribute_sets: Iterable[str | Iterable[str]]) -> list[np.ndarray]:
        """:meth:`marginal` of each attribute set, in order (the ``MarginalSource`` method)."""
        if isinstance(attribute_sets, str):
            raise TypeError("attribute_sets must be a list of attribute sets, not one string")
        return [self.marginal(attrs) for attrs in attribute_sets]

    def project(self, attrs: str | Iterable[str]) -> Dataset:
        """The dataset restricted to ``attrs`` (in the order given), over ``domain.project``."""
        names = _attr_names(attrs)
        sub = self._domain.project(names)
        axes = self._domain.axes(names)
        return Dataset._trusted(self._records[:, list(axes)], sub)

    def _counts(self, axes: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        # C-order cell index = codes . strides (what np.ravel_multi_index computes), as one
        # integer matrix-vector product; sizes are <= MAX_DENSE_CELLS, so int64 cannot overflow.
        strides = np.ones(len(shape), dtype=np.int64)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        if axes == tuple(range(self._records.shape[1])):
            cols = self._records
        else:
            cols = self._records[:, list(axes)]
        flat = cols @ strides
        # weights make bincount return float64 directly: one allocation of `size` cells
        return np.bincount(flat, weights=np.ones(flat.shape[0]), minlength=size)


def _attr_names(attrs: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(attrs, str):
        return (attrs,)
    try:
        names = tuple(attrs)
    except TypeError:
        raise TypeError(f"attrs must be an attribute name or names, got {attrs!r}") from None
    for a in names:
        if not isinstance(a, str):
            raise TypeError(f"attrs must hold attribute names (str), got {a!r}")
    return names


def codes_array(
    records: np.ndarray | pd.DataFrame | Iterable[Iterable[int]], domain: Domain, *, allow_empty: bool = False
) -> np.ndarray:
    """Validate codes exactly as :class:`Dataset` does and return them as an int64 array.

    ``allow_empty=True`` accepts zero rows (synthetic output may be empty; private input may not).
    """
    import pandas as pd
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
    if isinstance(records, pd.DataFrame):
        return _codes_from_frame(records, domain, allow_whole_floats=False, context="records",
                                 allow_empty=allow_empty)
    return _codes_from_array(records, domain, allow_empty=allow_empty)


def _check_ranges(arr: np.ndarray, domain: Domain, context: str = "") -> None:
    # one broadcast pass over the whole table; per-column details only for failing columns
    upper = np.array(domain.shape, dtype=np.uint64 if arr.dtype == np.uint64 else np.int64)
    bad = (arr >= upper) if arr.dtype.kind == "u" else (arr < 0) | (arr >= upper)
    failing = np.flatnonzero(bad.any(axis=0))
    problems = [
        describe(bad[:, j], domain.attributes[j], f"values outside 0..{domain.shape[j] - 1}")
        for j in failing
    ]
    raise_problems(problems, context)


def _codes_from_array(records: object, domain: Domain, *, allow_empty: bool = False) -> np.ndarray:
    if isinstance(records, (str, bytes)):
        raise TypeError("records must be a 2-D array of integer codes, not a string")
    try:
        arr = np.asarray(records)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"records must be a rectangular 2-D array: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"records must be 2-D (n, {len(domain)}), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"records must hold integer codes, got dtype {arr.dtype}; read CSV files with "
            "Dataset.from_csv and raw tables with a Schema"
        )
    if arr.shape[1] != len(domain):
        raise ValueError(
            f"records have {arr.shape[1]} columns but the domain has {len(domain)} attributes "
            f"{list(domain.attributes)}"
        )
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError("records are empty: a dataset needs at least one row")
    _check_ranges(arr, domain)
    return arr.astype(np.int64, copy=False)


def _codes_from_frame(
    df: pd.DataFrame, domain: Domain, *, allow_whole_floats: bool, context: str,
    allow_empty: bool = False,
) -> np.ndarray:
    import pandas as pd
    check_frame(df, context)
    check_columns(list(df.columns), domain.attributes, "error", context)
    if len(df) == 0 and not allow_empty:
        raise ValueError(f"{context}: no data rows; a dataset needs at least one row")
    n = len(df)
    out = np.empty((n, len(domain)), dtype=np.int64)
    problems: list[str] = []
    for j, (name, size) in enumerate(zip(domain.attributes, domain.shape)):
        col = df[name]
        dtype = col.dtype
        if len(col) == 0:
            continue
        if pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            if col.isna().any():  # nullable integer columns
                problems.append(describe(col.isna().to_numpy(), name, "missing (NaN/empty) values"))
                continue
            values = col.to_numpy()
            bad = (values < 0) | (values >= size)
            if bad.any():
                problems.append(describe(bad, name, f"values outside 0..{size - 1}"))
                continue
            out[:, j] = values
            continue
        if not allow_whole_floats:
            problems.append(
                f"column {name!r} has dtype {dtype}, not an integer dtype (codes must be integers; "
                "use Dataset.from_csv for CSV files or a Schema for raw values)"
            )
            continue
        values, col_problems = to_numbers(col, name)
        if col_problems:
            problems.extend(col_problems)
            continue
        bad_range = (values < 0) | (values > size - 1)
        frac = ~bad_range & (values != np.floor(values))
        if frac.any():
            problems.append(describe(frac, name, "non-integer values"))
        if bad_range.any():
            problems.append(describe(bad_range, name, f"values outside 0..{size - 1}"))
        if frac.any() or bad_range.any():
            continue
        out[:, j] = values.astype(np.int64)
    raise_problems(problems, context)
    return out
