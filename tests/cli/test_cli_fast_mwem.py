"""`fastmwem synth --selection lazy`: Fast-MWEM from the command line, on every workload spec."""

from __future__ import annotations

import json

import pytest

from fastmwem.cli import main


@pytest.mark.parametrize("workload, index", [
    ("marginals:2", None), ("counting:300", "bitpacked"), ("counting:300", None),
    ("ranges:200", "flat"), ("parities:2", None), ("marginals:1", "flat"),
])
def test_synth_runs_fast_mwem_on_every_workload_spec(tmp_path, capsys, workload, index):
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    argv = ["synth", "--demo", "--epsilon", "1", "--out", str(out), "--report", str(report),
            "--workload", workload, "--selection", "lazy", "--rounds", "3", "--rows", "50",
            "--seed", "4"]
    assert main(argv + (["--index", index] if index else [])) == 0
    ledger = json.loads(report.read_text())["privacy"]["ledger"]
    assert sum("select (lazy)" in entry["label"] for entry in ledger) == 3
    assert len(out.read_text().splitlines()) == 51


@pytest.mark.parametrize("argv, message", [
    (["--selection", "exponential", "--index", "flat"], "takes no options"),
    (["--selection", "lazy", "--index", "nonsense"], "index must be one of"),
    (["--selection", "lazy", "--index", "bitpacked", "--workload", "parities:1"], "0/1"),
])
def test_bad_lazy_options_fail_before_anything_runs(tmp_path, capsys, argv, message):
    out = tmp_path / "o.csv"
    code = main(["synth", "--demo", "--epsilon", "1", "--out", str(out), "--rounds", "2", *argv])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
