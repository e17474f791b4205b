"""Schema: public declarations encode raw tables, decode codes back, and refuse bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import (
    Categorical,
    Dataset,
    Domain,
    Integer,
    Numeric,
    PrivacyLeakWarning,
    Schema,
)


@pytest.fixture
def schema() -> Schema:
    return Schema(
        [
            Categorical("sex", ["F", "M"]),
            Categorical("job", ["clerk", "nurse", "pilot"], other="other"),
            Numeric("age", 0, 100, bins=10),
            Numeric("income", edges=[0, 1000, 5000, 20000], clip=True),
            Integer("kids", 0, 4),
        ]
    )


@pytest.fixture
def raw() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sex": ["F", "M", "M", "F"],
            "job": ["nurse", "pilot", "astronaut", "clerk"],
            "age": [0, 35.5, 100, 99.99],
            "income": [-5.0, 999.0, 1000.0, 1e9],
            "kids": [0, 4, 2, 1],
        }
    )


def test_domain_from_specs(schema):
    assert schema.domain == Domain(["sex", "job", "age", "income", "kids"], [2, 4, 10, 3, 5])
    assert schema.names == ("sex", "job", "age", "income", "kids")
    assert schema["job"].labels == ("clerk", "nurse", "pilot", "other")
    # `other` that is already a category adds no code
    assert Categorical("c", ["a", "b", "rest"], other="rest").size == 3


def test_encode_expected_codes(schema, raw):
    ds = schema.encode(raw)
    assert isinstance(ds, Dataset)
    assert ds.domain == schema.domain
    np.testing.assert_array_equal(
        ds.records,
        [
            [0, 1, 0, 0, 0],  # income -5 clipped into the first bin
            [1, 2, 3, 0, 4],
            [1, 3, 9, 1, 2],  # unknown job -> other; age == upper -> last bin
            [0, 0, 9, 2, 1],  # income 1e9 clipped into the last bin
        ],
    )


def test_encode_ignores_column_order_and_optional_extras(schema, raw):
    shuffled = raw[["kids", "income", "age", "job", "sex"]].assign(id=range(4))
    with pytest.raises(ValueError, match=r"unexpected columns \['id'\]"):
        schema.encode(shuffled)
    ds = schema.encode(shuffled, extra_columns="ignore")
    np.testing.assert_array_equal(ds.records, schema.encode(raw).records)


def test_decode_midpoints_and_labels(schema, raw):
    out = schema.decode(schema.encode(raw))
    assert list(out.columns) == list(schema.names)
    assert out["sex"].tolist() == ["F", "M", "M", "F"]
    assert out["job"].tolist() == ["nurse", "pilot", "other", "clerk"]
    assert out["age"].tolist() == [5.0, 35.0, 95.0, 95.0]
    assert out["income"].tolist() == [500.0, 500.0, 3000.0, 12500.0]
    assert out["kids"].tolist() == [0, 4, 2, 1]
    assert out["kids"].dtype == np.int64


def test_decode_uniform_stays_in_bin_and_is_seeded(schema):
    rng = np.random.default_rng(0)
    n = 2000
    codes = np.column_stack([rng.integers(0, s, size=n) for s in schema.domain.shape])
    a = schema.decode(codes, numeric="uniform", rng=11)
    b = schema.decode(codes, numeric="uniform", rng=11)
    pd.testing.assert_frame_equal(a, b)
    for j, name in enumerate(schema.names):
        spec = schema[name]
        if isinstance(spec, Numeric):
            e = np.asarray(spec.edges)
            lo, hi = e[codes[:, j]], e[codes[:, j] + 1]
            assert np.all((a[name] >= lo) & (a[name] < hi))
            # re-encoding a decoded value returns the same code
            np.testing.assert_array_equal(spec.encode(a[name])[0], codes[:, j])
    with pytest.raises(ValueError, match="numeric must be"):
        schema.decode(codes, numeric="median")


def test_round_trip_codes_decode_encode(schema):
    rng = np.random.default_rng(1)
    codes = np.column_stack([rng.integers(0, s, size=300) for s in schema.domain.shape])
    again = schema.encode(schema.decode(codes))
    np.testing.assert_array_equal(again.records, codes)


def test_decode_checks_domain_and_codes(schema):
    other = Dataset([[0, 0]], Domain(["a", "b"], [2, 2]))
    with pytest.raises(ValueError, match="differs from the schema's domain"):
        schema.decode(other)
    bad = np.zeros((3, 5), dtype=np.int64)
    bad[2, 4] = 5
    with pytest.raises(ValueError, match=r"column 'kids' has 1 values outside 0..4, first rows \[2\]"):
        schema.decode(bad)


def test_json_round_trip(tmp_path, schema):
    path = tmp_path / "schema.json"
    schema.to_json(path)
    raw = json.loads(path.read_text())
    assert raw["columns"][2] == {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "bins": 10}
    assert raw["columns"][3] == {
        "name": "income", "type": "numeric", "edges": [0, 1000, 5000, 20000], "clip": True
    }
    assert raw["columns"][1]["other"] == "other"
    loaded = Schema.from_json(path)
    assert loaded == schema
    assert loaded.domain == schema.domain


def test_json_errors(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1, "bins": 2, "bnis": 3}]}')
    with pytest.raises(ValueError, match=r"unknown keys \['bnis'\]"):
        Schema.from_json(path)
    path.write_text('{"columns": [{"name": "a", "type": "categorical"}]}')
    with pytest.raises(ValueError, match=r"missing keys \['categories'\]"):
        Schema.from_json(path)
    path.write_text('{"columns": [{"name": "a", "type": "text"}]}')
    with pytest.raises(ValueError, match="type 'text'"):
        Schema.from_json(path)
    path.write_text('{"columns": [{"name": "a", "type": "numeric", "lower": 5, "upper": 1, "bins": 2}]}')
    with pytest.raises(ValueError, match="lower < upper"):
        Schema.from_json(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        Schema.from_json(path)


def test_spec_validation():
    with pytest.raises(ValueError, match="unique"):
        Categorical("c", ["a", "a"])
    with pytest.raises(ValueError, match="unique"):
        Categorical("c", [1, "1"])
    with pytest.raises(ValueError, match="must not be empty"):
        Categorical("c", [])
    with pytest.raises(ValueError, match="exactly one of bins= or edges="):
        Numeric("x", 0, 1)
    with pytest.raises(ValueError, match="exactly one of bins= or edges="):
        Numeric("x", 0, 1, bins=2, edges=[0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        Numeric("x", edges=[0, 2, 1])
    with pytest.raises(ValueError, match="differs from its edges"):
        Numeric("x", 0, 5, edges=[0, 1, 2])
    with pytest.raises(ValueError, match="finite"):
        Numeric("x", 0, float("inf"), bins=3)
    with pytest.raises(ValueError, match="lower <= upper"):
        Integer("k", 3, 2)
    with pytest.raises(ValueError, match=r"repeated: \['a'\]"):
        Schema([Integer("a", 0, 1), Integer("a", 0, 2)])
    with pytest.raises(TypeError):
        Schema([{"name": "a"}])


# -- bad input: each message names the column and the first rows ----------------------------


def test_unknown_categories_listed_by_row_without_their_values():
    s = Schema([Categorical("color", ["red", "blue"])])
    df = pd.DataFrame({"color": ["red", "green", "blue", "pink", "green"]})
    with pytest.raises(ValueError) as exc:
        s.encode(df)
    msg = str(exc.value)
    assert "column 'color' has 3 values that are not declared categories, first rows [1, 3, 4]" in msg
    # a private cell value can identify a record: rows are named, values never are
    assert "green" not in msg and "pink" not in msg


def test_other_never_drops_rows():
    s = Schema([Categorical("color", ["red"], other="rest")])
    ds = s.encode(pd.DataFrame({"color": ["red", "green", "pink"]}))
    assert len(ds) == 3
    assert s.decode(ds)["color"].tolist() == ["red", "rest", "rest"]


def test_undeclared_nan_cells_are_errors_in_every_column_type():
    s = Schema(
        [Categorical("c", ["a", "b"], other="z"), Numeric("x", 0, 1, bins=2, clip=True), Integer("k", 0, 3)]
    )
    df = pd.DataFrame({"c": ["a", None, "b"], "x": [0.5, 0.1, np.nan], "k": [1.0, np.nan, 2.0]})
    with pytest.raises(ValueError) as exc:
        s.encode(df)
    msg = str(exc.value)
    for column in "cxk":
        assert (f"column {column!r} has missing values (NaN/None/empty cells) but does not "
                "declare them: set missing=True") in msg
    # how many cells are missing, and where, is private
    assert "first rows" not in msg and "1 missing" not in msg and "rows are" not in msg


def test_out_of_range_numbers_error_unless_clip():
    s = Schema([Numeric("age", 18, 90, bins=4)])
    df = pd.DataFrame({"age": [20, 17, 95, 50, np.inf]})
    with pytest.raises(ValueError, match=r"column 'age' has 3 values outside \[18.0, 90.0\], first rows \[1, 2, 4\]"):
        s.encode(df)
    clipped = Schema([Numeric("age", 18, 90, bins=4, clip=True)]).encode(df)
    assert clipped.records[:, 0].tolist() == [0, 0, 3, 1, 3]


def test_integer_column_errors():
    s = Schema([Integer("k", 1, 3)])
    with pytest.raises(ValueError, match=r"column 'k' has 2 values outside 1..3, first rows \[0, 2\]"):
        s.encode(pd.DataFrame({"k": [0, 2, 7]}))
    with pytest.raises(ValueError, match=r"column 'k' has 1 non-integer values, first rows \[1\]"):
        s.encode(pd.DataFrame({"k": [1, 2.5, 3]}))
    with pytest.raises(ValueError, match=r"column 'k' has 1 non-numeric values, first rows \[2\]"):
        s.encode(pd.DataFrame({"k": ["1", "2", "three"]}))
    clipped = Schema([Integer("k", 1, 3, clip=True)]).encode(pd.DataFrame({"k": [0, 2, 7]}))
    assert clipped.records[:, 0].tolist() == [0, 1, 2]


@pytest.mark.parametrize("lower, upper", [(2**60, 2**60 + 3), (-(2**53), 3 - 2**53),
                                          (2**53 - 2, 2**53)])
def test_integer_bounds_must_be_exact_as_floats(lower, upper):
    # Cells are compared as floats: beyond 2**53, 2**60 + 1 read as 2**60 and got code 0.
    with pytest.raises(ValueError, match=r"2\*\*53"):
        Integer("k", lower, upper)


def test_integer_bounds_at_the_exact_limit():
    top = 2**53 - 1
    s = Schema([Integer("k", top - 2, top)])
    assert s.encode(pd.DataFrame({"k": [top, top - 2]})).records[:, 0].tolist() == [2, 0]
    assert s.decode(np.array([[2]]))["k"].tolist() == [top]
    with pytest.raises(ValueError, match="outside"):  # 2**53 + 1 reads as 2**53: still outside
        s.encode(pd.DataFrame({"k": ["9007199254740993"]}))


def test_missing_columns_and_empty_table(schema, raw):
    with pytest.raises(ValueError, match=r"missing columns \['job', 'kids'\]"):
        schema.encode(raw.drop(columns=["job", "kids"]))
    with pytest.raises(ValueError, match="no data rows"):
        schema.encode(raw.iloc[:0])
    with pytest.raises(TypeError, match="DataFrame"):
        schema.encode(raw.to_numpy())


# -- CSV -------------------------------------------------------------------------------------


def test_encode_csv_matches_encode(tmp_path, schema, raw):
    path = tmp_path / "raw.csv"
    raw.to_csv(path, index=False)
    np.testing.assert_array_equal(schema.encode_csv(path).records, schema.encode(raw).records)


def test_encode_csv_numeric_labels_and_na_text(tmp_path):
    s = Schema([Categorical("code", [1, 2, "NA"]), Integer("n", 0, 9)])
    path = tmp_path / "c.csv"
    path.write_text("n,code\n3,2\n4,NA\n5,1\n")
    ds = s.encode_csv(path)
    np.testing.assert_array_equal(ds.records, [[1, 3], [2, 4], [0, 5]])
    assert s.decode(ds)["code"].tolist() == [2, "NA", 1]


def test_encode_csv_errors_name_file_columns_rows(tmp_path):
    s = Schema([Categorical("c", ["a", "b"]), Numeric("x", 0, 10, bins=5)])
    path = tmp_path / "bad.csv"
    path.write_text("c,x\na,1\n,2\nb,abc\nq,11\n")
    with pytest.raises(ValueError) as exc:
        s.encode_csv(path)
    msg = str(exc.value)
    assert "bad.csv" in msg
    assert "column 'c' has missing values (NaN/None/empty cells) but does not declare" in msg
    assert "column 'c' has 1 values that are not declared categories, first rows [3]" in msg
    assert "column 'x' has 1 non-numeric values, first rows [2]" in msg
    path.write_text("c,y\na,1\n")
    with pytest.raises(ValueError, match=r"missing columns \['x'\].*unexpected columns \['y'\]"):
        s.encode_csv(path)
    path.write_text("c,x\n")
    with pytest.raises(ValueError, match="no data rows"):
        s.encode_csv(path)


# -- inference needs an explicit opt-in --------------------------------------------------------


def test_infer_refuses_without_opt_in(raw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either: it must refuse before reading
        with pytest.raises(ValueError, match="leaks privacy"):
            Schema.infer(raw)
    with pytest.raises(TypeError, match="allow_private_inference"):
        Schema.infer(raw, allow_private_inference="yes")


def test_infer_with_opt_in_warns_and_encodes(raw):
    with pytest.warns(PrivacyLeakWarning, match="not differentially private"):
        s = Schema.infer(raw, allow_private_inference=True, bins=4)
    assert issubclass(PrivacyLeakWarning, UserWarning)
    assert s["sex"] == Categorical("sex", ["F", "M"])
    assert s["job"].categories == ("astronaut", "clerk", "nurse", "pilot")
    # 5 whole values do not fit in 4 bins' worth of Integer codes: binned as Numeric
    assert s["kids"] == Numeric("kids", 0, 4, bins=4)
    assert isinstance(s["age"], Numeric) and (s["age"].lower, s["age"].upper) == (0.0, 100.0)
    ds = s.encode(raw)
    assert len(ds) == 4
    assert s.decode(ds)["job"].tolist() == raw["job"].tolist()


def test_infer_small_integer_columns_become_integer():
    df = pd.DataFrame({"k": [2, 3, 5], "b": [True, False, True]})
    with pytest.warns(PrivacyLeakWarning):
        s = Schema.infer(df, allow_private_inference=True, bins=10)
    assert s["k"] == Integer("k", 2, 5)
    assert s["b"] == Categorical("b", [False, True])
    np.testing.assert_array_equal(s.encode(df).records, [[0, 1], [1, 0], [3, 1]])


def test_from_domain_is_identity_on_codes():
    d = Domain(["a", "b"], [3, 2])
    s = Schema.from_domain(d)
    assert s.domain == d
    df = pd.DataFrame({"a": [0, 2, 1], "b": [1, 0, 1]})
    ds = s.encode(df)
    np.testing.assert_array_equal(ds.records, df.to_numpy())
    pd.testing.assert_frame_equal(s.decode(ds), df)


def test_decode_zero_rows(schema):
    empty = pd.DataFrame({a: np.zeros(0, dtype=np.int64) for a in schema.names})
    out = schema.decode(empty)
    assert list(out.columns) == list(schema.names)
    assert len(out) == 0
    assert len(schema.decode(np.zeros((0, 5), dtype=np.int64), numeric="uniform", rng=1)) == 0


def test_decode_accepts_code_frame_in_any_column_order(schema):
    rng = np.random.default_rng(2)
    codes = np.column_stack([rng.integers(0, s, size=20) for s in schema.domain.shape])
    frame = pd.DataFrame(codes, columns=schema.names)[list(reversed(schema.names))]
    pd.testing.assert_frame_equal(schema.decode(frame), schema.decode(codes))


def test_encode_csv_with_utf8_bom(tmp_path):
    s = Schema([Categorical("c", ["a", "b"]), Integer("k", 0, 3)])
    path = tmp_path / "bom.csv"
    path.write_bytes("c,k\nb,3\na,0\n".encode("utf-8-sig"))
    np.testing.assert_array_equal(s.encode_csv(path).records, [[1, 3], [0, 0]])


# -- specs that cannot be written and read back, or that cannot fit ---------------------------


@pytest.mark.parametrize("make", [
    lambda: Categorical("c", ["", "x"]),
    lambda: Categorical("c", ["x"], other=""),
])
def test_empty_string_labels_are_refused(make):
    # an empty CSV cell means "missing", and a blank line is skipped: "" could never be read back
    with pytest.raises(ValueError, match="must not be the empty string"):
        make()


_ULP1 = np.nextafter(1.0, 2.0)


@pytest.mark.parametrize("make,message", [
    (lambda: Numeric("x", -1e308, 1e308, bins=4), "upper - lower overflows"),
    (lambda: Numeric("x", -1.7e308, 1.7e308, bins=1), "upper - lower overflows"),
    (lambda: Numeric("x", edges=[-1e308, 0, 1e308]), None),
    (lambda: Numeric("x", edges=[-1e308, 1e308]), "wider than the largest float"),
    (lambda: Numeric("x", 0, 5e-324, bins=2), "too narrow"),
    # one-ulp bins: the midpoint of [1 + ulp, 1 + 2 ulp) rounds (to even) onto its right edge
    (lambda: Numeric("x", edges=[1.0, _ULP1, np.nextafter(_ULP1, 2.0)]), "too narrow"),
])
def test_numeric_bins_are_finite_and_hold_their_midpoints(make, message):
    if message is None:  # wide but finite bins are fine, and midpoints stay finite
        spec = make()
        assert np.all(np.isfinite(spec.midpoints()))
        codes = np.array([0, 1])
        decoded = spec.decode(codes, np.random.default_rng(0))
        assert np.all(np.isfinite(decoded))
        np.testing.assert_array_equal(spec.encode(decoded)[0], codes)
        return
    with pytest.raises(ValueError, match=message):
        make()


def test_huge_but_finite_bounds_decode_to_finite_midpoints():
    spec = Numeric("x", 1e308, 1.7e308, bins=3)
    mids = spec.midpoints()
    assert np.all(np.isfinite(mids))
    np.testing.assert_array_equal(spec.encode(pd.Series(mids))[0], [0, 1, 2])


@pytest.mark.parametrize("make", [
    lambda: Numeric("x", 0, 1, bins=200_000_000),
    lambda: Integer("x", 0, 200_000_000),
    lambda: Integer("x", -(2**62), 2**62),
])
def test_columns_beyond_the_dense_limit_are_refused_before_allocating(make):
    with pytest.raises(ValueError, match="MAX_DENSE_CELLS"):
        make()


def test_the_limit_follows_max_dense_cells(monkeypatch):
    import fastmwem.data.domain as domain

    monkeypatch.setattr(domain, "MAX_DENSE_CELLS", 4)
    Categorical("c", ["a", "b", "c"], other="d")
    Integer("k", 1, 4)
    Numeric("x", edges=[0, 1, 2, 3, 4])
    for make in (lambda: Categorical("c", ["a", "b", "c", "d"], other="e"),
                 lambda: Integer("k", 0, 4), lambda: Numeric("x", 0, 1, bins=5),
                 lambda: Numeric("x", edges=[0, 1, 2, 3, 4, 5])):
        with pytest.raises(ValueError, match="dense limit MAX_DENSE_CELLS = 4"):
            make()


def test_schema_file_with_a_huge_bins_count_is_a_clear_error(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 1, "bins": 200_000_000}]}))
    with pytest.raises(ValueError, match=r"schema column 0: bins of 'x' gives 200000000 values"):
        Schema.from_json(path)


def test_schema_file_repeated_keys_encoding_and_directory(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"columns": [{"name": "a", "type": "integer", "lower": 0, "upper": 3, '
                    '"upper": 5}]}')
    with pytest.raises(ValueError, match="repeats the key 'upper' in one object"):
        Schema.from_json(path)
    path.write_text('{"columns": [], "columns": [{"name": "a", "type": "integer", '
                    '"lower": 0, "upper": 3}]}')
    with pytest.raises(ValueError, match="repeats the key 'columns'"):
        Schema.from_json(path)
    path.write_bytes(b'{"columns": [{"name": "\xe9", "type": "integer", "lower": 0, "upper": 3}]}')
    with pytest.raises(ValueError, match=r"schema file .*s\.json' is not UTF-8 text \(first bad "
                                         r"byte at offset 23, line 1\)"):
        Schema.from_json(path)
    with pytest.raises(IsADirectoryError, match="schema file .* is a directory"):
        Schema.from_json(tmp_path)


def test_categories_with_carriage_returns_round_trip_through_csv(tmp_path):
    from fastmwem.data import write_csv

    schema = Schema([Categorical("c", ["a\rb", "a", "b"]), Integer("k", 0, 1)])
    codes = np.array([[0, 1], [1, 0], [2, 1], [0, 0]])
    path = tmp_path / "out.csv"
    write_csv(schema.decode(codes), path)
    np.testing.assert_array_equal(schema.encode_csv(path).records, codes)


@pytest.mark.parametrize("values", [["secret", ""], [1, "1", "secret"], ["secret", (1, 2)]])
def test_infer_errors_do_not_echo_private_values(values):
    df = pd.DataFrame({"x": pd.Series(values, dtype=object)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="column 'x' cannot be a categorical column") as info:
            Schema.infer(df, allow_private_inference=True)
    assert "secret" not in str(info.value) and "repeated" not in str(info.value)
