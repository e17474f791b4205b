"""``fastmwem synth`` on a raw public CSV with gaps and no schema, with its HTML report."""

from __future__ import annotations

import pandas as pd
import pytest

from tests._browser import headless_chrome
from tests.test_raw_table import MALES, check_synthetic, males


@pytest.fixture(scope="module")
def chrome():
    yield from headless_chrome()


@pytest.mark.slow
def test_the_cli_on_the_raw_csv_with_an_html_report(cli, tmp_path, chrome):
    out, page = tmp_path / "syn.csv", tmp_path / "report.html"
    code, _, err = cli("synth", MALES, "--epsilon", 1, "--delta", 1e-9, "--out", out,
                       "--seed", 0, "--evaluate", "--html", page)
    assert code == 0, err
    real = males()
    check_synthetic(real, pd.read_csv(out))
    chrome.get(page.as_uri())
    widths = chrome.execute_script(
        "return Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0)")
    assert len(widths) > len(real.columns) and all(w > 0 for w in widths)
