"""Each answer's noise scale and 95% interval: exact quantiles of the discrete laws used, what the
sparse vector certifies for synthetic answers, coverage, and the start-up warning of ``serve``."""

from __future__ import annotations

import math
import re
import sqlite3
from fractions import Fraction

import numpy as np
import pytest

from fastmwem.cli import main
from fastmwem.cli.ask import rounded
from fastmwem.data import Dataset, Domain
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.release.pmw import GRID, PMWConfig, PMWSession
from fastmwem.release.pmw.accuracy import (
    abs_quantile,
    answer_accuracy,
    difference_quantile,
    fit_advice,
    measured_accuracy,
    sv_noise_scale,
    synthetic_accuracy,
)
from fastmwem.service.core import QueryService
from fastmwem.service.store import open_store


def _pmf(b: float, width: int) -> tuple[np.ndarray, np.ndarray]:
    z = np.arange(-width, width + 1)
    a = math.exp(-1 / b)
    return z, (1 - a) / (1 + a) * a ** np.abs(z)


@pytest.mark.parametrize("b", [Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(40)])
def test_abs_quantile_is_the_smallest_integer_with_5_percent_beyond(b):
    z, p = _pmf(float(b), 4000)
    m = abs_quantile(b)
    assert p[np.abs(z) > m].sum() <= 0.05 < (p[np.abs(z) > m - 1].sum() if m > 0 else 1)


@pytest.mark.parametrize(("b1", "b2"), [(Fraction(3), Fraction(7)), (Fraction(20), Fraction(40)),
                                        (Fraction(5, 2), Fraction(1, 2))])
def test_difference_quantile_matches_the_convolution_of_the_two_laws(b1, b2):
    z, p1 = _pmf(float(b1), 3000)
    _, p2 = _pmf(float(b2), 3000)
    law = np.convolve(p1, p2[::-1])  # X - Y on -6000..6000
    s = np.arange(-6000, 6001)
    m = difference_quantile(b1, b2)
    assert law[s > m].sum() <= 0.05 < law[s > m - 1].sum()
    with pytest.raises(ValueError, match="two different scales"):
        difference_quantile(b1, b1)


CONFIG = PMWConfig(epsilon=1.0, alpha=0.05, max_updates=10, total=7000)


def test_a_measured_answer_has_the_noise_laws_scale_and_quantile():
    b = Geometric(epsilon=CONFIG.split()["measure"]).scale
    acc = measured_accuracy(CONFIG, 1.0, 1)
    assert acc.noise_scale == float(b) and acc.half_width == abs_quantile(b)
    assert acc.interval(1000.0) == [1000.0 - acc.half_width, 1000.0 + acc.half_width]
    # A real-valued query: its noise and interval in the answer's units (the grid's factor).
    weights = [0.3, -0.7, 0.1, 0.0]
    wide = answer_accuracy(CONFIG, 7000.0, Domain(["a", "b"], [2, 2]), {"vector": weights},
                           "measured")
    b_grid = Geometric(epsilon=CONFIG.split()["measure"], sensitivity=GRID).scale
    assert wide.noise_scale == pytest.approx(float(b_grid) * 0.7 / GRID, rel=1e-12)
    assert wide.half_width == pytest.approx(abs_quantile(b_grid) * 0.7 / GRID, rel=1e-12)


def test_a_synthetic_answer_is_certified_to_alpha_n_plus_the_tests_noise_margin():
    split = CONFIG.split()
    threshold_b = Geometric(epsilon=split["sv"] / 2, sensitivity=GRID + 1).scale
    query_b = Geometric(epsilon=split["sv"] / 4, sensitivity=GRID + 1).scale
    m = difference_quantile(threshold_b, query_b)
    acc = synthetic_accuracy(CONFIG, 7000.0, 1.0, 1)
    threshold = round(0.05 * 7000 * GRID)
    assert acc.half_width == math.floor((threshold + m - 0.5) / GRID) + 0.5
    assert acc.half_width > 0.05 * 7000  # alpha * n alone is not what is certified
    assert acc.noise_scale == pytest.approx(float(query_b) / GRID) == sv_noise_scale(CONFIG)


def test_intervals_cover_the_truth_at_least_95_percent():
    # 3,000 fresh sessions (seeded) answer one cell: measured answers miss the truth at most 5%
    # of the time, and "synthetic and outside its interval" happens at most 5% of the time.
    domain = Domain(["a"], [4])
    data = Dataset([[0]] * 60 + [[1]] * 10 + [[2]] * 20 + [[3]] * 10, domain)
    rng = np.random.default_rng(5)
    counts = {"measured": 0, "measured_miss": 0, "synthetic_miss": 0}
    runs = 3000
    for _ in range(runs):
        s = PMWSession(data, epsilon=0.5, alpha=0.2, max_updates=1, total=100, rng=rng)
        ans = s.answer({"cell": {"a": 0}})
        acc = answer_accuracy(s.config, s.total, domain, {"cell": {"a": 0}}, ans.source)
        low, high = acc.interval(ans.value)
        miss = not low <= 60 <= high
        counts[ans.source] = counts.get(ans.source, 0) + 1
        counts[f"{ans.source}_miss"] += miss
    assert 300 < counts["measured"] < runs - 300  # both kinds occur often
    three_sigma = 3 * math.sqrt(0.05 * 0.95 / runs)
    assert counts["measured_miss"] / counts["measured"] <= 0.05 + 3 * math.sqrt(
        0.05 * 0.95 / counts["measured"])
    assert counts["synthetic_miss"] / runs <= 0.05 + three_sigma


def test_service_answers_and_logs_carry_the_exact_noise_scale_and_interval(tmp_path):
    domain = Domain(["a", "b"], [2, 3])
    data = Dataset([[0, 1], [1, 2], [1, 0]] * 30, domain)
    config = PMWConfig(epsilon=4.0, alpha=0.1, max_updates=10, total=90)
    service = QueryService(open_store(str(tmp_path / "s.db")), data, config,
                           admin_token="admin.x", data_hash="h", rng=3)
    who = service.authenticate(f"Bearer {service.add_analyst('ann', 4.0)['token']}")
    answers = [service.answer(who, {"cell": {"a": i % 2, "b": i % 3}}, f"r{i}") for i in range(6)]
    for ans in answers:
        acc = answer_accuracy(config, 90.0, domain, ans["query"], ans["source"])
        assert ans["noise_scale"] == acc.noise_scale and ans["interval_level"] == 0.95
        assert ans["interval"] == acc.interval(ans["value"])
    assert {a["source"] for a in answers} == {"measured", "synthetic"}
    assert [(a["noise_scale"], a["interval"]) for a in service.log(who.analyst_id)] == \
        [(a["noise_scale"], a["interval"]) for a in answers]


def test_ask_rounds_numbers_for_display_only():
    assert rounded(0.019799999999999998) == 0.0198
    assert rounded({"v": [1390.5000000001, 7040.0, 1e-20], "s": "0.019799999999999998"}) == \
        {"v": [1390.5, 7040, 1e-20], "s": "0.019799999999999998"}


# -- the warning of serve ---------------------------------------------------------------------


def _options(message: str) -> dict[str, float]:
    return {flag: float(value) for flag, value in re.findall(r"(--[a-z-]+) ([0-9.]+)", message)}


def test_the_quick_start_settings_of_the_report_get_a_warning_with_settings_that_fit():
    config = PMWConfig(epsilon=1.0, alpha=0.05, max_updates=50)
    message = fit_advice(config, 7040.0)
    assert message is not None
    assert "alpha * n = 352 records" in message and "noise scale of 404 records" in message
    options = _options(message)
    assert set(options) == {"--alpha", "--epsilon", "--max-updates"}
    alpha, epsilon, updates = options["--alpha"], options["--epsilon"], options["--max-updates"]
    noise = sv_noise_scale(config)
    assert alpha * 7040 >= noise > (alpha - 0.0001) * 7040  # the smallest, to 3 digits
    assert sv_noise_scale(PMWConfig(epsilon=epsilon, alpha=0.05, max_updates=50)) <= 352
    assert sv_noise_scale(PMWConfig(epsilon=epsilon - 0.01, alpha=0.05, max_updates=50)) > 352
    assert sv_noise_scale(PMWConfig(epsilon=1.0, alpha=0.05, max_updates=int(updates))) <= 352
    assert sv_noise_scale(PMWConfig(epsilon=1.0, alpha=0.05, max_updates=int(updates) + 1)) > 352
    assert fit_advice(PMWConfig(epsilon=1.0, alpha=alpha, max_updates=50), 7040.0) is None


def _serve(tmp_path, monkeypatch, *extra: str) -> int:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: None)  # start, do not serve
    rows = "\n".join(f"{i % 2},{i % 3}" for i in range(7000))
    (tmp_path / "d.csv").write_text("a,b\n" + rows + "\n")
    (tmp_path / "d.json").write_text('{"a": 2, "b": 3}')
    return main(["serve", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "d.json"),
                 "--state", str(tmp_path / "s.db"), "--admin-token-file",
                 str(tmp_path / "admin"), "--epsilon", "1", *extra])


def test_serve_warns_with_the_noisy_count_it_uses(tmp_path, monkeypatch, capsys):
    assert _serve(tmp_path, monkeypatch, "--alpha", "0.05", "--max-updates", "50",
                  "--seed", "1") == 0
    err = capsys.readouterr().err
    with sqlite3.connect(tmp_path / "s.db") as conn:
        (total,) = conn.execute("SELECT total FROM session").fetchone()
    assert total != 7000  # the noisy count, public; never the true one
    warning = next(line for line in err.splitlines() if "AccuracyWarning" in line)
    assert f"(n = {total:,.0f})" in warning and "Settings that fit" in warning


def test_serve_does_not_warn_when_the_settings_fit(tmp_path, monkeypatch, capsys):
    assert _serve(tmp_path, monkeypatch, "--alpha", "0.05", "--max-updates", "10",
                  "--total", "7000") == 0
    assert "AccuracyWarning" not in capsys.readouterr().err
