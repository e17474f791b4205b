"""``fastmwem synth`` end to end, and its bad-input cases (one line, exit 2, no output file)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fastmwem.cli import main


def run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_synth_from_csv_and_domain(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                        "--workload", "marginals:2", "--rounds", 5, "--seed", 3,
                        "--report", report], capsys)
    assert code == 0, err
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["a", "b", "c", "d"]
    assert frame["b"].between(0, 2).all()
    payload = json.loads(report.read_text())
    assert payload["private"] is False  # seeded: the noise can be replayed
    assert payload["not_private_because"] == ["seeded"]
    assert "evaluation" not in payload
    assert len(payload["rounds"]) == 5
    assert len(payload["privacy"]["ledger"]) == 11


def test_synth_rows_and_evaluate_marks_report_not_private(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 2, "--out", out,
                        "--rounds", 3, "--seed", 1, "--rows", 123, "--report", report,
                        "--evaluate", "--workload", "marginals:1-2"], capsys)
    assert code == 0, err
    assert len(pd.read_csv(out)) == 123
    payload = json.loads(report.read_text())
    assert payload["private"] is False
    assert payload["not_private_because"] == ["seeded", "evaluated"]
    assert 0 <= payload["evaluation"]["mean_group_l1"] <= 2
    assert "NOT PRIVATE" in err


@pytest.mark.parametrize("sampling", ["systematic", "independent"])
def test_synth_sampling_methods(coded_csv, tmp_path, capsys, sampling):
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                        "--rounds", 3, "--seed", 2, "--rows", 500, "--sampling", sampling,
                        "--report", report], capsys)
    assert code == 0, err
    assert len(pd.read_csv(out)) == 500
    assert json.loads(report.read_text())["command"]["sampling"] == sampling


@pytest.mark.parametrize("flag, value", [("--sampling", "stratified"), ("--model", "tree")])
def test_synth_refuses_an_unknown_choice(coded_csv, tmp_path, capsys, flag, value):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    with pytest.raises(SystemExit) as exit_info:
        main(["synth", str(csv), "--domain", str(domain), "--epsilon", "1", "--out", str(out),
              flag, value])
    assert exit_info.value.code == 2
    assert flag in capsys.readouterr().err
    assert not out.exists()


def test_synth_demo_runs(tmp_path, capsys):
    out = tmp_path / "demo.csv"
    code, _, err = run(["synth", "--demo", "--epsilon", 1, "--out", out, "--rounds", 3,
                        "--reuse-passes", 2, "--seed", 0], capsys)
    assert code == 0, err
    frame = pd.read_csv(out)
    assert frame.shape[1] == 16
    assert 20_000 < len(frame) < 23_000


@pytest.mark.parametrize("flags, passes, chosen", [
    ([], 50, "default"), (["--privacy", "zcdp", "--delta", "1e-6"], 50, "default"),
    (["--reuse-passes", "4"], 4, "given")])
def test_synth_report_says_how_many_reuse_passes(coded_csv, tmp_path, capsys, flags, passes,
                                                 chosen):
    command = _reported_command(coded_csv, tmp_path, capsys, flags)
    assert (command["reuse_passes"], command["reuse_passes_chosen"]) == (passes, chosen)


def _reported_command(coded_csv, tmp_path, capsys, flags):
    csv, domain = coded_csv
    report = tmp_path / "r.json"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--rounds", 2,
                        "--out", tmp_path / "s.csv", "--report", report, *flags], capsys)
    assert code == 0, err
    return json.loads(report.read_text())["command"]


@pytest.mark.parametrize("flags, model, estimator", [
    ([], "dense", "final-fit"), (["--privacy", "zcdp", "--delta", "1e-6"], "junction-tree",
                                 "final-fit"),
    (["--privacy", "zcdp", "--delta", "1e-6", "--model", "dense"], "dense", "passes"),
    (["--model", "junction-tree"], "junction-tree", "final-fit")])
def test_synth_model_is_the_default_or_as_given(coded_csv, tmp_path, capsys, flags, model,
                                                estimator):
    csv, domain = coded_csv
    report = tmp_path / "r.json"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--rounds", 2,
                        "--out", tmp_path / "s.csv", "--report", report, *flags], capsys)
    assert code == 0, err
    written = json.loads(report.read_text())
    assert written["model"]["kind"] == model
    assert written["command"]["estimator"] == estimator


@pytest.mark.parametrize("flags, estimator, chosen", [
    ([], "final-fit", "default"), (["--privacy", "zcdp", "--delta", "1e-6"], "final-fit", "default"),
    (["--estimator", "passes"], "passes", "given"), (["--estimator", "fit"], "fit", "given")])
def test_synth_report_says_which_estimator_ran(coded_csv, tmp_path, capsys, flags, estimator,
                                               chosen):
    command = _reported_command(coded_csv, tmp_path, capsys, flags)
    assert (command["estimator"], command["estimator_chosen"]) == (estimator, chosen)


BAD = [
    (["--epsilon", "0"], "epsilon"),
    (["--epsilon", "-1"], "epsilon"),
    (["--epsilon", "nan"], "epsilon"),
    (["--epsilon", "inf"], "epsilon"),
    (["--epsilon", "1", "--rounds", "0"], "rounds"),
    (["--epsilon", "1", "--rounds", "99"], "rounds"),
    (["--epsilon", "1", "--workload", "marginals:9"], "marginal order"),
    (["--epsilon", "1", "--workload", "cubes:2"], "unknown workload"),
    (["--epsilon", "1", "--workload", "marginals"], "workload"),
    (["--epsilon", "1", "--rows", "0"], "--rows"),
    (["--epsilon", "1", "--seed", "-4"], "--seed"),
    (["--epsilon", "1", "--reuse-passes", "-1"], "reuse_passes"),
]


@pytest.mark.parametrize("extra, message", BAD)
def test_bad_arguments(coded_csv, tmp_path, capsys, extra, message):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    code, _, err = run(["synth", csv, "--domain", domain, "--out", out, *extra], capsys)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_bad_files(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    bad_domain = tmp_path / "bad.json"
    bad_domain.write_text("{not json")
    small_domain = tmp_path / "small.json"
    small_domain.write_text(json.dumps({"a": 2, "b": 2, "c": 2, "d": 2}))
    missing_col = tmp_path / "missing.json"
    missing_col.write_text(json.dumps({"a": 2, "b": 3, "c": 2, "d": 2, "e": 2}))
    cases = [
        ([tmp_path / "nope.csv", "--domain", domain], "does not exist"),
        ([csv, "--domain", bad_domain], "not valid JSON"),
        ([csv, "--domain", small_domain], "'b'"),
        ([csv, "--domain", missing_col], "'e'"),
        # without --domain or --schema the schema is drafted from INPUT, in memory
        ([csv, "--engine", "duckdb"], "give --schema SCHEMA.json to count with --engine duckdb"),
        ([csv, "--domain", domain, "--demo"], "--demo"),
    ]
    for argv, message in cases:
        code, _, err = run(["synth", *argv, "--epsilon", 1, "--out", out], capsys)
        assert code == 2, argv
        assert message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1
        assert not out.exists()
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1,
                        "--out", tmp_path / "no-such-dir" / "x.csv"], capsys)
    assert code == 2 and "does not exist" in err


def test_failed_run_keeps_existing_output(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    out.write_text("previous\n")
    code, _, _ = run(["synth", csv, "--domain", domain, "--epsilon", "-1", "--out", out], capsys)
    assert code == 2
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".fastmwem-")] == []


def test_console_entry_point(tmp_path):
    out = tmp_path / "syn.csv"
    done = subprocess.run(
        [sys.executable, "-m", "fastmwem", "synth", "--demo", "--epsilon", "0", "--out", str(out)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2
    assert "epsilon" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_usage_errors_are_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fastmwem", "synth", "--demo", "--epsilon", "abc"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "--epsilon" in done.stderr


def test_synth_with_schema_decodes_raw_labels(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n = 2000
    raw = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "age": rng.uniform(18, 90, n).round(1),
        "job": rng.choice(["clerk", "nurse", "pilot"], n, p=[0.6, 0.3, 0.1]),
    })
    csv = tmp_path / "raw.csv"
    raw.to_csv(csv, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": [
        {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "bins": 10},
        {"name": "job", "type": "categorical", "categories": ["clerk", "nurse", "pilot"]},
    ]}))
    out = tmp_path / "syn.csv"
    code, _, err = run(["synth", csv, "--schema", schema, "--epsilon", 1, "--out", out,
                        "--workload", "marginals:2", "--rounds", 3, "--seed", 2,
                        "--evaluate"], capsys)
    assert code == 0, err
    assert "records_mean_group_l1=" in err  # counted as codes, written decoded
    frame = pd.read_csv(out)
    assert set(frame["sex"]) <= {"F", "M"}
    assert set(frame["job"]) <= {"clerk", "nurse", "pilot"}
    assert frame["age"].between(0, 100).all()

    raw.loc[7, "job"] = "astronaut"
    raw.to_csv(csv, index=False)
    out.unlink()
    code, _, err = run(["synth", csv, "--schema", schema, "--epsilon", 1, "--out", out,
                        "--workload", "marginals:2", "--rounds", 3], capsys)
    assert code == 2
    assert "job" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("workload", ["ranges:40:a,b", "ranges:30", "counting:25",
                                      "marginals:1-3"])
def test_synth_workload_kinds(coded_csv, tmp_path, capsys, workload):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                        "--workload", workload, "--rounds", 4, "--seed", 0], capsys)
    assert code == 0, err
    assert len(pd.read_csv(out)) > 0


def test_synth_parities_need_binary_attributes(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                        "--workload", "parities:2"], capsys)
    assert code == 2 and "'b' has 3 values" in err
    assert not out.exists()


def test_progress_bar_goes_to_stderr(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    code, stdout, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                             "--rounds", 3, "--seed", 0, "--progress"], capsys)
    assert code == 0
    assert "MWEM" in err and "round" in err
    assert stdout == ""


def test_synth_on_a_domain_above_the_dense_limit(tmp_path, capsys):
    """Adult (6.4e17 cells): a factored model, chosen by itself, with the same options."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = run(["synth", data / "adult-2000.csv", "--domain",
                        data / "adult-2000-domain.json", "--epsilon", 1, "--out", out,
                        "--rounds", 5, "--seed", 0, "--report", report, "--evaluate",
                        "--workload", "marginals:2"], capsys)
    assert code == 0, err
    frame = pd.read_csv(out)
    assert frame.shape[1] == 14 and 1500 < len(frame) < 2500
    payload = json.loads(report.read_text())
    assert payload["model"]["kind"] == "junction-tree"
    assert len(payload["rounds"]) == 5
    evaluation = payload["evaluation"]
    assert 0 <= evaluation["mean_group_l1"] <= 2 and np.isfinite(evaluation["relative_entropy"])
    assert "NOT PRIVATE" in err


def test_allow_uncertified_runs_an_approximate_index_and_says_it_is_not_private(
        coded_csv, tmp_path, capsys):
    pytest.importorskip("hnswlib")
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    argv = ["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
            "--workload", "counting:60", "--rounds", 3, "--selection", "lazy",
            "--index", "hnswlib", "--report", report]
    code, _, err = run(argv, capsys)
    assert code == 2 and "no certified gap" in err and "--allow-uncertified" in err
    assert not out.exists() and not report.exists()
    code, _, err = run(argv + ["--allow-uncertified"], capsys)
    assert code == 0, err
    assert "NO differential-privacy guarantee" in err
    payload = json.loads(report.read_text())
    assert payload["private"] is False
    assert payload["not_private_because"] == ["uncertified approximate top-k oracle"]


def test_allow_uncertified_needs_the_lazy_selection(coded_csv, tmp_path, capsys):
    csv, domain = coded_csv
    out = tmp_path / "syn.csv"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                        "--allow-uncertified"], capsys)
    assert code == 2 and "allow_uncertified" in err and "lazy" in err
    assert not out.exists()


def written_records_error(out, domain_json, workload_spec, true_codes):
    """``mean_group_l1`` of the written CSV against the real codes, recomputed from the files."""
    from fastmwem.data import Dataset, Domain
    from fastmwem.evaluation import RecordCounts, answer_error
    from fastmwem.workloads.spec import parse_workload

    domain = Domain.from_json(domain_json)
    workload = parse_workload(workload_spec, domain)
    written, real = RecordCounts(workload), RecordCounts(workload)
    written.add(Dataset.from_csv(out, domain).records)
    real.add(true_codes)
    return answer_error(real.answers(), written.answers(), workload)["mean_group_l1"]


@pytest.mark.parametrize("sampling", ["matched", "independent"])
def test_evaluate_scores_the_written_records_too(coded_csv, tmp_path, capsys, sampling):
    """Dense model: the report's records_ figures are those of the file on disk."""
    from fastmwem.data import Dataset, Domain

    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    code, _, err = run(["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out,
                        "--rounds", 4, "--seed", 3, "--evaluate", "--report", report,
                        "--workload", "marginals:2", "--sampling", sampling], capsys)
    assert code == 0, err
    evaluation = json.loads(report.read_text())["evaluation"]
    real = Dataset.from_csv(csv, Domain.from_json(domain)).records
    assert evaluation["records_mean_group_l1"] == pytest.approx(
        written_records_error(out, domain, "marginals:2", real), rel=1e-9)
    assert "records_mean_group_l1=" in err


def test_evaluate_scores_factored_records_written_in_blocks(tmp_path, capsys, monkeypatch):
    """Adult (junction tree), three blocks of records: counted block by block."""
    from pathlib import Path

    from fastmwem.data import Dataset, Domain
    from fastmwem.release import result as result_module

    monkeypatch.setattr(result_module, "CHUNK_ROWS", 700)
    data = Path(__file__).resolve().parents[1] / "data"
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    domain = data / "adult-2000-domain.json"
    code, _, err = run(["synth", data / "adult-2000.csv", "--domain", domain, "--epsilon", 1,
                        "--out", out, "--rounds", 3, "--seed", 0, "--report", report,
                        "--evaluate", "--workload", "marginals:2", "--rows", 2000], capsys)
    assert code == 0, err
    evaluation = json.loads(report.read_text())["evaluation"]
    real = Dataset.from_csv(data / "adult-2000.csv", Domain.from_json(domain)).records
    assert evaluation["records_mean_group_l1"] == pytest.approx(
        written_records_error(out, domain, "marginals:2", real), rel=1e-9)
    # matched records answer the workload close to the model (within rounding of 2,000 rows)
    assert abs(evaluation["records_mean_group_l1"] - evaluation["mean_group_l1"]) < 0.02


@pytest.mark.parametrize("rows, given, used, note", [
    (400, None, "matched", False),
    (600, None, "systematic", True),
    (600, "matched", "matched", False),
    (400, "independent", "independent", False),
])
def test_default_sampling_matches_up_to_a_row_count(coded_csv, tmp_path, capsys, monkeypatch,
                                                    rows, given, used, note):
    from fastmwem.models import sampling as _sampling

    monkeypatch.setattr(_sampling, "AUTO_MATCH_ROWS", 500)
    csv, domain = coded_csv
    out, report = tmp_path / "syn.csv", tmp_path / "report.json"
    argv = ["synth", csv, "--domain", domain, "--epsilon", 1, "--out", out, "--rounds", 3,
            "--seed", 2, "--rows", rows, "--report", report]
    code, _, err = run(argv + ([] if given is None else ["--sampling", given]), capsys)
    assert code == 0, err
    payload = json.loads(report.read_text())["command"]
    assert payload["sampling"] == used
    assert payload["sampling_chosen"] == ("default" if given is None else "given")
    assert ("written systematically, not matched" in err) is note
    chosen = "default" if given is None else "given"
    assert f"{used} records ({chosen})" in err  # the summary line says how they were drawn
