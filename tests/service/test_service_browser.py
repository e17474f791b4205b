"""The budget page in real headless Chromium: it loads, shows the API's figures, each analyst's
totals, a chart over time with labelled axes and the log in labels with its intervals, and
refuses without a token (or with a wrong one); the API docs render from the service's own
files."""

from __future__ import annotations

import urllib.request

import pytest


def _fmt(x: float) -> str:
    """The page's number format: six significant digits, trailing zeros dropped."""
    return f"{x:.6g}"


@pytest.fixture(scope="module")
def served(module_server_factory):
    server = module_server_factory("--alpha", "0.01", "--max-updates", "20", "--total", "400",
                                   schema=True).start()
    eve, sam = server.analyst("eve", 0.5), server.analyst("sam", 0.5)
    for i in range(6):
        eve.ask({"cell": {"a": i % 2, "c": i % 4}})  # codes work with a schema too
    sam.ask({"cell": {"b": "F", "c": "west"}})
    return server


def _wait(driver, condition: str, timeout: float = 20.0) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(f"return {condition}"))


def test_budget_page_shows_the_api_figures(chrome, served, tmp_path):
    token = served.admin_file.read_text().strip()
    api = served.admin().owner_budget()
    log = served.admin().owner_log()
    chrome.get("about:blank")
    chrome.get(f"{served.url}/budget#token={token}")
    _wait(chrome, "document.body.getAttribute('data-loaded') === '1'")
    text = {key: chrome.find_element("id", key).text
            for key in ("epsilon", "spent", "remaining", "updates")}
    assert text == {"epsilon": _fmt(api["epsilon"]), "spent": _fmt(api["spent"]),
                    "remaining": _fmt(api["remaining"]),
                    "updates": f"{api['updates']} of {api['max_updates']}"}
    assert not chrome.find_element("id", "error").is_displayed()
    rows = [[td.text for td in r.find_elements("tag name", "td")]
            for r in chrome.find_elements("css selector", "#log tbody tr")]
    assert len(rows) == len(log) == 7
    assert [r[3] for r in rows] == [x["source"] for x in log]
    assert rows[0][2] == '{"cell":{"a":"no","c":"north"}}'  # asked in codes, shown in labels
    assert rows[-1][2] == '{"cell":{"b":"F","c":"west"}}'
    assert [r[5] for r in rows] == [f"[{_fmt(x['interval'][0])}, {_fmt(x['interval'][1])}]"
                                    for x in log]
    chrome.save_screenshot(str(tmp_path / "budget.png"))


def test_budget_page_shows_each_analysts_totals(chrome, served):
    api = served.admin().owner_budget()
    log = served.admin().owner_log()
    chrome.get("about:blank")
    chrome.get(f"{served.url}/budget#token={served.admin_file.read_text().strip()}")
    _wait(chrome, "document.body.getAttribute('data-loaded') === '1'")
    rows = [[td.text for td in r.find_elements("tag name", "td")]
            for r in chrome.find_elements("css selector", "#analysts tbody tr")]
    expected = []
    for a in api["analysts"]:
        mine = [x for x in log if x["analyst"] == a["name"]]
        expected.append([a["name"], _fmt(a["budget"]), _fmt(a["spent"]), _fmt(a["remaining"]),
                         str(len(mine)), str(sum(x["source"] == "measured" for x in mine))])
    assert rows == expected and [r[0] for r in rows] == ["eve", "sam"]


def test_budget_chart_has_labelled_axes_over_time(chrome, served, tmp_path):
    api = served.admin().owner_budget()
    chrome.get("about:blank")
    chrome.get(f"{served.url}/budget#token={served.admin_file.read_text().strip()}")
    _wait(chrome, "document.body.getAttribute('data-loaded') === '1'")
    text = {key: chrome.find_element("id", key).get_attribute("textContent")
            for key in ("x-label", "y-label")}
    assert text == {"x-label": "time (UTC)", "y-label": "epsilon"}
    y_ticks = [e.get_attribute("textContent")
               for e in chrome.find_elements("css selector", "#plot .y-tick")]
    assert y_ticks == [_fmt(api["epsilon"] * i / 4) for i in range(5)]
    x_ticks = [e.get_attribute("textContent")
               for e in chrome.find_elements("css selector", "#plot .x-tick")]
    assert len(x_ticks) == 5 and all(len(t) == 8 and t.count(":") == 2 for t in x_ticks)
    curve = chrome.find_element("id", "curve")
    assert len(curve.get_attribute("points").split()) == 2 * len(api["history"]) + 2
    assert float(curve.get_attribute("data-last")) == pytest.approx(api["remaining"])
    payers = {r["analyst"] or "data owner" for r in api["history"]}
    legend = {e.get_attribute("textContent")
              for e in chrome.find_elements("css selector", "#plot .legend")}
    assert legend == {"remaining (all)"} | {f"spent: {p}" for p in payers}
    for i, payer in enumerate(dict.fromkeys(r["analyst"] or "data owner" for r in api["history"])):
        spent = sum(r["cost"] for r in api["history"] if (r["analyst"] or "data owner") == payer)
        last = chrome.find_element("id", f"spent-{i}").get_attribute("data-last")
        assert float(last) == pytest.approx(spent)
    chrome.save_screenshot(str(tmp_path / "chart.png"))


@pytest.mark.parametrize("fragment", ["", "#token=admin.wrong"])
def test_budget_page_refuses_without_the_admin_token(chrome, served, fragment):
    chrome.get("about:blank")  # a new fragment alone would not reload the page
    chrome.get(f"{served.url}/budget{fragment}")
    _wait(chrome, "!document.getElementById('error').hidden")
    error = chrome.find_element("id", "error").text
    assert error.startswith("Refused:")
    assert ("needs the admin token" in error) if not fragment else ("invalid token" in error)
    assert not chrome.find_element("id", "figures").is_displayed()
    assert chrome.find_element("id", "spent").get_attribute("textContent") == ""


def test_api_docs_render_from_local_files(chrome, served):
    # Swagger UI and ReDoc come from the fastapi-offline package: no page refers to a CDN.
    for page, script in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        with urllib.request.urlopen(served.url + page, timeout=10) as response:
            html = response.read().decode()
        assert "cdn" not in html.lower() and f"/static-offline-docs/{script}" in html
    chrome.get("about:blank")
    chrome.get(f"{served.url}/docs")
    _wait(chrome, "document.querySelectorAll('.swagger-ui .opblock').length > 0")
    title = chrome.find_element("css selector", ".swagger-ui .info .title").text
    assert title.startswith("fastmwem query service")
    paths = {e.text for e in chrome.find_elements("css selector", ".opblock-summary-path")}
    assert "/v1/query" in paths and "/v1/budget" in paths
