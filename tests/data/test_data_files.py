"""Input files: UTF-8 errors located exactly, and line lists read without silent stripping."""

from __future__ import annotations

import pytest

import fastmwem.data.io.files as files
from fastmwem.data import read_lines


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 20])
def test_utf8_error_position_is_exact_across_chunk_boundaries(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(files, "_CHUNK", chunk)
    path = tmp_path / "x.txt"
    good = "é\n€x\n𝄞\n".encode()  # 2-, 3- and 4-byte characters around the chunk edges
    path.write_bytes(good + b"ab\xe2\x82")  # a truncated 3-byte character at the very end
    assert files.utf8_error_position(str(path)) == (len(good) + 2, 4)
    path.write_bytes(good + b"\xff" + good)
    assert files.utf8_error_position(str(path)) == (len(good), 4)
    path.write_bytes(good)
    assert files.utf8_error_position(str(path)) is None


def test_read_lines_keeps_lines_exactly_and_skips_empty_ones(tmp_path):
    path = tmp_path / "items.txt"
    path.write_bytes(b"\xef\xbb\xbfa\r\nb c\n\nd")
    assert read_lines(path, "items") == [(1, "a"), (2, "b c"), (4, "d")]


@pytest.mark.parametrize("text,line", [(" a\n", 1), ("a\nb \n", 2), ("a\n\t\n", 2)])
def test_read_lines_refuses_surrounding_whitespace(tmp_path, text, line):
    path = tmp_path / "items.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"line {line} has leading or trailing whitespace"):
        read_lines(path, "items")


def test_read_lines_not_utf8_and_directory(tmp_path):
    path = tmp_path / "items.txt"
    path.write_bytes(b"a\nb\n\xe9\n")
    with pytest.raises(ValueError, match=r"not UTF-8 text \(first bad byte at offset 4, line 3\)"):
        read_lines(path, "items")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        read_lines(tmp_path, "items")


@pytest.mark.timeout(10)
@pytest.mark.parametrize("reader", ["csv", "domain", "lines"])
def test_a_fifo_is_refused_by_name_without_opening_it(tmp_path, reader):
    # Opening a FIFO for reading blocks until a writer appears: the call would hang for ever.
    import os

    from fastmwem.data import Dataset, Domain

    path = tmp_path / "pipe"
    os.mkfifo(path)
    read = {"csv": lambda p: Dataset.from_csv(p, Domain(["a"], [2])),
            "domain": Domain.from_json,
            "lines": lambda p: read_lines(p, "items")}[reader]
    with pytest.raises(ValueError, match="pipe' is not a regular file"):
        read(path)
