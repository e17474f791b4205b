"""End-to-end tests of ``fastmwem topk`` through fastmwem.cli.main."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from fastmwem.cli import main
from fastmwem.mechanisms.topk import METHODS


@pytest.fixture()
def raw_csv(tmp_path):
    # Item x has one very active user (100 rows); y has three distinct users.
    rows = [("u1", "x")] * 100 + [("u1", "y"), ("u2", "y"), ("u3", "y"), ("u2", "z")]
    path = tmp_path / "raw.csv"
    pd.DataFrame(rows, columns=["user", "item"]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("method", sorted(METHODS))
def test_topk_cli_counts_file_every_method(counts_csv, tmp_path, method):
    out = tmp_path / "top.csv"
    argv = [str(counts_csv), "--k", "3", "--epsilon", "1.0", "--method", method,
            "--item-column", "film", "--count-column", "votes", "--seed", "4", "--out", str(out)]
    if method == "cdp-peel":
        argv += ["--delta", "1e-7"]
    assert main(["topk", *argv]) == 0
    result = pd.read_csv(out, dtype=str)
    assert list(result.columns) == ["rank", "item"]
    assert result["rank"].tolist() == ["1", "2", "3"]
    assert result["item"].nunique() == 3
    assert set(result["item"]) <= set("abcde")
    if method not in ("gamma", "laplace"):  # the huge gaps make the answer certain
        assert result["item"].tolist() == ["b", "d", "a"]


def test_topk_cli_raw_rows_count_each_user_once_per_item(raw_csv, capsys):
    assert main(["topk", str(raw_csv), "--k", "2", "--epsilon", "200", "--user-column", "user",
                 "--seed", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["rank,item", "1,y", "2,x"] or \
        captured.out.splitlines() == ["rank,item", "1,y", "2,z"]
    assert "BoundedRange(epsilon=200)" in captured.err


def test_topk_cli_same_seed_same_output(counts_csv, capsys):
    argv = ["topk", str(counts_csv), "--k", "4", "--epsilon", "0.001", "--item-column", "film",
            "--count-column", "votes", "--seed", "9"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out == first


def test_topk_cli_items_universe_adds_zero_counts(tmp_path, raw_csv, capsys):
    universe = tmp_path / "items.txt"
    universe.write_text("x\ny\nz\nw\nv\n")
    assert main(["topk", str(raw_csv), "--k", "5", "--epsilon", "1", "--user-column", "user",
                 "--items", str(universe), "--seed", "2"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert sorted(line.split(",")[1] for line in lines[1:]) == ["v", "w", "x", "y", "z"]
    assert "candidate items are read from the input" not in captured.err


def test_topk_cli_warns_when_items_come_from_the_input(raw_csv, capsys):
    assert main(["topk", str(raw_csv), "--k", "1", "--epsilon", "1", "--user-column", "user",
                 "--seed", "2"]) == 0
    assert "candidate items are read from the input" in capsys.readouterr().err


@pytest.mark.parametrize("extra,message", [
    (["--k", "0"], "k must be >= 1"),
    (["--k", "6"], "exceeds the number of items"),
    (["--epsilon", "0"], "epsilon"),
    (["--epsilon", "nan"], "epsilon"),
    (["--delta", "1e-6"], "--delta applies to --method cdp-peel only"),
    (["--method", "cdp-peel", "--delta", "1.5"], "delta"),
    (["--count-column", "nope"], "column 'nope' not in"),
    (["--item-column", "nope"], "column 'nope' not in"),
    (["--seed", "-3"], "--seed"),
])
def test_topk_cli_bad_arguments(counts_csv, tmp_path, capsys, extra, message):
    out = tmp_path / "never.csv"
    base = {"--k": "2", "--epsilon": "1", "--item-column": "film", "--count-column": "votes"}
    for flag, value in zip(extra[::2], extra[1::2]):
        base[flag] = value
    argv = ["topk", str(counts_csv), "--out", str(out)]
    for flag, value in base.items():
        argv += [flag, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("rows,message", [
    ("film,votes\na,3\nb,-1\n", "non-negative integers"),
    ("film,votes\na,3\nb,2.5\n", "non-negative integers"),
    ("film,votes\na,3\nb,\n", "empty value"),
    ("film,votes\na,3\na,4\n", "more than one row"),
    ("film,votes\na,3\nb,lots\n", "non-negative integers"),
    ("", "is empty"),
])
def test_topk_cli_bad_counts_file(tmp_path, capsys, rows, message):
    path = tmp_path / "bad.csv"
    path.write_text(rows)
    out = tmp_path / "never.csv"
    code = main(["topk", str(path), "--k", "1", "--epsilon", "1", "--item-column", "film",
                 "--count-column", "votes", "--out", str(out)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_topk_cli_missing_input_and_bad_out_dir(tmp_path, counts_csv, capsys):
    assert main(["topk", str(tmp_path / "none.csv"), "--k", "1", "--epsilon", "1",
                 "--count-column", "votes"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["topk", str(counts_csv), "--k", "1", "--epsilon", "1", "--item-column",
                 "film", "--count-column", "votes", "--out",
                 str(tmp_path / "no" / "such" / "dir.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_topk_cli_needs_a_source_column(counts_csv, capsys):
    with pytest.raises(SystemExit) as info:
        main(["topk", str(counts_csv), "--k", "1", "--epsilon", "1"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["topk", str(counts_csv), "--k", "1", "--epsilon", "1", "--count-column", "votes",
              "--user-column", "film"])


def test_topk_cli_items_file_must_cover_the_data(tmp_path, raw_csv, capsys):
    universe = tmp_path / "items.txt"
    universe.write_text("x\ny\n")
    assert main(["topk", str(raw_csv), "--k", "1", "--epsilon", "1", "--user-column", "user",
                 "--items", str(universe)]) == 2
    err = capsys.readouterr().err
    # z is a private value from the input: the message names its row, not the item
    assert "data row 103 (0-based)" in err and "'z'" not in err


# -- read what we write, refuse what we cannot read ------------------------------------------


def _topk(path, *extra, out=None):
    argv = ["topk", str(path), "--k", "1", "--epsilon", "1", "--seed", "3", *map(str, extra)]
    return main(argv + (["--out", str(out)] if out is not None else []))


@pytest.mark.parametrize("text,message", [
    ("item,votes\na,3,9\nb,4\n", "more than the header's 2 fields"),
    ("item,votes\na,3,\nb,4\n", "more than the header's 2 fields"),
    ("item,votes\na,3\nb,4,1\n", "line 3 has 3 fields but the header has 2"),
    ("item,item,votes\na,b,3\nc,d,4\n", "repeated columns ['item']"),
    ("item,votes\n", "has a header but no data rows"),
    ("item,votes\n\n\n", "has a header but no data rows"),
])
def test_topk_cli_refuses_malformed_input(tmp_path, capsys, text, message):
    path = tmp_path / "in.csv"
    path.write_text(text)
    out = tmp_path / "never.csv"
    assert _topk(path, "--count-column", "votes", out=out) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("cell", [" A", "A ", "\tA", " "])
def test_topk_cli_never_merges_items_that_differ_in_whitespace(tmp_path, capsys, cell):
    path = tmp_path / "in.csv"
    pd.DataFrame({"user": ["1", "2", "3"], "item": ["A", cell, "A"]}).to_csv(path, index=False)
    assert _topk(path, "--user-column", "user") == 2
    assert "leading or trailing whitespace on data row 1 (0-based)" in capsys.readouterr().err


def test_topk_cli_users_are_compared_exactly_too(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text("user,item\nu1,A\n u1,A\n")
    assert _topk(path, "--user-column", "user") == 2
    assert "--user-column: column 'user' has a value with leading" in capsys.readouterr().err


def test_topk_cli_item_and_user_columns_must_differ(raw_csv, capsys):
    assert _topk(raw_csv, "--user-column", "item") == 2
    assert "--user-column and --item-column must name different columns" in capsys.readouterr().err


def test_topk_cli_items_file_is_read_exactly(tmp_path, raw_csv, capsys):
    universe = tmp_path / "items.txt"
    universe.write_text("x\n y\nz\n")
    assert _topk(raw_csv, "--user-column", "user", "--items", universe) == 2
    assert "line 2 has leading or trailing whitespace" in capsys.readouterr().err
    universe.write_text("x\ny\nz\ny\n")
    assert _topk(raw_csv, "--user-column", "user", "--items", universe) == 2
    assert "lists 'y' twice (lines 2 and 4)" in capsys.readouterr().err
    universe.write_text("\n\n")
    assert _topk(raw_csv, "--user-column", "user", "--items", universe) == 2
    assert "lists no items" in capsys.readouterr().err


def test_topk_cli_not_utf8_and_directories_are_named(tmp_path, counts_csv, capsys):
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(b"item,votes\na,3\n\xe9,4\n")
    assert _topk(bad, "--count-column", "votes") == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "not UTF-8 text (first bad byte at offset 15, line 3)" in err
    items = tmp_path / "items.txt"
    items.write_bytes(b"a\nb\n\xe9\n")
    assert _topk(counts_csv, "--item-column", "film", "--count-column", "votes",
                 "--items", items) == 2
    err = capsys.readouterr().err
    assert str(items) in err and "not UTF-8 text (first bad byte at offset 4, line 3)" in err
    assert _topk(tmp_path, "--count-column", "votes") == 2
    assert "is a directory, not a file" in capsys.readouterr().err
    assert _topk(counts_csv, "--item-column", "film", "--count-column", "votes",
                 "--items", tmp_path) == 2
    assert "is a directory, not a file" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::fastmwem.data.SpreadsheetFormulaWarning")
@pytest.mark.parametrize("item", ["a\rb", "a\r\nb", "p\nq", 'say "hi"', "c,d", "=1+2", "007"])
def test_topk_cli_output_reads_back_exactly(tmp_path, capsys, item):
    from fastmwem.data import read_csv_columns

    path = tmp_path / "in.csv"
    pd.DataFrame({"item": [item, "other"], "votes": [10**6, 0]}).to_csv(path, index=False,
                                                                         quoting=csv.QUOTE_ALL)
    assert read_csv_columns(path, ["item"], extra_columns="ignore")["item"][0] == item
    out = tmp_path / "top.csv"
    assert _topk(path, "--count-column", "votes", "--epsilon", "10", out=out) == 0
    assert read_csv_columns(out, ["rank", "item"])["item"].tolist() == [item]
    assert _topk(path, "--count-column", "votes", "--epsilon", "10") == 0
    stdout = tmp_path / "stdout.csv"
    stdout.write_text(capsys.readouterr().out, newline="")
    assert read_csv_columns(stdout, ["rank", "item"])["item"].tolist() == [item]


def test_topk_cli_warns_about_formula_like_items_and_keeps_them(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text("item,votes\n=HYPERLINK(1),1000000\nb,0\n")
    assert _topk(path, "--count-column", "votes", "--epsilon", "10") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["rank,item", "1,=HYPERLINK(1)"]
    # the command line prints the warning as one line naming the column, never the value
    warning = [line for line in captured.err.splitlines() if "SpreadsheetFormulaWarning" in line]
    assert len(warning) == 1 and "columns ['item']" in warning[0]
    assert "HYPERLINK" not in warning[0]


@pytest.mark.parametrize("text", ["film,votes\nsecret-item,3x\n", "film,votes\nsecret-item,3\n"
                                  "secret-item,4\n"])
def test_topk_cli_errors_do_not_echo_private_cells(tmp_path, capsys, text):
    path = tmp_path / "in.csv"
    path.write_text(text)
    assert _topk(path, "--item-column", "film", "--count-column", "votes") == 2
    err = capsys.readouterr().err
    assert "data row" in err and "secret" not in err and "3x" not in err
