"""``fastmwem synth --evaluate --html``: the quality report page, its refusals, its baseline."""

from __future__ import annotations

import json
import re

import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.quality import quality_report


def synth(cli, csv, domain, out, *extra):
    return cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
               "--workload", "marginals:2", "--rounds", 4, "--seed", 3, "--rows", 600, *extra)


def test_html_writes_the_report_of_the_written_records(cli, coded_csv, tmp_path):
    csv, domain = coded_csv
    out, page, report = tmp_path / "syn.csv", tmp_path / "quality.html", tmp_path / "r.json"
    code, _, err = synth(cli, csv, domain, out, "--evaluate", "--html", page, "--report", report)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert "NOT PRIVATE: computed from the real data" in text
    # the error chart, 4 columns, the 6 pairs (fewer than 10), the association pair
    assert len(re.findall(r'<img src="data:image/png;base64,', text)) == 1 + 4 + 6 + 1
    # the page scores the file on disk against the input file
    d = Domain.from_json(domain)
    expected = quality_report(Dataset.from_csv(csv, d), Dataset.from_csv(out, d))
    assert f"quality report to {page}: {expected.verdict}" in err
    assert expected.verdict in text
    assert json.loads(report.read_text())["private"] is False


def test_the_evaluate_line_gives_scales_and_the_independent_baseline(cli, coded_csv, tmp_path):
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "r.json"
    code, _, err = synth(cli, csv, domain, out, "--evaluate", "--report", report)
    assert code == 0, err
    line = next(s for s in err.splitlines() if s.startswith("NOT PRIVATE evaluation"))
    assert "0 = exact, 2 = disjoint" in line and "nats (0 = the real distribution)" in line
    assert "for independent columns with the model's own 1-way marginals" in line
    evaluation = json.loads(report.read_text())["evaluation"]
    baseline = evaluation["baseline_mean_group_l1"]
    assert f"baseline_mean_group_l1={baseline:.4g}" in line
    # a and c share a latent cause: independent columns miss it, the fitted model does not
    assert evaluation["mean_group_l1"] < baseline <= 2


def test_html_without_evaluate_is_refused_before_any_budget(cli, coded_csv, tmp_path,
                                                            no_release):
    csv, domain = coded_csv
    out, page = tmp_path / "syn.csv", tmp_path / "quality.html"
    code, _, err = synth(cli, csv, domain, out, "--html", page)
    assert code == 2
    assert "--html" in err and "--evaluate" in err and "NOT private" in err
    assert not out.exists() and not page.exists()


@pytest.mark.parametrize("clash", ["input", "out"])
def test_html_over_another_file_of_the_run_is_refused(cli, coded_csv, tmp_path, no_release,
                                                      clash):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    page = csv if clash == "input" else out
    before = csv.read_bytes()
    code, _, err = synth(cli, csv, domain, out, "--evaluate", "--html", page)
    assert code == 2 and "--html" in err
    assert csv.read_bytes() == before and not out.exists()


def test_html_without_matplotlib_is_refused_before_any_budget(cli, coded_csv, tmp_path,
                                                              no_release, monkeypatch):
    def missing():
        raise ImportError("matplotlib is not installed: pip install 'fastmwem[report]'")

    monkeypatch.setattr("fastmwem.cli.synth.require_matplotlib", missing)
    csv, domain = coded_csv
    code, _, err = synth(cli, csv, domain, tmp_path / "syn.csv", "--evaluate",
                         "--html", tmp_path / "q.html")
    assert code == 2 and "--html: matplotlib is not installed" in err


def test_a_report_that_fails_leaves_no_output(cli, coded_csv, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("the report failed")

    monkeypatch.setattr("fastmwem.cli.synth.quality_report", broken)
    csv, domain = coded_csv
    out, page = tmp_path / "syn.csv", tmp_path / "quality.html"
    page.write_text("old")
    code, _, err = synth(cli, csv, domain, out, "--evaluate", "--html", page)
    assert code == 2 and "the report failed" in err
    assert not out.exists() and page.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "domain.json",
                                                          "quality.html"]
