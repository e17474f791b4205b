"""CLI error messages: one clear line naming the file or flag, never a private value."""

from __future__ import annotations

import json

import pytest

TOPK = ("--k", 1, "--epsilon", 1, "--item-column", "film", "--count-column", "votes")


def _one_line(result, *words):
    code, _, err = result
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, (word, err)
    return err


def test_a_directory_is_reported_as_a_directory(cli, coded_csv, counts_csv, tmp_path,
                                                no_release):
    csv, domain = coded_csv
    folder = tmp_path / "folder"
    folder.mkdir()
    out = tmp_path / "o.csv"
    _one_line(cli("synth", folder, "--domain", domain, "--epsilon", 1, "--out", out),
              "INPUT", "is a directory")
    _one_line(cli("synth", csv, "--domain", folder, "--epsilon", 1, "--out", out),
              "--domain", "is a directory")
    _one_line(cli("synth", csv, "--schema", folder, "--epsilon", 1, "--out", out),
              "--schema", "is a directory")
    _one_line(cli("topk", folder, *TOPK), "INPUT", "is a directory")
    _one_line(cli("topk", counts_csv, *TOPK, "--items", folder), "--items", "is a directory")


@pytest.mark.parametrize("flag", ["--domain", "--schema", "--items"])
def test_a_non_utf8_side_file_is_named(cli, coded_csv, counts_csv, tmp_path, no_release, flag):
    csv, _ = coded_csv
    bad = tmp_path / "latin1.txt"
    bad.write_bytes('{"caf\u00e9": 2}\n'.encode("latin-1") if flag != "--items"
                    else "a\nb\u00e9\n".encode("latin-1"))
    if flag == "--items":
        result = cli("topk", counts_csv, *TOPK, "--items", bad)
    else:
        result = cli("synth", csv, flag, bad, "--epsilon", 1, "--out", tmp_path / "o.csv")
    named = {"--domain": "domain file", "--schema": "schema file", "--items": "--items"}[flag]
    err = _one_line(result, named, repr(str(bad)), "not UTF-8")
    assert "0xe9" not in err


@pytest.mark.parametrize("command, head", [
    ("synth", 5000), ("topk", 0), ("topk", 5000), ("synth", 0),
])
def test_a_non_utf8_input_is_named_without_its_bytes(cli, tmp_path, no_release, command, head):
    csv = tmp_path / "in.csv"
    if command == "synth":
        csv.write_bytes(b"a,b\n" + b"0,1\n" * head + b"1,\xe9\n")
        domain = tmp_path / "d.json"
        domain.write_text(json.dumps({"a": 2, "b": 2}))
        result = cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out",
                     tmp_path / "o.csv")
    else:
        csv.write_bytes(b"film,votes\n" + b"a,3\n" * head + b"\xe9t\xe9,4\n")
        result = cli("topk", csv, *TOPK)
    err = _one_line(result, repr(str(csv)), "not UTF-8")
    assert "0xe9" not in err


def test_rows_beyond_the_disk_is_a_clear_error(cli, coded_csv, tmp_path, no_release):
    csv, domain = coded_csv
    err = _one_line(cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out",
                        tmp_path / "o.csv", "--rows", 10**12),
                    "--rows 1000000000000", "disk", "free", "at most")
    assert "MemoryError" not in err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("rows, secret", [
    ("film,votes\na,3\nb,secret-count\n", "secret-count"),
    ("film,votes\na,3\nb,-1777\n", "-1777"),
    ("film,votes\nsecret-film,3\nsecret-film,4\n", "secret-film"),
])
def test_topk_errors_name_the_line_not_the_private_value(cli, tmp_path, no_release, rows,
                                                         secret):
    csv = tmp_path / "in.csv"
    csv.write_text(rows)
    err = _one_line(cli("topk", csv, *TOPK), "data row 1 (0-based)")
    assert secret not in err


def test_topk_item_outside_the_universe_is_not_named(cli, tmp_path, no_release):
    csv = tmp_path / "in.csv"
    csv.write_text("film,votes\na,3\nrare-secret,4\n")
    items = tmp_path / "items.txt"
    items.write_text("a\nb\n")
    err = _one_line(cli("topk", csv, *TOPK, "--items", items), "--items", "data row 1 (0-based)")
    assert "rare-secret" not in err


def test_synth_unknown_category_is_not_echoed(cli, tmp_path, no_release):
    csv = tmp_path / "raw.csv"
    csv.write_text("job\nclerk\nastronaut-secret\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": [
        {"name": "job", "type": "categorical", "categories": ["clerk", "nurse"]}]}))
    err = _one_line(cli("synth", csv, "--schema", schema, "--epsilon", 1, "--out",
                        tmp_path / "o.csv"), "job")
    assert "astronaut" not in err


def test_an_os_error_is_one_line(cli, coded_csv, tmp_path, monkeypatch):
    csv, domain = coded_csv

    def unreadable(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("fastmwem.data.Dataset.from_csv", unreadable)
    _one_line(cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out",
                  tmp_path / "o.csv"), "Permission denied", repr(str(csv)))


def test_a_bug_keeps_its_traceback(cli, coded_csv, tmp_path, monkeypatch):
    csv, domain = coded_csv

    def broken(*args, **kwargs):
        raise KeyError("internal")

    monkeypatch.setattr("fastmwem.cli.synth.parse_workload", broken)
    with pytest.raises(KeyError):
        cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out", tmp_path / "o.csv")
