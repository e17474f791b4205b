"""A --seed never reaches any output, and a seeded run says it is not private."""

from __future__ import annotations

import json

SEED = 918273645  # distinctive, so that a leak anywhere is found by text search
SYNTH = ("--epsilon", 1, "--workload", "marginals:2", "--rounds", 3, "--reuse-passes", 2)


def _warning_lines(err):
    return [line for line in err.splitlines() if "warning (PrivacyLeakWarning)" in line]


def test_seeded_synth_warns_and_its_report_is_not_private(cli, coded_csv, tmp_path):
    csv, domain = coded_csv
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    code, stdout, err = cli("synth", csv, "--domain", domain, *SYNTH, "--seed", SEED,
                            "--out", out, "--report", report)
    assert code == 0, err
    [warning] = _warning_lines(err)
    assert "--seed" in warning and "anyone who knows the seed can remove" in warning
    assert "NOT private" in warning
    payload = json.loads(report.read_text())
    assert payload["private"] is False
    assert payload["not_private_because"] == ["seeded"]
    assert "seed" not in payload["command"]
    for text in (out.read_text(), report.read_text(), stdout, err):
        assert str(SEED) not in text
        assert str(SEED + 1) not in text  # the sampling seed


def test_unseeded_synth_is_private_and_does_not_warn(cli, coded_csv, tmp_path):
    csv, domain = coded_csv
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    code, _, err = cli("synth", csv, "--domain", domain, *SYNTH, "--out", out,
                       "--report", report)
    assert code == 0, err
    assert _warning_lines(err) == []
    payload = json.loads(report.read_text())
    assert payload["private"] is True and payload["not_private_because"] == []
    code, _, err = cli("synth", csv, "--domain", domain, *SYNTH, "--out", out,
                       "--report", report, "--evaluate")
    assert code == 0, err
    payload = json.loads(report.read_text())
    assert payload["private"] is False and payload["not_private_because"] == ["evaluated"]


def test_seeded_topk_warns_and_never_shows_the_seed(cli, counts_csv, tmp_path):
    items = tmp_path / "items.txt"
    items.write_text("a\nb\nc\nd\ne\n")
    out = tmp_path / "top.csv"
    base = ["topk", counts_csv, "--k", 2, "--epsilon", 1, "--item-column", "film",
            "--count-column", "votes", "--items", items, "--seed", SEED]
    for extra in ([], ["--out", out]):
        code, stdout, err = cli(*base, *extra)
        assert code == 0, err
        [warning] = _warning_lines(err)
        assert "--seed" in warning and "NOT private" in warning
        assert str(SEED) not in stdout + err
    assert str(SEED) not in out.read_text()


def test_a_bad_seed_is_not_echoed(cli, counts_csv, coded_csv, tmp_path):
    csv, domain = coded_csv
    code, _, err = cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out",
                       tmp_path / "o.csv", "--seed", -SEED)
    assert code == 2 and "--seed" in err and str(SEED) not in err
    code, _, err = cli("topk", counts_csv, "--k", 1, "--epsilon", 1, "--item-column", "film",
                       "--count-column", "votes", "--seed", -SEED)
    assert code == 2 and "--seed" in err and str(SEED) not in err
