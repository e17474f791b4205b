"""``fastmwem ask`` against a real server: ``--token-out`` keeps a new analyst's token in a file
(mode 0600, never over an existing file or an input), ``--wait`` waits for a starting server."""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest

from fastmwem.cli import main


@pytest.fixture(scope="module")
def server(module_server_factory):
    return module_server_factory("--alpha", "0.05", "--max-updates", "10", "--total", "400").start()


def _ask(capsys, url, *argv):
    code = main(["ask", url, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _names(server) -> list[str]:
    return [a["name"] for a in server.admin().analysts()]


def test_token_out_writes_the_token_to_a_new_private_file(server, tmp_path, capsys):
    target = tmp_path / "alice.token"
    code, out, err = _ask(capsys, server.url, "--token-file", str(server.admin_file),
                          "--add-analyst", "alice=0.5", "--token-out", str(target))
    assert code == 0, err
    shown = json.loads(out)
    assert shown["name"] == "alice" and shown["token_file"] == str(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    token = target.read_text()
    assert token.startswith("a") and token.endswith("\n") and token.count("\n") == 1
    assert "token" not in shown and token.strip() not in out  # not printed
    code, out, err = _ask(capsys, server.url, "--token-file", str(target), "--budget")
    assert code == 0 and json.loads(out)["budget"] == 0.5


@pytest.mark.parametrize("which", ["existing", "input"])
def test_token_out_never_writes_over_a_file_and_then_creates_no_analyst(server, tmp_path,
                                                                         capsys, which):
    target = tmp_path / "kept.txt"
    target.write_text("keep me\n")
    before = _names(server)
    token_file = server.admin_file if which == "existing" else target
    if which == "input":
        target.write_text(server.admin_file.read_text())
    content = target.read_text()
    code, out, err = _ask(capsys, server.url, "--token-file", str(token_file),
                          "--add-analyst", f"bo{which}=0.5", "--token-out", str(target))
    assert code == 2 and "exists; a token file is never written over" in err and out == ""
    assert target.read_text() == content and _names(server) == before


def test_token_out_leaves_no_file_when_the_service_refuses(server, tmp_path, capsys):
    target = tmp_path / "dup.token"
    assert _ask(capsys, server.url, "--token-file", str(server.admin_file), "--add-analyst",
                "dup=0.5")[0] == 0
    code, _, err = _ask(capsys, server.url, "--token-file", str(server.admin_file),
                        "--add-analyst", "dup=0.5", "--token-out", str(target))
    assert code == 2 and "exists already" in err and not target.exists()


def test_token_out_goes_with_add_analyst_only(server, tmp_path, capsys):
    code, _, err = _ask(capsys, server.url, "--token-file", str(server.admin_file),
                        "--owner-budget", "--token-out", str(tmp_path / "t"))
    assert code == 2 and "--token-out goes with --add-analyst" in err
    assert not (tmp_path / "t").exists()


def test_wait_waits_for_the_token_file_and_the_service(server_factory, capsys):
    starting = server_factory("--total", "400")
    thread = threading.Thread(target=starting.start)  # the server comes up meanwhile
    thread.start()
    try:
        code, out, err = _ask(capsys, starting.url, "--wait", "60", "--token-file",
                              str(starting.admin_file), "--owner-budget")
    finally:
        thread.join()
    assert code == 0, err
    assert json.loads(out)["epsilon"] == 1


def test_wait_gives_up_naming_what_it_waited_for(tmp_path, capsys):
    code, _, err = _ask(capsys, "http://127.0.0.1:9", "--wait", "0.5", "--token-file",
                        str(tmp_path / "none.token"), "--budget")
    assert code == 2 and "--wait: waited 0.5 s for --token-file" in err
