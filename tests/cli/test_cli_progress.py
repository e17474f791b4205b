"""``fastmwem synth --progress`` covers every phase: rounds, final passes, sampling, scoring."""

from pathlib import Path

from fastmwem.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
# what only a progress bar writes: a bar's carriage return and its phases
MARKS = ("\r", "MWEM", "sampling records", "writing", "scoring")


def run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _adult(tmp_path, *flags):
    return ["synth", DATA / "adult-2000.csv", "--domain", DATA / "adult-2000-domain.json",
            "--epsilon", 1, "--out", tmp_path / "syn.csv", "--rounds", 2, "--seed", 0,
            "--sampling", "systematic", "--rows", 500, *flags]


def test_a_factored_run_shows_its_final_passes_sampling_and_scoring(tmp_path, capsys):
    code, out, err = run(_adult(tmp_path, "--evaluate", "--progress", "--estimator", "passes"),
                         capsys)
    assert code == 0 and out == ""
    assert "MWEM rounds (~" in err and "in all)" in err  # the estimate includes the final passes
    assert "MWEM final passes (~" in err and "/5000" in err  # units beyond the 2 rounds
    assert "scoring the model against the real data" in err
    assert "sampling records (~" in err and "writing" in err


def test_the_default_final_fit_shows_its_own_bar(tmp_path, capsys):
    code, out, err = run(_adult(tmp_path, "--progress"), capsys)
    assert code == 0 and out == ""
    assert "MWEM final fit (~" in err and "MWEM final passes" not in err


def test_no_progress_writes_no_bar(tmp_path, capsys):
    code, out, err = run(_adult(tmp_path, "--evaluate", "--no-progress"), capsys)
    assert code == 0 and out == ""
    assert "wrote 500 synthetic records" in err
    assert not [m for m in MARKS if m in err]
