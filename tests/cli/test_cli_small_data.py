"""``fastmwem synth`` on a table too small for its budget: one warning, and the predictions in the
report."""

from __future__ import annotations

import json

import pytest

from fastmwem.cli import main
from tests.release.test_release_small_data import table


@pytest.fixture
def small_csv(tmp_path):
    """300 records of 4 attributes of 8 codes each, and their domain JSON."""
    ds = table(300)
    csv = tmp_path / "small.csv"
    ds.to_dataframe().to_csv(csv, index=False)
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps(dict(zip(ds.domain.attributes, ds.domain.shape))))
    return csv, domain


def test_synth_on_a_small_table_warns_once_and_reports_the_predictions(small_csv, tmp_path,
                                                                       capsys):
    csv, domain = small_csv
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    code = main([str(a) for a in ("synth", csv, "--domain", domain, "--epsilon", 0.3,
                                  "--out", out, "--report", report, "--seed", 3)])
    err = capsys.readouterr().err
    assert code == 0
    assert err.count("SmallDataWarning") == 1
    line = next(x for x in err.splitlines() if "SmallDataWarning" in x)
    assert line.startswith("fastmwem synth: warning (SmallDataWarning): small data, regime "
                           "'one-way only': rounds cannot help")
    assert "predicted normalised L1 error" in line
    assert "0 rounds (default)" in err
    assert "within its noise" not in err  # the silent uniform output of before
    record = json.loads(report.read_text())
    choices = record["choices"]
    assert choices["regime"] == "one-way only" and choices["rounds"] == 0
    predicted = choices["predicted_errors"]
    names = sorted(m["name"] for m in predicted["marginals"])
    assert names == ["marginal(a0, a1, a2)", "marginal(a0, a1, a3)", "marginal(a0, a2, a3)",
                     "marginal(a1, a2, a3)"]
    assert all(m["predicted_error"] >= 1 for m in predicted["marginals"])
    assert predicted["one_way_only"] > 0
    assert predicted["records"] == choices["record_count"]
    assert [m["name"] for m in predicted["one_way"]] == [f"marginal(a{i})" for i in range(4)]
    labels = [entry["label"] for entry in record["privacy"]["ledger"]]
    assert labels == ["record count (Laplace)",
                      *[f"initial 1-way marginal a{i} (Laplace)" for i in range(4)]]
