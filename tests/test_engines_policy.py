"""The optional-engine policy of the tests: skip with a reason locally, fail under CI=true."""

from __future__ import annotations

import pytest

from tests import _engines


def test_missing_engine_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no such package"):
        _engines.unavailable("no such package")
    with pytest.raises(pytest.skip.Exception, match=r'pip install "\.\[nonexistent_mod\]"'):
        _engines.require("nonexistent_mod")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run this test, but no such package"):
        _engines.unavailable("no such package")


def test_java_is_found_on_path_or_java_home(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert not _engines.java_available()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert _engines.java_available()
