"""``fastmwem serve`` and ``fastmwem ask``: argument errors are one line, exit 2, nothing made."""

from __future__ import annotations

import json
import sys

import pytest

from fastmwem.cli import main
from fastmwem.cli.ask import parse_pairs

pytest.importorskip("fastapi", reason="the service extra is not installed (pip install .[service])")


def _serve(tmp_path, *extra):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\n0,1\n1,1\n")
    domain = tmp_path / "d.json"
    domain.write_text(json.dumps({"a": 2, "b": 2}))
    return main(["serve", str(csv), "--domain", str(domain), "--epsilon", "1", "--state",
                 str(tmp_path / "s.db"), "--admin-token-file", str(tmp_path / "admin"), *extra])


@pytest.mark.parametrize(("extra", "message"), [
    (["--port", "0"], "--port must be in 1..65535"),
    (["--rate", "0"], "--rate must be > 0"),
    (["--max-body", "10"], "--max-body must be at least 1024"),
    (["--alpha", "2"], "alpha must lie in (0, 1)"),
    (["--max-updates", "0"], "max_updates must be >= 1"),
    (["--state", "/nonexistent/dir/s.db"], "does not exist"),
])
def test_serve_refuses_bad_arguments_before_making_anything(tmp_path, capsys, extra, message):
    assert _serve(tmp_path, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "admin").exists()


@pytest.mark.parametrize("missing", ["fastapi_offline", "uvicorn"])
def test_serve_names_a_missing_package_of_its_extra(tmp_path, capsys, monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # its import now raises ImportError
    assert _serve(tmp_path) == 2
    err = capsys.readouterr().err
    assert missing.replace("_", "-") in err and "fastmwem[service]" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "admin").exists()


def test_serve_refuses_a_token_file_without_an_admin_token(tmp_path, capsys):
    (tmp_path / "admin").write_text("a1.xyz\n")
    assert _serve(tmp_path) == 2
    assert "does not hold an admin token" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--cell", "a"], "--cell: expected attr=value"),
    (["--cell", "a="], "--cell: expected attr=value"),  # "a=x" names a label now
    (["--range", "a=1"], "--range: expected attr=low:high"),
    (["--query", "{nope"], "--query is not JSON"),
    (["--set-budget", "bob"], "--set-budget: expected NAME=EPSILON"),
])
def test_ask_refuses_bad_arguments_in_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("FASTMWEM_TOKEN", "a1.secret")
    assert main(["ask", "http://127.0.0.1:9", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_ask_needs_a_token_and_a_reachable_service(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FASTMWEM_TOKEN", raising=False)
    assert main(["ask", "http://127.0.0.1:9", "--budget"]) == 2
    assert "give --token-file or set FASTMWEM_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("FASTMWEM_TOKEN", "a1.secret")
    assert main(["ask", "http://127.0.0.1:9", "--budget"]) == 2  # port 9: nothing listens
    assert "cannot reach http://127.0.0.1:9" in capsys.readouterr().err


def test_parse_pairs():
    assert parse_pairs("a=1, b=0", "--cell", ranges=False) == {"a": 1, "b": 0}
    assert parse_pairs("a=0:3", "--range", ranges=True) == {"a": [0, 3]}


@pytest.mark.parametrize(("content", "message"), [
    (b"", "is empty (0 bytes)"),
    (b"not a database at all", "is not a SQLite database"),
])
def test_serve_refuses_a_state_file_that_is_not_a_state(tmp_path, capsys, content, message):
    (tmp_path / "s.db").write_bytes(content)
    (tmp_path / "admin").write_text("admin.secret\n")
    assert _serve(tmp_path) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert (tmp_path / "s.db").read_bytes() == content  # never reinitialised


def test_serve_refused_state_leaves_no_new_token_file(tmp_path, capsys):
    # The admin token file is written only once the state was accepted.
    (tmp_path / "s.db").write_bytes(b"")
    assert _serve(tmp_path) == 2
    assert "is empty (0 bytes)" in capsys.readouterr().err
    assert not (tmp_path / "admin").exists()


def test_serve_refuses_a_token_file_in_a_missing_folder(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\n0,1\n")
    domain = tmp_path / "d.json"
    domain.write_text(json.dumps({"a": 2, "b": 2}))
    code = main(["serve", str(csv), "--domain", str(domain), "--epsilon", "1", "--state",
                 str(tmp_path / "s.db"), "--admin-token-file", str(tmp_path / "no" / "admin")])
    assert code == 2
    assert "must exist and be writable" in capsys.readouterr().err
    assert not (tmp_path / "s.db").exists()
