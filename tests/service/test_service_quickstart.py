"""docs/service.md's quick start runs as pasted: its shell block is taken from the file and run by
bash in an empty directory, on a free port (the ``pip install`` line aside: the package is
installed), with ``fastmwem`` and ``python3`` this interpreter."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "service.md"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def quick_start() -> str:
    """The first ``sh`` block of the section "Quick start"."""
    section = DOC.read_text().split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    if found is None:
        raise AssertionError("docs/service.md: the quick start has no sh block")
    return found.group(1)


def _shims(directory: Path) -> Path:
    """``fastmwem`` and ``python3`` as this interpreter (with this checkout's PYTHONPATH)."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    for name, command in (("fastmwem", f'"{sys.executable}" -m fastmwem'),
                          ("python3", f'"{sys.executable}"')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        shim.chmod(0o755)
    return bin_dir


def _documents(text: str) -> list[object]:
    """The JSON documents ``ask`` printed, one after another."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        doc, i = decoder.raw_decode(text, i)
        out.append(doc)
    return out


def _gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_quick_start_runs_as_pasted(tmp_path):
    block = quick_start()
    assert "pip install" in block and "8000" in block
    port = str(free_port())
    script = "\n".join(line for line in block.splitlines()
                       if not line.startswith("pip install")).replace("8000", port)
    work = tmp_path / "work"
    work.mkdir()
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PATH": f"{_shims(tmp_path)}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    env.pop("FASTMWEM_TOKEN", None)
    proc = subprocess.Popen(["bash", "-e", "-c", script], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own group: the server included
    try:
        out, err = proc.communicate(timeout=240)
        deadline = time.monotonic() + 30
        while not _gone(proc.pid) and time.monotonic() < deadline:  # `kill $SERVER` stops it
            time.sleep(0.1)
        assert _gone(proc.pid), "the quick start left its server running"
    finally:
        if not _gone(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "AccuracyWarning" not in err  # its settings fit

    created, *answers, budget = _documents(out)
    assert created["name"] == "alice" and created["token_file"] == "alice.token"
    assert "token" not in created
    token_file = work / "alice.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token_file.read_text().startswith("a")
    assert [a["query"] for a in answers] == [
        {"cell": {"sex": "F", "smoker": "yes"}},
        {"range": {"age": ["[20, 30)", "[50, 60)"]}},
        {"cell": {"sex": "M", "age": "[60, 70)"}}]
    assert answers[0]["query_codes"] == {"cell": {"sex": 0, "smoker": 1}}
    for ans in answers:
        low, high = ans["interval"]
        assert ans["source"] in ("measured", "synthetic") and low < ans["value"] < high
        assert ans["noise_scale"] > 0 and ans["interval_level"] == 0.95
        for number in (ans["value"], ans["noise_scale"], ans["charged"], low, high):
            assert float(f"{number:.6g}") == number  # rounded for display
    assert budget["budget"] == 0.5
    assert budget["spent"] == pytest.approx(sum(a["charged"] for a in answers), abs=1e-5)
