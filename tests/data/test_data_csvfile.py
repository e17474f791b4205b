"""CSV files: what write_csv writes, read_csv_columns reads back exactly; malformed files fail."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import (
    Categorical,
    Dataset,
    Domain,
    Schema,
    SpreadsheetFormulaWarning,
    read_csv_columns,
    write_csv,
)

AWKWARD = ["a\rb", "\r", "x\r\ny", "p\nq", 'say "hi"', "a,b", " ", "  ", "\t", " lead",
           "trail ", "NA", "nan", "007", "1.0", "\\N", "#", "'", "\x0b", "\u2028", "\ufeffbom"]


def _write(tmp_path, frame, name="out.csv"):
    path = tmp_path / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpreadsheetFormulaWarning)
        write_csv(frame, path)
    return path


@pytest.mark.parametrize("label", AWKWARD)
@pytest.mark.parametrize("width", [1, 2])
def test_text_round_trips_exactly(tmp_path, label, width):
    frame = pd.DataFrame({"c": [label, "z", label]})
    if width == 2:
        frame["k"] = [1, 2, 3]
    back = read_csv_columns(_write(tmp_path, frame), list(frame.columns))
    assert back["c"].tolist() == [label, "z", label]
    assert len(back) == 3


@pytest.mark.parametrize("name", ["a\rb", "\ufeffc", "x,y", " "])
def test_header_names_round_trip(tmp_path, name):
    frame = pd.DataFrame({name: ["v"], "other": ["w"]})
    back = read_csv_columns(_write(tmp_path, frame), [name, "other"])
    assert back.to_dict("list") == {name: ["v"], "other": ["w"]}


def test_plain_tables_keep_minimal_quoting():
    buffer = io.StringIO()
    write_csv(pd.DataFrame({"rank": [1, 2], "item": ["a b", "c,d"]}), buffer)
    assert buffer.getvalue() == 'rank,item\n1,a b\n2,"c,d"\n'


def test_a_carriage_return_quotes_every_text_cell():
    # csv's minimal quoting leaves a lone '\r' bare; pandas would then split the row in two
    buffer = io.StringIO()
    write_csv(pd.DataFrame({"rank": [1, 2], "item": ["a\rb", "c"]}), buffer)
    assert buffer.getvalue() == '"rank","item"\n1,"a\rb"\n2,"c"\n'


def test_decoded_schema_output_round_trips_through_the_file(tmp_path):
    labels = ["a\rb", 'q"', "c,d", "e\nf", " ", "=1+2"]
    schema = Schema([Categorical("lab", labels), Categorical("n", [1, 2, "x"])])
    codes = np.array([[i % 6, i % 3] for i in range(12)])
    path = _write(tmp_path, schema.decode(codes))
    np.testing.assert_array_equal(schema.encode_csv(path).records, codes)


# -- formula injection --------------------------------------------------------------------------


@pytest.mark.parametrize("cell", ["=SUM(A1)", "+1+1", "-2+3", "@qz", "\tqz", "\r1", "=1"])
def test_formula_like_text_warns_naming_the_column_not_the_value(cell):
    buffer = io.StringIO()
    frame = pd.DataFrame({"safe": ["a", "b"], "job": ["b", cell]})
    with pytest.warns(SpreadsheetFormulaWarning) as record:
        write_csv(frame, buffer)
    assert len(record) == 1
    message = str(record[0].message)
    assert "['job']" in message and cell.strip() not in message
    back = pd.read_csv(io.StringIO(buffer.getvalue()), dtype=object, keep_default_na=False)
    assert back["job"].tolist() == ["b", cell]  # written unchanged


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"x": ["-5", "+3.5", "-1e3", "a-b", "x=1"]}),
    pd.DataFrame({"x": [-5, -2]}),
    pd.DataFrame({"x": [-0.5, 1.5]}),
])
def test_numbers_and_inner_signs_do_not_warn(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpreadsheetFormulaWarning)
        write_csv(frame, io.StringIO())


def test_formula_like_header_warns():
    with pytest.warns(SpreadsheetFormulaWarning, match="=cmd"):
        write_csv(pd.DataFrame({"=cmd": [1]}), io.StringIO())


# -- malformed files ----------------------------------------------------------------------------

DOMAIN = Domain(["a", "b"], [3, 2])


@pytest.mark.parametrize("text,message", [
    ("a,b\n2,1,0\n1,1\n", r"data rows \[0\] have more than the header's 2 fields"),
    ("a,b\n2,1,\n1,1\n", r"data rows \[0\] have more than the header's 2 fields"),
    ("a,b\n1,1\n2,1,0\n", "line 3 has 3 fields but the header has 2"),
    ("a,b\n1,1\n2,1,\n", "line 3 has 3 fields but the header has 2"),
    ("a,b\n1\n2,1,0\n", "line 3 has 3 fields but the header has 2"),
    ("a,b\n1,1\n0,1\n2,1,0,1\n", "line 4 has 4 fields"),
])
def test_rows_with_more_fields_than_the_header_are_refused(tmp_path, text, message):
    path = tmp_path / "ragged.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        Dataset.from_csv(path, DOMAIN)
    schema = Schema.from_domain(DOMAIN)
    with pytest.raises(ValueError, match=message):
        schema.encode_csv(path)


def test_short_rows_are_missing_cells(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text("a,b\n1\n2,1\n0\n")
    with pytest.raises(ValueError, match=r"column 'b' has 2 missing \(NaN/empty\) values, first rows \[0, 2\]"):
        Dataset.from_csv(path, DOMAIN)
    assert read_csv_columns(path, ["a"], extra_columns="ignore")["a"].tolist() == ["1", "2", "0"]


def test_header_only_file_has_no_rows(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("a,b\n")
    frame = read_csv_columns(path, ["b", "a"])
    assert list(frame.columns) == ["b", "a"] and len(frame) == 0
    with pytest.raises(ValueError, match="no data rows"):
        Dataset.from_csv(path, DOMAIN)


def test_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "blank.csv"
    path.write_text("a,b\n\n1,1\n\n2,0\n\n")
    assert Dataset.from_csv(path, DOMAIN).records.tolist() == [[1, 1], [2, 0]]


def test_not_utf8_names_the_file_offset_and_line(tmp_path):
    # the bad byte sits far beyond pandas' first read chunk, whose relative offset would mislead
    path = tmp_path / "latin1.csv"
    body = b"a,b\n" + b"1,1\n" * 100_000
    path.write_bytes(body + b"\xe9,1\n")
    for read in (lambda: Dataset.from_csv(path, DOMAIN),
                 lambda: Schema.from_domain(DOMAIN).encode_csv(path)):
        with pytest.raises(ValueError) as info:
            read()
        message = str(info.value)
        assert str(path) in message and "not UTF-8" in message
        assert f"offset {len(body)}, line 100002" in message


def test_not_utf8_header(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"a,\xe9\n1,1\n")
    with pytest.raises(ValueError, match=r"not UTF-8 text \(first bad byte at offset 2, line 1\)"):
        Dataset.from_csv(path, DOMAIN)


def test_a_directory_is_reported_as_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        Dataset.from_csv(tmp_path, DOMAIN)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        Schema.from_domain(DOMAIN).encode_csv(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Dataset.from_csv(tmp_path / "none.csv", DOMAIN)


def test_repeated_header_columns_are_refused(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("a,a,b\n1,1,0\n")
    with pytest.raises(ValueError, match=r"repeated columns \['a'\]"):
        read_csv_columns(path, ["a", "b"])


def test_read_csv_columns_checks_extra_columns_option_before_the_file(tmp_path):
    with pytest.raises(ValueError, match="extra_columns"):
        read_csv_columns(tmp_path / "none.csv", ["a"], extra_columns="drop")
