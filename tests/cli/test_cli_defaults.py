"""``fastmwem synth`` defaults that work on any table, streamed output, and the row count."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fastmwem.accounting import Accountant
from fastmwem.data import Dataset, Domain
from fastmwem.evaluation import workload_error
from fastmwem.workloads import Marginals


def write_table(tmp_path, sizes, n, seed=0):
    """A CSV of ``n`` uniform random records over columns of the given sizes, and its domain."""
    rng = np.random.default_rng(seed)
    names = [f"c{i}" for i in range(len(sizes))]
    frame = pd.DataFrame({a: rng.integers(0, s, n) for a, s in zip(names, sizes)})
    csv, domain = tmp_path / "in.csv", tmp_path / "domain.json"
    frame.to_csv(csv, index=False)
    domain.write_text(json.dumps(dict(zip(names, sizes))))
    return csv, domain, Dataset(frame.to_numpy(), Domain(names, sizes))


def synth(cli, csv, domain, out, *extra):
    return cli("synth", csv, "--domain", domain, "--epsilon", 1, "--out", out, *extra)


@pytest.mark.parametrize("sizes", [[3], [2, 3], [2, 3, 2], [2, 2, 3, 2, 2, 2]])
def test_default_options_work_on_narrow_tables(cli, tmp_path, sizes):
    csv, domain, _ = write_table(tmp_path, sizes, 800)
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    code, _, err = synth(cli, csv, domain, out, "--report", report)
    assert code == 0, err
    command = json.loads(report.read_text())["command"]
    order = min(3, len(sizes))
    assert command["workload"] == f"marginals:{order}"
    groups = Marginals.all_kway(Domain([f"c{i}" for i in range(len(sizes))], sizes),
                                order).n_groups
    # (adaptive rounds may measure a group again: at most one per group plus the annealing's)
    assert 1 <= command["rounds"] <= max(groups, 2 * len(sizes) * 16)
    assert command["workload_chosen"] == command["rounds_chosen"] == "default"
    assert command["rows_chosen"] == "default"
    assert f"workload marginals:{order} (default)" in err
    assert f"{command['rounds']} round" in err and "(default)" in err
    assert len(pd.read_csv(out)) == command["rows_written"]


def test_given_options_keep_their_strict_errors(cli, tmp_path):
    csv, domain, _ = write_table(tmp_path, [2, 3, 2], 800)
    out = tmp_path / "o.csv"
    code, _, err = synth(cli, csv, domain, out, "--rounds", 25)
    assert code == 2 and "rounds (25) exceeds the 1 candidate groups" in err
    code, _, err = synth(cli, csv, domain, out, "--workload", "marginals:4")
    assert code == 2 and "marginal order must lie in 1..3" in err
    assert not out.exists()


def test_the_report_says_what_the_user_chose(cli, tmp_path):
    csv, domain, _ = write_table(tmp_path, [2, 3, 2, 2], 800)
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    code, _, err = synth(cli, csv, domain, out, "--report", report, "--workload", "marginals:2",
                         "--rounds", 3, "--rows", 50)
    assert code == 0, err
    command = json.loads(report.read_text())["command"]
    assert command["workload"] == "marginals:2" and command["rounds"] == 3
    assert command["workload_chosen"] == command["rounds_chosen"] == "given"
    assert command["rows_chosen"] == "given" and command["rows_written"] == 50
    assert command["noise_test"] is None
    assert "workload marginals:2 (given), 3 rounds (given)" in err


@pytest.mark.parametrize("sizes", [[2] * 7, [2, 3, 4, 2, 3, 4, 2]])
def test_defaults_do_no_worse_than_uniform_on_a_small_uniform_table(cli, tmp_path, sizes):
    # Before the defaults adapted, 25 rounds scored 0.31 (binary) and 0.58 (sizes 2..4) mean
    # 3-way marginal L1 here, where the uniform distribution scores 0.104 and 0.167.
    csv, domain, data = write_table(tmp_path, sizes, 500)
    w = Marginals.all_kway(data.domain, 3)
    uniform = workload_error(data.histogram(), np.ones(data.domain.size), w)["mean_group_l1"]
    scores = []
    for seed in range(3):
        report = tmp_path / f"r{seed}.json"
        code, _, err = synth(cli, csv, domain, tmp_path / "o.csv", "--seed", seed, "--evaluate",
                             "--report", report)
        assert code == 0, err
        scores.append(json.loads(report.read_text())["evaluation"]["mean_group_l1"])
    assert np.mean(scores) <= uniform + 1e-9


def test_rows_are_streamed_in_blocks(cli, tmp_path, monkeypatch):
    # Sampling 200,000 records at once needs about 20 MB, over this memory limit: before the
    # output was streamed, the run failed after the budget was spent.
    csv, domain, _ = write_table(tmp_path, [2, 3, 2, 2], 800)
    monkeypatch.setenv("FASTMWEM_MEMORY_LIMIT", "8M")
    monkeypatch.setattr("fastmwem.release.result.CHUNK_ROWS", 7000, raising=False)
    out = tmp_path / "o.csv"
    code, _, err = synth(cli, csv, domain, out, "--rows", 200_000, "--rounds", 2)
    assert code == 0, err
    lines = out.read_text().splitlines()
    assert lines[0] == "c0,c1,c2,c3" and lines.count("c0,c1,c2,c3") == 1
    frame = pd.read_csv(out)
    assert len(frame) == 200_000 and frame["c1"].between(0, 2).all()


def test_default_rows_beyond_the_disk_fail_before_mwem_is_charged(cli, tmp_path, monkeypatch):
    csv, domain, _ = write_table(tmp_path, [2, 3, 2, 2], 800)
    monkeypatch.setattr("fastmwem.cli.synth.free_disk_bytes", lambda path: 1000)
    # Every charge of every accountant goes through _commit (compose and compose_all alike;
    # check_fits with charge=False, which spends nothing).
    charged = []
    commit = Accountant._commit

    def recording(self, events, what, *, charge=True):
        commit(self, events, what, charge=charge)
        if charge:  # only charges that went through
            charged.extend(label for _, label in events)

    monkeypatch.setattr(Accountant, "_commit", recording)
    out = tmp_path / "o.csv"
    code, _, err = synth(cli, csv, domain, out)
    assert code == 2
    assert "noisy record count" in err and "disk" in err and "--rows" in err
    assert charged == ["record count (Laplace)"]
    assert not out.exists()


def test_a_count_below_one_writes_one_row_and_says_so(cli, tmp_path):
    csv, domain, _ = write_table(tmp_path, [2, 3, 2, 2], 800)
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    # At epsilon 1e-5 the count has noise of scale 1e7; the draw of seed 3 is negative.
    code, _, err = cli("synth", csv, "--domain", domain, "--epsilon", 1e-5, "--out", out,
                       "--seed", 3, "--report", report)
    assert code == 0, err
    assert len(pd.read_csv(out)) == 1
    assert "noisy record count (1, at least 1)" in err and "--rows" in err
    # No round can help at this budget: the 1-way marginals alone, with a warning (before the
    # small-data rule: one blind round whose noise test left the output uniform).
    assert "warning (SmallDataWarning)" in err and "0 rounds (default)" in err
    record = json.loads(report.read_text())
    assert record["choices"]["regime"] == "one-way only"
    assert record["updates_skipped"] is False


def test_the_demo_defaults_measure_supersets_and_say_so(cli, tmp_path):
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    code, _, err = cli("synth", "--demo", "--epsilon", 1, "--out", out, "--report", report,
                       "--seed", 4, "--evaluate")
    assert code == 0, err
    payload = json.loads(report.read_text())
    assert payload["command"]["candidates"] == "supersets"
    assert abs(payload["command"]["rounds"] - 20) <= 1
    assert payload["evaluation"]["mean_group_l1"] < 0.025  # mean 0.0148 over seeds 0-2
    assert payload["command"]["sampling"] == "matched"
