"""``fastmwem ask`` against real local servers: the token file's content is never shown, and the
token never follows a redirect to another origin."""

from __future__ import annotations

import json

import pytest

from tests._http import clear_proxies, http_server, json_reply, redirect

RULE = "must hold one line of URL-safe characters"


@pytest.fixture(autouse=True)
def _direct(monkeypatch):
    clear_proxies(monkeypatch)
    monkeypatch.delenv("FASTMWEM_TOKEN", raising=False)


@pytest.fixture
def service():
    with http_server(json_reply(200, {"remaining": 0.75})) as (port, seen):
        yield f"http://127.0.0.1:{port}", seen


@pytest.mark.parametrize("content", [
    b"a1.abc\r\nSENTINEL_42\r\n",  # CR/LF inside: would have split the header
    b"a1.abc\nSENTINEL_42",
    b"a1.\x00\x01SENTINEL_42\x02",  # binary, valid UTF-8
    b"\x89PNG\r\n\x1a\n\xff\xfeSENTINEL_42",  # binary, not UTF-8
    b"age,income,zip\n37,SENTINEL_42,02139\n41,52000,10001\n",  # a data file named by mistake
    b"SENTINEL_42," * 1000,  # one long line
], ids=["crlf", "lf", "control", "not-utf8", "csv", "long"])
def test_a_token_file_that_holds_no_token_is_named_but_never_shown(tmp_path, cli, service,
                                                                 content):
    url, seen = service
    path = tmp_path / "token.txt"
    path.write_bytes(content)
    code, out, err = cli("ask", url, "--token-file", path, "--budget")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--token-file: {str(path)!r} {RULE}" in err
    assert "SENTINEL" not in err and "income" not in err
    assert seen == []  # nothing was sent


def test_a_token_file_with_one_token_line_is_used(tmp_path, cli, service):
    url, seen = service
    path = tmp_path / "token.txt"
    path.write_bytes(b"a1.Good_token-42\r\n")
    code, out, _ = cli("ask", url, "--token-file", path, "--budget")
    assert code == 0 and json.loads(out) == {"remaining": 0.75}
    assert [s["authorization"] for s in seen] == ["Bearer a1.Good_token-42"]


def test_a_malformed_environment_token_is_not_shown(cli, service, monkeypatch):
    url, seen = service
    monkeypatch.setenv("FASTMWEM_TOKEN", "a1.abc\r\nSENTINEL_42")
    code, _, err = cli("ask", url, "--budget")
    assert code == 2 and f"$FASTMWEM_TOKEN {RULE}" in err
    assert "SENTINEL" not in err and seen == []


@pytest.mark.parametrize("code", [302, 307])
def test_a_redirect_to_another_port_is_refused_and_gets_no_token(tmp_path, cli, service, code):
    url, seen_other = service
    path = tmp_path / "token.txt"
    path.write_text("a1.secret\n")
    with http_server(redirect(code, url + "/v1/budget")) as (port, seen):
        status, out, err = cli("ask", f"http://127.0.0.1:{port}", "--token-file", path,
                               "--budget")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "redirected to another origin" in err and url in err and "a1.secret" not in err
    assert [s["authorization"] for s in seen] == ["Bearer a1.secret"]
    assert seen_other == []  # the second server never saw the client, nor its token
