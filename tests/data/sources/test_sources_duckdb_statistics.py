"""DuckDBSource never trusts a Parquet file's statistics: every check sees every value.

Parquet keeps min/max/null-count statistics per row group, and leaves NaN out of min/max.
DuckDB's optimizer folds predicates by them (``x > 2`` is false where the statistics say the
maximum is 2), so a NaN, or a value that wrong statistics hide, passed validation and failed
(or was counted in a wrong cell) only when the marginals were counted, after the charge.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastmwem.data import Categorical, Dataset, Domain, Integer, Numeric, Schema
from tests.data.sources.conftest import forge_statistics

pytestmark = pytest.mark.usefixtures("duckdb_installed")

_ROWS = 1200


def _duck(path, target, **kwargs):
    from fastmwem.data.sources.duckdb import DuckDBSource

    return DuckDBSource(path, target, **kwargs)


def _memory(path, target):
    if isinstance(target, Domain):
        return Dataset.from_parquet(path, target)
    return target.encode_parquet(path)


def _message(make, *args) -> str:
    with pytest.raises(ValueError) as info:
        make(*args)
    return str(info.value)


_TARGETS = {
    "codes": Domain(["a"], [3]),
    "numeric": Schema([Numeric("a", 0, 3, bins=3)]),
    "numeric-clip": Schema([Numeric("a", 0, 3, bins=3, clip=True)]),
    "integer": Schema([Integer("a", 0, 2)]),
    "integer-clip": Schema([Integer("a", 0, 2, clip=True)]),
    "categorical": Schema([Categorical("a", [0, 1, 2])]),
    "categorical-other": Schema([Categorical("a", [0, 1, 2], other=0)]),
}


@pytest.mark.parametrize("name", list(_TARGETS))
@pytest.mark.parametrize("float_type", ["float64", "float32"])
def test_nan_in_a_float_column_is_refused_on_open(tmp_path, name, float_type):
    values = np.tile(np.array([0.0, 1.0, 2.0]), _ROWS // 3)
    values[_ROWS - 3] = np.nan  # in the last row group: its statistics say max 2
    path = str(tmp_path / "nan.parquet")
    pq.write_table(pa.table({"a": pa.array(values, type=getattr(pa, float_type)())}), path,
                   row_group_size=_ROWS // 4)
    target = _TARGETS[name]
    want = _message(_memory, path, target)
    assert ("missing (NaN/empty) values" if name == "codes" else
            "missing values (NaN/None/empty cells)") in want
    assert _message(_duck, path, target) == want


def _codes_file(tmp_path, column: np.ndarray) -> str:
    rng = np.random.default_rng(6)
    path = str(tmp_path / "forged.parquet")
    pq.write_table(pa.table({"a": column, "b": rng.integers(0, 2, _ROWS)}), path,
                   row_group_size=_ROWS // 3)
    return path


@pytest.mark.parametrize("case", ["max", "min", "float-max"])
def test_statistics_that_hide_bad_values_are_not_trusted(tmp_path, case):
    domain = Domain(["a", "b"], [3, 2])
    if case == "float-max":
        column = np.tile(np.array([0.0, 1.0, 2.0]), _ROWS // 3)
        column[5] = 12345.678
        path = _codes_file(tmp_path, column)
        forge_statistics(path, 12345.678, 2.0, "<d")
    else:
        column = np.tile(np.arange(3), _ROWS // 3)
        bad, claimed = (987654321, 2) if case == "max" else (-987654321, 0)
        column[777] = bad
        path = _codes_file(tmp_path, column)
        forge_statistics(path, bad, claimed)
    stats = pq.ParquetFile(path).metadata.row_group(1).column(0).statistics
    assert (stats.min, stats.max) in ((0, 2), (0.0, 2.0))  # the file lies
    want = _message(_memory, path, domain)
    assert "values outside 0..2" in want
    assert _message(_duck, path, domain) == want


_LOW = 1_000_000
_SPECS = {
    "integer": Integer("k", _LOW, _LOW + 2),
    "integer-clip": Integer("k", _LOW, _LOW + 1, clip=True),
    "categorical": Categorical("k", [_LOW, _LOW + 1, _LOW + 2]),
    "numeric": Numeric("k", _LOW, _LOW + 3, bins=3),
}


@pytest.mark.parametrize("name", list(_SPECS))
def test_statistics_narrower_than_the_values_give_the_memory_counts(tmp_path, name):
    # every value is valid, but the statistics claim the column is constant
    path = str(tmp_path / "narrow.parquet")
    pq.write_table(pa.table({"k": _LOW + np.tile(np.arange(3), _ROWS // 3)}), path,
                   row_group_size=_ROWS // 3)
    forge_statistics(path, _LOW + 2, _LOW)
    schema = Schema([_SPECS[name]])
    with _duck(path, schema) as source:
        np.testing.assert_array_equal(source.histogram(), _memory(path, schema).histogram())


def test_queries_never_use_file_statistics(tmp_path):
    path = str(tmp_path / "c.parquet")
    pq.write_table(pa.table({"a": [0, 1]}), path)
    with _duck(path, Domain(["a"], [2])) as source:
        setting = source._con.execute("SELECT current_setting('disabled_optimizers')").fetchall()
        assert "statistics_propagation" in setting[0][0]
