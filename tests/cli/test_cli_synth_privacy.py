"""``fastmwem synth --privacy pure|zcdp --delta``: the report states the guarantee; bad
combinations are one-line errors before any budget is spent or file written."""

import json

import pytest

from fastmwem.cli import main


def test_zcdp_run_reports_rho_epsilon_and_delta(coded_csv, tmp_path, cli):
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = cli(*["synth", csv, "--domain", domain, "--epsilon", 1, "--privacy", "zcdp",
                        "--delta", 1e-9, "--workload", "marginals:2", "--rounds", "adaptive",
                        "--out", out,
                        "--report", report, "--seed", 1])
    assert code == 0, err
    assert "delta=1e-09" in err
    payload = json.loads(report.read_text())
    privacy = payload["privacy"]
    assert privacy["definition"] == "zcdp"
    assert privacy["delta"] == 1e-9 and privacy["epsilon"] <= 1.0 and privacy["rho"] > 0
    assert payload["command"]["privacy"] == "zcdp" and payload["command"]["rounds_adaptive"]
    assert privacy["round_ledger"]


def test_pure_run_reports_pure(coded_csv, tmp_path, cli):
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = cli(*["synth", csv, "--domain", domain, "--epsilon", 1, "--rounds", 3,
                        "--workload", "marginals:2", "--out", out, "--report", report,
                        "--seed", 1])
    assert code == 0, err
    privacy = json.loads(report.read_text())["privacy"]
    assert privacy["definition"] == "pure" and privacy["epsilon"] == 1.0


@pytest.mark.parametrize(("flags", "message"), [
    (["--privacy", "pure", "--delta", "1e-9"], "--delta is for --privacy zcdp"),
    (["--privacy", "zcdp"], "needs --delta"),
    (["--privacy", "zcdp", "--delta", "0"], "(0, 1)"),
    (["--privacy", "zcdp", "--delta", "1.5"], "(0, 1)"),
    (["--privacy", "renyi"], "invalid choice"),
    (["--rounds", "many"], "whole number, 'adaptive' or 'fixed'"),
])
def test_bad_privacy_flags_are_refused_before_anything(coded_csv, tmp_path, capsys, flags,
                                                       message):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    try:
        code = main([str(a) for a in ["synth", csv, "--domain", domain, "--epsilon", 1,
                                      "--out", out, *flags]])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
