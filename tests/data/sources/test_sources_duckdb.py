"""DuckDBSource: the same counts and the same errors as the in-memory path, on the same files."""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Categorical, Dataset, Domain, Numeric, Schema
from fastmwem.data.sources import open_source
from fastmwem.data.sources._sql import MAX_SQL_BINS
from tests.data.sources.conftest import write

pytestmark = pytest.mark.usefixtures("duckdb_installed")


def _duck(path, target, **kwargs):
    from fastmwem.data.sources.duckdb import DuckDBSource

    return DuckDBSource(path, target, **kwargs)


def _memory(path, target, **kwargs):
    return open_source(path, target, "memory", **kwargs)


def _message(make, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        make(*args, **kwargs)
    return str(info.value)


def _all_sets(domain: Domain) -> list[tuple[str, ...]]:
    names = domain.attributes
    return [(), *[(a,) for a in names], *itertools.combinations(names, 2),
            tuple(reversed(names))]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_codes_give_the_memory_counts(tmp_path, domain, codes, suffix):
    path = write(codes, tmp_path / f"codes{suffix}")
    memory = _memory(path, domain)
    with _duck(path, domain) as source:
        assert len(source) == len(memory) == 300
        assert source.domain == domain
        np.testing.assert_array_equal(source.histogram(), memory.histogram())
        for got, want in zip(source.marginals(_all_sets(domain)),
                             memory.marginals(_all_sets(domain))):
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(source.marginal("b"), memory.marginal("b"))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_raw_values_give_the_memory_codes(tmp_path, schema, raw, suffix):
    path = write(raw, tmp_path / f"raw{suffix}")
    memory = _memory(path, schema)
    with _duck(path, schema) as source:
        # clip, other, edges, text and numeric labels all map as the in-memory encoders map them
        for got, want in zip(source.marginals([[n] for n in schema.names]),
                             memory.marginals([[n] for n in schema.names])):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(source.marginal(["kids", "sex", "age"]),
                                      memory.marginal(["kids", "sex", "age"]))


def test_numeric_bins_at_edges_and_bounds(tmp_path):
    # every edge, its neighbouring floats, the midpoints and both bounds land in the same bin
    spec = Numeric("x", 0.0, 1.0, bins=37)
    e = np.asarray(spec.edges)
    values = np.concatenate([e, np.nextafter(e, -np.inf)[1:], np.nextafter(e, np.inf)[:-1],
                             spec.midpoints()])
    schema = Schema([spec])
    path = write(pd.DataFrame({"x": values}), tmp_path / "x.parquet")
    with _duck(path, schema) as source:
        np.testing.assert_array_equal(source.histogram(), schema.encode_parquet(path).histogram())


def test_text_numbers_parse_as_pandas_parses_them(tmp_path):
    # cells pandas reads as numbers, as missing (nan words), or as non-numeric text
    cells = ["3", " 3", "3 ", "\t3\n", "+3", "3.", "3.0", ".5e1", "5E0", "1_000", "0x3", "+-3",
             "inf", "-Infinity", " inf", "nan", " -NaN ", "nan(1)", "3 .0", "\u00a03", "drei"]
    schema = Schema([Numeric("v", 0, 10, bins=5, clip=True)])
    path = write(pd.DataFrame({"v": cells}), tmp_path / "cells.csv")
    assert _message(lambda: _duck(path, schema)) == _message(lambda: schema.encode_csv(path))
    good = write(pd.DataFrame({"v": [c for c in cells[:8]] + ["inf", "-Infinity"]}),
                 tmp_path / "good.csv")
    with _duck(good, schema) as source:
        np.testing.assert_array_equal(source.histogram(), schema.encode_csv(good).histogram())


def _codes_cases(codes: pd.DataFrame) -> dict[str, pd.DataFrame]:
    f = codes.astype(float)
    cases = {}
    cases["outside"] = codes.assign(a=codes["a"].where(codes.index % 50 != 7, 3))
    cases["negative"] = codes.assign(c=codes["c"].where(codes.index != 11, -1))
    cases["null"] = f.assign(b=f["b"].where(codes.index % 90 != 4))
    cases["fraction"] = f.assign(a=f["a"].where(codes.index != 5, 1.5),
                                 c=f["c"].where(codes.index != 6, 9.0))
    cases["mixed"] = f.assign(a=f["a"].where(codes.index != 1), b=f["b"] + 10,
                              c=f["c"].where(codes.index != 2, 0.25))
    return cases


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_bad_codes_give_the_memory_errors(tmp_path, domain, codes, suffix):
    for name, frame in _codes_cases(codes).items():
        path = write(frame, tmp_path / f"{name}{suffix}")
        want = _message(_memory, path, domain)
        assert _message(_duck, path, domain) == want, name
        assert "first rows" in want


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_bad_raw_values_give_the_memory_errors(tmp_path, raw, suffix):
    schema = Schema([Categorical("sex", ["F", "M", "F y"]), Numeric("age", 0, 100, bins=4),
                     Numeric("kids", 0, 6, bins=3)])
    frame = raw[["sex", "age", "kids"]].copy()
    frame.loc[[3, 30], "sex"] = None
    frame.loc[8, "age"] = np.nan
    path = write(frame, tmp_path / f"raw{suffix}")
    want = _message(lambda: schema.encode_csv(path) if suffix == ".csv"
                    else schema.encode_parquet(path))
    assert _message(lambda: _duck(path, schema)) == want
    assert "not declared categories" in want and "missing values (NaN/None/empty cells)" in want
    assert "'X'" not in want  # the undeclared private value itself is never shown


def test_many_bad_columns_list_five(tmp_path):
    domain = Domain([f"x{i}" for i in range(7)], [2] * 7)
    frame = pd.DataFrame({f"x{i}": [0, 1, 2] for i in range(7)})
    path = write(frame, tmp_path / "wide.parquet")
    want = _message(lambda: Dataset.from_parquet(path, domain))
    assert "and 2 more column(s)" in want
    assert _message(lambda: _duck(path, domain)) == want


def test_first_rows_past_the_first_chunks(tmp_path):
    domain = Domain(["a"], [2])
    values = np.zeros(100_000, dtype=np.int64)
    values[[40_000, 70_001, 99_999]] = 5
    path = write(pd.DataFrame({"a": values}), tmp_path / "long.parquet")
    message = _message(lambda: _duck(path, domain))
    assert "first rows [40000, 70001, 99999]" in message
    assert message == _message(lambda: Dataset.from_parquet(path, domain))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_column_problems_give_the_memory_errors(tmp_path, domain, codes, suffix):
    frames = {
        "missing": codes.drop(columns="b"),
        "extra": codes.assign(zz=1),
        "empty": codes.iloc[:0],
    }
    for name, frame in frames.items():
        path = write(frame, tmp_path / f"{name}{suffix}")
        want = _message(_memory, path, domain)
        assert _message(_duck, path, domain) == want, name
    path = str(tmp_path / f"extra{suffix}")
    with _duck(path, domain, extra_columns="ignore") as source:
        np.testing.assert_array_equal(
            source.histogram(), _memory(path, domain, extra_columns="ignore").histogram())


def test_repeated_csv_columns_are_named(tmp_path, domain):
    path = tmp_path / "rep.csv"
    path.write_text("a,b,c,b\n0,1,2,3\n")
    want = _message(lambda: Dataset.from_csv(path, domain))
    assert "repeated columns ['b']" in want
    assert _message(lambda: _duck(path, domain)) == want


def test_unreadable_files(tmp_path, domain):
    with pytest.raises(FileNotFoundError):
        _duck(tmp_path / "none.csv", domain)
    with pytest.raises(IsADirectoryError):
        _duck(tmp_path, domain)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a,b,c\n0,1,2\n1,\xe9,2\n".encode("latin-1"))
    assert _message(lambda: _duck(latin, domain)) == _message(
        lambda: Dataset.from_csv(latin, domain))
    long_row = tmp_path / "long.csv"
    long_row.write_text("a,b,c\n0,1,2\n1,2,3,secret\n")
    message = _message(lambda: _duck(long_row, domain))
    assert "long.csv" in message and "secret" not in message
    not_parquet = tmp_path / "fake.parquet"
    not_parquet.write_text("a,b,c\n")
    assert "fake.parquet" in _message(lambda: _duck(not_parquet, domain))


def test_other_column_types_are_refused(tmp_path):
    frame = pd.DataFrame({"d": pd.to_datetime(["2020-01-01"]), "b": [True]})
    path = write(frame, tmp_path / "types.parquet")
    message = _message(lambda: _duck(path, Domain(["d", "b"], [2, 2])))
    assert "column 'd' has type TIMESTAMP" in message
    assert "column 'b' holds booleans, not numbers" in message


def test_too_many_bins_for_sql(tmp_path):
    schema = Schema([Numeric("x", 0, 1, bins=MAX_SQL_BINS + 1)])
    path = write(pd.DataFrame({"x": [0.5]}), tmp_path / "x.csv")
    assert "use the memory engine" in _message(lambda: _duck(path, schema))


def test_sets_over_more_columns_than_one_grouping_id(tmp_path):
    domain = Domain([f"x{i}" for i in range(64)], [2] * 64)
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.integers(0, 2, (50, 64)), columns=domain.attributes)
    path = write(frame, tmp_path / "wide.parquet")
    memory = Dataset.from_parquet(path, domain)
    sets = [(f"x{i}", f"x{(i + 1) % 64}") for i in range(64)]  # two GROUPING SETS queries
    with _duck(path, domain) as source:
        for got, want in zip(source.marginals(sets), memory.marginals(sets)):
            np.testing.assert_array_equal(got, want)


def test_settings_and_temporary_directory(tmp_path, domain, codes):
    path = write(codes, tmp_path / "c.parquet")
    spill = tmp_path / "spill"
    spill.mkdir()
    source = _duck(path, domain, memory_limit="300MB", temp_directory=spill, threads=1)
    setting = source._con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    assert int(setting) == 1
    source.close()
    assert spill.exists()  # the caller's directory is the caller's
    own = _duck(path, domain)
    temp = own._temp
    assert os.path.isdir(temp)
    own.close()
    assert not os.path.exists(temp)
    with pytest.raises(ValueError, match="threads"):
        _duck(path, domain, threads=0)
    with pytest.raises(TypeError, match="memory_limit"):
        _duck(path, domain, memory_limit=2**30)


def test_missing_duckdb_names_the_extra(tmp_path, domain, codes, monkeypatch):
    path = write(codes, tmp_path / "c.csv")
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(ImportError, match=r'pip install "fastmwem\[duckdb\]"'):
        _duck(path, domain)


def test_short_rows_blank_lines_and_quoted_newlines(tmp_path):
    domain = Domain(["a", "b", "c"], [2, 10, 2])
    schema = Schema([Categorical("a", ["x\ny", "z"]), Numeric("b", 0, 10, bins=2),
                     Categorical("c", ["0", "1"])])
    path = tmp_path / "odd.csv"
    path.write_text('a,b,c\n"x\ny",1,0\n\nz,9\n"z",5,1\n')
    assert _message(lambda: _duck(path, schema)) == _message(lambda: schema.encode_csv(path))
    path.write_text('a,b,c\n"x\ny",1,0\n\nz,9,1\n"z",5,1\n')
    with _duck(path, schema) as source:
        np.testing.assert_array_equal(source.histogram(), schema.encode_csv(path).histogram())
    codes = tmp_path / "codes.csv"
    codes.write_text("a,b,c\n0,1,1\n\n1,12,0\n1\n")
    assert _message(lambda: _duck(codes, domain)) == _message(
        lambda: Dataset.from_csv(codes, domain))


def test_data_changed_after_opening_is_refused(tmp_path, domain, codes):
    path = write(codes, tmp_path / "c.csv")
    source = _duck(path, domain)
    write(codes.assign(b=codes["b"] + 4), path)  # the file changes after validation
    with pytest.raises(ValueError, match="column 'b' gave codes outside the domain while"):
        source.marginals([("a", "b")])
    source.close()


def test_column_names_like_the_queries_own_names(tmp_path):
    # the derived values of the SQL (x0, m0, v1, k2, ...) never clash with the file's columns
    schema = Schema([Numeric("x1", 0, 10, bins=5), Numeric("x0", 0, 10, bins=5, clip=True),
                     Categorical("k2", ["a", "b"]), Numeric("m0", 0, 4, bins=2),
                     Categorical("n_records", ["1", "2"]), Numeric("Q_X0", 0, 1, bins=2)])
    frame = pd.DataFrame({"x1": ["0.5", "2.5", "9"], "x0": ["9.5", "11", "0.5"],
                          "k2": ["a", "b", "b"], "m0": ["1", "3", "3.5"],
                          "n_records": ["1", "2", "2"], "Q_X0": ["0", "1", "0.2"],
                          "v1": ["7", "8", "9"]})
    path = write(frame, tmp_path / "names.csv")
    memory = schema.encode_csv(path, extra_columns="ignore")
    with _duck(path, schema, extra_columns="ignore") as source:
        np.testing.assert_array_equal(source.histogram(), memory.histogram())
        for got, want in zip(source.marginals([[n] for n in schema.names]),
                             memory.marginals([[n] for n in schema.names])):
            np.testing.assert_array_equal(got, want)
