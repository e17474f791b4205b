"""The quality report: its numbers on hand-made data, its text, its HTML page (also in Chromium)."""

from __future__ import annotations

import base64
import collections
import itertools
import json
import math
import os
import re

import numpy as np
import pandas as pd
import pytest

import fastmwem
from fastmwem.data import Categorical, Dataset, Domain, Integer, Numeric, Schema
from fastmwem.quality import (
    MarginalCounts,
    cramers_v,
    independent_answers,
    independent_table,
    marginal_plan,
    quality_report,
    total_variation,
)
from fastmwem.workloads import Marginals
from tests._browser import headless_chrome

AB = Domain(["a", "b"], [2, 2])
# a and b always agree in the real data; the synthetic data keeps 3/4 of that.
REAL_AB = [[0, 0]] * 4 + [[1, 1]] * 4
SYNTHETIC_AB = [[0, 0]] * 3 + [[1, 1]] * 3 + [[0, 1], [1, 0]]


def tiny_report(**kwargs):
    return quality_report(Dataset(REAL_AB, AB), Dataset(SYNTHETIC_AB, AB), **kwargs)


def test_total_variation_is_half_the_l1_distance_of_the_normalised_tables():
    assert total_variation(np.array([4.0, 0.0]), np.array([1.0, 1.0])) == 0.5
    assert total_variation(np.array([2.0, 0.0]), np.array([0.0, 7.0])) == 1.0
    assert total_variation(np.array([[1.0, 3.0]]), np.array([[2.0, 6.0]])) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        total_variation(np.ones(2), np.ones(3))


def test_cramers_v_on_hand_tables():
    assert cramers_v(np.array([[4.0, 0.0], [0.0, 4.0]])) == 1.0
    # phi^2 = sum p^2 / (p_row p_col) - 1 = (2 * 9/16 + 2 * 1/16) - 1 = 1/4
    assert cramers_v(np.array([[3.0, 1.0], [1.0, 3.0]])) == pytest.approx(0.5)
    assert cramers_v(np.array([[2.0, 2.0], [1.0, 1.0]])) == pytest.approx(0.0)
    # a column with one value in the data: no association can be measured
    assert math.isnan(cramers_v(np.array([[5.0, 3.0], [0.0, 0.0]])))


def test_the_numbers_of_a_tiny_hand_made_example():
    report = tiny_report()
    (pair,) = report.scores[2]
    assert pair.attributes == ("a", "b")
    # real [[1/2, 0], [0, 1/2]], synthetic [[3/8, 1/8], [1/8, 3/8]]
    assert pair.tvd == pytest.approx(0.25)
    # independent columns with the synthetic 1-way marginals (1/2, 1/2): every cell 1/4
    assert pair.baseline_tvd == pytest.approx(0.5)
    assert [s.tvd for s in report.scores[1]] == [0.0, 0.0]
    assert report.mean_error(2) == pytest.approx(0.25)
    assert report.baseline_error(2) == pytest.approx(0.5)
    assert report.kept_share == pytest.approx(0.5)
    assert "keeps 50% of the pairwise structure" in report.verdict
    assert report.association_real[0, 1] == 1.0
    assert report.association_synthetic[1, 0] == pytest.approx(0.5)
    assert report.rows == (8, 8)
    assert report.totals == {1: 2, 2: 1}  # no 3-way marginal in two columns


def test_to_dict_is_json_ready_and_says_not_private():
    payload = tiny_report().to_dict()
    text = json.dumps(payload, allow_nan=False)
    assert payload["private"] is False
    assert payload["marginals"]["2"] == {"scored": 1, "of": 1, "mean_tvd": pytest.approx(0.25),
                                         "baseline_mean_tvd": pytest.approx(0.5),
                                         "max_tvd": pytest.approx(0.25)}
    assert payload["worst_pairs"] == [{"attributes": ["a", "b"], "tvd": pytest.approx(0.25),
                                       "baseline_tvd": pytest.approx(0.5)}]
    assert payload["columns"][0]["real"] == [0.5, 0.5]
    assert "Cramer's V" in payload["association_measure"] and "0 = identical" in text


def test_summary_explains_the_scale_and_gives_the_baseline():
    text = tiny_report().summary()
    assert "NOT PRIVATE" in text
    assert "0 = identical, 1 = disjoint" in text and "L1 runs from 0 to 2" in text
    assert "independent columns" in text
    assert re.search(r"2-way \(1 of 1\)\s+0\.2500\s+0\.5000", text)


def _brute_tvd(real, synthetic, axes):
    """TVD of one marginal counted record by record (independent of the library's tables)."""
    r = collections.Counter(tuple(row[list(axes)]) for row in real)
    s = collections.Counter(tuple(row[list(axes)]) for row in synthetic)
    return 0.5 * sum(abs(r[c] / len(real) - s[c] / len(synthetic)) for c in set(r) | set(s))


def test_the_worst_pairs_are_ordered_by_their_total_variation():
    rng = np.random.default_rng(7)
    n = 400
    a = rng.integers(0, 3, n)
    real = np.column_stack([a, (a + (rng.random(n) < 0.1)) % 3, rng.integers(0, 2, n),
                            a % 2, rng.integers(0, 4, n)])
    synthetic = np.column_stack([rng.integers(0, 3, n) for _ in range(2)]
                                + [rng.integers(0, 2, n), rng.integers(0, 2, n),
                                   rng.integers(0, 4, n)])
    domain = Domain(["a", "b", "c", "d", "e"], [3, 3, 2, 2, 4])
    report = quality_report(Dataset(real, domain), Dataset(synthetic, domain), worst=4)
    expected = {pair: _brute_tvd(real, synthetic, domain.axes(pair))
                for pair in itertools.combinations(domain.attributes, 2)}
    assert {s.attributes: s.tvd for s in report.scores[2]} == pytest.approx(expected)
    ranked = sorted(expected, key=lambda p: -expected[p])[:4]
    assert [s.attributes for s in report.worst] == ranked
    assert [s.tvd for s in report.worst] == sorted((s.tvd for s in report.worst), reverse=True)
    assert report.worst[0].attributes == ("a", "b")  # the strongest real pair, lost
    assert len(report.scores[3]) == 10  # 3-way marginals: cheap here


def test_raw_frames_are_binned_by_the_schema():
    schema = Schema([Categorical("sex", ["F", "M"]), Numeric("age", 0, 100, bins=2)])
    real = pd.DataFrame({"sex": ["F", "F", "M", "M"], "age": [10, 20, 60, 99.0],
                         "id": [1, 2, 3, 4]})  # a column outside the schema is left out
    synthetic = pd.DataFrame({"age": [30.0, 70, 10, 80], "sex": ["F", "F", "M", "M"]})
    report = quality_report(real, synthetic, schema=schema)
    assert report.labels == (("F", "M"), ("[0, 50)", "[50, 100]"))
    assert report.scores[2][0].tvd == pytest.approx(0.5)
    # the same codes as Datasets give the same figures
    codes = quality_report(schema.encode(real, extra_columns="ignore"), schema.encode(synthetic))
    assert codes.to_dict()["marginals"] == report.to_dict()["marginals"]


def test_a_given_baseline_is_scored_instead_of_independent_columns():
    baseline = Dataset([[0, 0]] * 4 + [[1, 1]] * 3 + [[0, 1]], AB)
    report = tiny_report(baseline=baseline)
    assert report.scores[2][0].baseline_tvd == pytest.approx(1 / 8)
    assert report.baseline == "the baseline data given"
    assert report.kept_share == pytest.approx(1 - 0.25 / 0.125)
    assert "further from the real pairs than the baseline" in report.verdict


def test_bad_inputs_are_refused_without_their_values():
    schema = Schema([Categorical("job", ["clerk", "nurse"])])
    real = pd.DataFrame({"job": ["clerk", "nurse"]})
    with pytest.raises(ValueError, match="give schema= to bin it"):
        quality_report(real, real)
    with pytest.raises(ValueError, match="^synthetic: ") as info:
        quality_report(real, pd.DataFrame({"job": ["astronaut", "nurse"]}), schema=schema)
    assert "astronaut" not in str(info.value)
    with pytest.raises(ValueError, match="the real data .* must be the same"):
        quality_report(Dataset(REAL_AB, AB), Dataset([[0]], Domain(["a"], [2])))
    with pytest.raises(TypeError, match="DataFrame .* or a Dataset"):
        quality_report(np.array(REAL_AB), Dataset(REAL_AB, AB))
    with pytest.raises(ValueError, match="has no records"):
        quality_report(Dataset(REAL_AB, AB), MarginalCounts(AB, [("a",), ("b",), ("a", "b")]))
    with pytest.raises(ValueError, match="max_marginals must be >= 1"):
        tiny_report(max_marginals=0)


def test_the_plan_spreads_pairs_and_scores_three_way_marginals_only_when_cheap():
    domain = Domain([f"c{i}" for i in range(12)], [2] * 12)
    plan, notes = marginal_plan(domain, max_marginals=30)
    assert len(plan[1]) == 12 and len(plan[2]) == 30 and 3 not in plan
    assert plan[2][0] == ("c0", "c1") and plan[2][-1] == ("c10", "c11")
    assert any("30 of 66 pairs" in n for n in notes) and any("3-way" in n for n in notes)
    full, notes = marginal_plan(domain)
    assert len(full[2]) == 66 and len(full[3]) == 220 and notes == []
    # wide columns: pairs of more than 2**20 cells are left out, the rest kept within 2**23
    wide = Domain([f"w{i}" for i in range(40)], [1100] + [1000] * 39)
    plan, notes = marginal_plan(wide)
    assert all("w0" not in pair for pair in plan[2])
    assert 0 < len(plan[2]) <= 2**23 // 1000**2 and 3 not in plan
    assert any("39 pairs of columns with more than" in n for n in notes)


def test_marginal_counts_of_blocks_match_the_dataset():
    rng = np.random.default_rng(3)
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    records = np.column_stack([rng.integers(0, n, 50) for n in domain.shape])
    sets = [("a",), ("c", "a"), ("a", "b", "c")]
    counts = MarginalCounts(domain, sets)
    for block in np.array_split(records, 3):
        counts.add(block)
    data = Dataset(records, domain)
    for got, want in zip(counts.marginals(sets), data.marginals(sets)):
        np.testing.assert_array_equal(got, want)
    assert len(counts) == 50
    with pytest.raises(ValueError, match="was not counted"):
        counts.marginal("b")


def test_independent_answers_are_the_workload_on_the_product_histogram():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    one_way = [np.array([1.0, 3.0]), np.array([2.0, 1.0, 1.0]), np.array([5.0, 5.0])]
    workload = Marginals.all_kway(domain, 2)
    product = independent_table(one_way).reshape(-1)
    np.testing.assert_allclose(independent_answers(workload, one_way), workload.answer(product))


def _images(page: str) -> list[str]:
    return re.findall(r'<img src="([^"]*)"', page)


def test_the_page_is_self_contained_with_a_banner_and_one_image_per_chart():
    report = tiny_report()
    page = report.html()
    assert 'class="banner"' in page and "NOT PRIVATE: computed from the real data" in page
    # the error chart, one per worst pair, the association pair, one per column
    sources = _images(page)
    assert len(sources) == 1 + 1 + 1 + 2
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "<link" not in page and "@import" not in page


def test_a_single_column_has_no_pairs_to_score():
    domain = Domain(["a"], [3])
    report = quality_report(Dataset([[0], [1], [2], [2]], domain),
                            Dataset([[0], [0], [2], [2]], domain))
    assert sorted(report.scores) == [1] and report.worst == ()
    assert report.mean_error(2) is None and report.kept_share is None
    assert report.verdict.startswith("One column") and "0.250" in report.verdict
    assert json.dumps(report.to_dict(), allow_nan=False)
    assert "2-way" not in report.summary()
    assert len(_images(report.html())) == 2  # the error chart and the column


def test_names_are_escaped_in_the_page():
    domain = Domain(["<b>x</b>", "$y$"], [2, 2])
    report = quality_report(Dataset(REAL_AB, domain), Dataset(SYNTHETIC_AB, domain))
    page = report.html()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt; x $y$" in page


def test_to_html_replaces_the_file_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("old")
    os.chmod(target, 0o640)
    report = tiny_report()
    report.to_html(target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert os.stat(target).st_mode & 0o777 == 0o640

    def broken(fh, *args, **kwargs):
        raise OSError(28, "No space left on device")

    target.write_text("old")
    monkeypatch.setattr("fastmwem.quality._html.os.fsync", broken)
    with pytest.raises(OSError, match="No space left"):
        report.to_html(target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_the_package_exports_the_report_lazily():
    assert fastmwem.quality_report is quality_report
    assert "quality_report" in fastmwem.__all__ and "QualityReport" in fastmwem.__all__


# -- in a browser ---------------------------------------------------------------------------



@pytest.fixture(scope="module")
def chrome():
    yield from headless_chrome()


def test_every_image_of_the_page_renders_in_chromium(chrome, tmp_path):
    rng = np.random.default_rng(5)
    schema = Schema([Categorical("sex", ["F", "M"]), Numeric("age", 0, 90, bins=9),
                     Categorical("job", ["clerk", "nurse", "pilot"])])
    n = 300
    sex = rng.choice(["F", "M"], n)
    real = pd.DataFrame({"sex": sex, "age": rng.uniform(0, 90, n),
                         "job": np.where(sex == "F", "nurse", rng.choice(["clerk", "pilot"], n))})
    synthetic = real.sample(frac=1.0, random_state=1).reset_index(drop=True)
    synthetic["job"] = rng.choice(["clerk", "nurse", "pilot"], n)
    path = tmp_path / "report.html"
    quality_report(real, synthetic, schema=schema).to_html(path)
    chrome.get(path.as_uri())
    widths = chrome.execute_script(
        "return Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0)")
    assert len(widths) == 1 + 3 + 1 + 3  # errors, 3 pairs, association, 3 columns
    assert all(w > 0 for w in widths), widths
    banner = chrome.find_element("id", "not-private")
    assert banner.is_displayed() and banner.text == "NOT PRIVATE: computed from the real data"


def test_columns_with_a_missing_code_or_integer_bins_get_one_label_per_code():
    # A drafted schema's columns have missing codes and binned integers: the page drew one
    # tick per code and ran out of labels (IndexError) on a raw public table.
    schema = Schema([Categorical("job", ["clerk", "nurse"], missing=True),
                     Integer("year", edges=[1980, 1984, 1988], missing=True),
                     Numeric("wage", edges=[0.0, 1.0, 2.0], missing=True)])
    rng = np.random.default_rng(2)
    n = 60
    real = pd.DataFrame({"job": rng.choice(["clerk", "nurse", None], n),
                         "year": pd.array(rng.integers(1980, 1988, n), dtype="Int64"),
                         "wage": np.where(rng.random(n) < 0.2, np.nan, rng.uniform(0, 2, n))})
    report = quality_report(real, real.sample(frac=1.0, random_state=3), schema=schema)
    assert [len(lab) for lab in report.labels] == [3, 3, 3]
    assert report.labels[0][-1] == report.labels[1][-1] == "missing"
    assert report.labels[1][:2] == ("[1980, 1984)", "[1984, 1988)")
    assert "<img" in report.html()
