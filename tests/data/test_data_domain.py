"""Domain JSON files: what is refused, and with which message."""

from __future__ import annotations

import pytest

from fastmwem.data import Domain


def test_round_trip(tmp_path):
    path = tmp_path / "d.json"
    Domain(["a", "b"], [3, 2]).to_json(path)
    assert Domain.from_json(path) == Domain(["a", "b"], [3, 2])


def test_a_repeated_column_is_refused_not_overwritten(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"a": 3, "b": 2, "a": 2}')
    with pytest.raises(ValueError, match=r"domain file .*d\.json' repeats the key 'a' in one object"):
        Domain.from_json(path)


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}'])
def test_non_json_constants_are_refused(tmp_path, text):
    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="is not valid JSON"):
        Domain.from_json(path)


def test_not_utf8_names_the_file_and_the_byte(tmp_path):
    path = tmp_path / "d.json"
    path.write_bytes(b'{"a": 3,\n "\xe9": 2}')
    with pytest.raises(ValueError, match=r"domain file .*d\.json' is not UTF-8 text \(first bad "
                                         r"byte at offset 11, line 2\)"):
        Domain.from_json(path)


def test_a_bom_is_accepted(tmp_path):
    path = tmp_path / "d.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 3}')
    assert Domain.from_json(path) == Domain(["a"], [3])


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(IsADirectoryError, match="domain file .* is a directory, not a file"):
        Domain.from_json(tmp_path)
    with pytest.raises(FileNotFoundError, match="domain file .* does not exist"):
        Domain.from_json(tmp_path / "none.json")


def test_dense_limit_lives_with_the_domain(monkeypatch):
    from fastmwem.data import domain as module

    small, big = Domain(["a"], [2**26]), Domain(["a", "b"], [2**26, 2])
    assert small.dense and not big.dense
    assert module.dense_ok(module.MAX_DENSE_CELLS) and not module.dense_ok(module.MAX_DENSE_CELLS + 1)
    with pytest.raises(ValueError, match=r"the table has 134217728 cells, more than the dense "
                                         r"limit MAX_DENSE_CELLS = 67108864 \(2\*\*26\); split it"):
        module.check_dense(big.size, "the table", "split it")
    monkeypatch.setattr(module, "MAX_DENSE_CELLS", 4)
    assert not Domain(["a"], [5]).dense


def test_data_never_imports_higher_layers():
    """data sits below workloads and release: none of its modules may import them."""
    import ast
    import pathlib

    import fastmwem.data

    for path in pathlib.Path(fastmwem.data.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("fastmwem.workloads", "fastmwem.release",
                                            "fastmwem.models", "fastmwem.cli")), (
                f"{path.name} imports {name}")
