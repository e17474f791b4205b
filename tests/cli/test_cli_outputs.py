"""Output paths: checked before anything is read, never over an input, written all or nothing."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys

import pytest

SYNTH = ("--epsilon", 1, "--workload", "marginals:2", "--rounds", 2, "--reuse-passes", 1)


def _tmp_files(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".fastmwem-"))


def _device(directory):
    """A character device like /dev/null, made in ``directory`` so that a regression in the
    refusal replaces a throw-away node, not the system's /dev/null (the tests may run as root)."""
    path = directory / "null-device"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("cannot create a device node here (needs root)")
    return path


def _refused(result, *words):
    code, out, err = result
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, (word, err)
    assert "Traceback" not in err and out == ""


def _synth(cli, coded_csv, *extra):
    csv, domain = coded_csv
    return cli("synth", csv, "--domain", domain, *SYNTH, *extra)


@pytest.mark.parametrize("target", ["input", "domain"])
@pytest.mark.parametrize("flag", ["--out", "--report"])
def test_synth_refuses_an_output_over_an_input(cli, coded_csv, tmp_path, no_release, flag,
                                               target):
    csv, domain = coded_csv
    path = csv if target == "input" else domain
    before = path.read_bytes()
    extra = ["--out", tmp_path / "o.csv", "--report", tmp_path / "r.json"]
    extra[extra.index(flag) + 1] = path
    _refused(_synth(cli, coded_csv, *extra), flag, "refusing to write over an input")
    assert path.read_bytes() == before
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "r.json").exists()


def test_synth_refuses_another_spelling_or_a_hard_link_of_the_input(cli, coded_csv, tmp_path,
                                                                    no_release):
    csv, _ = coded_csv
    (tmp_path / "sub").mkdir()
    spelled = tmp_path / "sub" / ".." / csv.name
    _refused(_synth(cli, coded_csv, "--out", spelled), "--out", "input")
    link = tmp_path / "link.csv"
    os.link(csv, link)
    _refused(_synth(cli, coded_csv, "--out", link), "--out", "input")


def test_synth_refuses_a_schema_as_report(cli, tmp_path, no_release):
    csv = tmp_path / "raw.csv"
    csv.write_text("x\nA\nB\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": [
        {"name": "x", "type": "categorical", "categories": ["A", "B"]}]}))
    _refused(cli("synth", csv, "--schema", schema, "--epsilon", 1, "--out", tmp_path / "o.csv",
                 "--report", schema), "--report", "--schema")


def test_synth_refuses_the_bundled_data_as_output(cli, tmp_path, no_release):
    from fastmwem.datasets import nltcs_paths

    csv_path, _ = nltcs_paths()
    _refused(cli("synth", "--demo", "--epsilon", 1, "--out", csv_path), "--out", "input")


def test_out_and_report_must_differ(cli, coded_csv, tmp_path, no_release):
    out = tmp_path / "o.csv"
    _refused(_synth(cli, coded_csv, "--out", out, "--report", tmp_path / "." / "o.csv"),
             "--report and --out name the same file")


def test_symlink_fifo_device_and_directory_outputs_are_refused(cli, coded_csv, tmp_path,
                                                               no_release):
    target = tmp_path / "elsewhere.csv"
    target.write_text("keep me\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    _refused(_synth(cli, coded_csv, "--out", link), "--out", "symbolic link")
    assert link.is_symlink() and target.read_text() == "keep me\n"

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    _refused(_synth(cli, coded_csv, "--out", fifo), "--out", "not a regular file")
    _refused(_synth(cli, coded_csv, "--out", tmp_path / "o.csv", "--report", fifo),
             "--report", "not a regular file")
    _refused(_synth(cli, coded_csv, "--out", _device(tmp_path)), "not a regular file")
    _refused(_synth(cli, coded_csv, "--out", tmp_path), "--out", "is a directory")
    _refused(_synth(cli, coded_csv, "--out", f"{tmp_path / 'new'}{os.sep}"), "directory")
    assert not (tmp_path / "o.csv").exists()
    assert _tmp_files(tmp_path) == []


@pytest.mark.parametrize("out, report, words", [
    ("", None, ("--out", "empty")),
    ("/proc/x.csv", None, ("--out", "cannot create files in directory '/proc'")),
    ("OK", "/proc/r.json", ("--report", "cannot create files in directory '/proc'")),
    ("OK", "", ("--report", "empty")),
    ("no-such-dir/x.csv", None, ("--out", "does not exist")),
])
def test_unwritable_outputs_fail_before_the_run(cli, coded_csv, tmp_path, no_release, out,
                                                report, words):
    if not os.path.isdir("/proc") and "/proc" in (out, report):
        pytest.skip("no /proc on this system")
    ok = tmp_path / "o.csv"
    out = ok if out == "OK" else (tmp_path / out if out.startswith("no-such") else out)
    extra = ["--out", out] + ([] if report is None else ["--report", report])
    _refused(_synth(cli, coded_csv, *extra), *words)
    assert not ok.exists()


def test_topk_refuses_output_over_input_or_items(cli, counts_csv, tmp_path, no_release):
    items = tmp_path / "items.txt"
    items.write_text("a\nb\nc\nd\ne\n")
    base = ["topk", counts_csv, "--k", 2, "--epsilon", 1, "--item-column", "film",
            "--count-column", "votes", "--items", items]
    before = counts_csv.read_bytes(), items.read_bytes()
    _refused(cli(*base, "--out", counts_csv), "--out", "refusing to write over an input")
    _refused(cli(*base, "--out", items), "--out", "--items")
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    _refused(cli(*base, "--out", fifo), "not a regular file")
    assert (counts_csv.read_bytes(), items.read_bytes()) == before


def test_a_failed_second_output_leaves_no_first_output(cli, coded_csv, tmp_path, monkeypatch):
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    out.write_text("previous\n")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("fastmwem.cli._io.json.dump", disk_full)
    code, _, err = _synth(cli, coded_csv, "--out", out, "--report", report)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--report" in err and "No space left" in err
    assert out.read_text() == "previous\n"
    assert not report.exists()
    assert _tmp_files(tmp_path) == []


def test_sigterm_handler_is_restored_after_main(cli, coded_csv, tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    code, _, _ = _synth(cli, coded_csv, "--out", tmp_path / "o.csv")
    assert code == 0
    assert signal.getsignal(signal.SIGTERM) is before


# The child blocks inside the output write, after a partial write to its temporary file, and
# says so on stdout; the test then signals it. No timing guesswork.
CHILD = r"""
import json, signal, sys, time
import pandas as pd
from fastmwem.cli import main

def stall(fh):
    fh.write("partial,output\n" * 200_000)
    fh.flush()
    print("writing", flush=True)
    time.sleep(120)

if sys.argv[1] == "csv":
    pd.DataFrame.to_csv = lambda self, fh, **kw: stall(fh)
else:
    json.dump = lambda payload, fh, **kw: stall(fh)
# Python installs this handler only if the parent did not ignore SIGINT.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("stalled", ["topk csv", "synth json"])
def test_a_signal_during_a_write_leaves_no_temporary_file(coded_csv, counts_csv, tmp_path, sig,
                                                          status, stalled):
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    out.write_text("previous\n")
    if stalled == "topk csv":
        argv = ["csv", "topk", counts_csv, "--k", 2, "--epsilon", 1, "--item-column", "film",
                "--count-column", "votes", "--out", out]
    else:
        csv, domain = coded_csv
        argv = ["json", "synth", csv, "--domain", domain, *SYNTH, "--out", out,
                "--report", report]
    child = subprocess.Popen([sys.executable, "-c", CHILD, *map(str, argv)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "writing\n", child.communicate(timeout=60)
        assert _tmp_files(tmp_path) != []  # mid-write: the staged output exists
        child.send_signal(sig)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == status, err
    assert _tmp_files(tmp_path) == []
    assert out.read_text() == "previous\n"
    assert not report.exists()
    assert "Traceback" not in err


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_new_outputs_get_the_umask_mode_and_replaced_ones_keep_theirs(cli, coded_csv, tmp_path,
                                                                       umask):
    # The outputs are staged through mkstemp (mode 0600); the rename must not carry that over.
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    report.write_text("old\n")
    os.chmod(report, 0o640)
    before = os.umask(umask)
    try:
        code, _, err = _synth(cli, coded_csv, "--out", out, "--report", report)
    finally:
        os.umask(before)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(os.stat(report).st_mode) == 0o640
