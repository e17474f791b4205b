"""The budget page in real headless Chromium: it loads, shows the API's figures, and refuses
without a token (or with a wrong one); the API docs render from the service's own files."""

from __future__ import annotations

import urllib.request

import pytest


def _fmt(x: float) -> str:
    """The page's number format: six significant digits, trailing zeros dropped."""
    return f"{x:.6g}"


@pytest.fixture(scope="module")
def served(module_server_factory):
    server = module_server_factory("--alpha", "0.01", "--max-updates", "20", "--total", "400").start()
    client = server.analyst("eve", 0.5)
    for i in range(6):
        client.ask({"cell": {"a": i % 2, "c": i % 4}})
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
    rows = chrome.find_elements("css selector", "#log tbody tr")
    assert len(rows) == len(log) == 6
    assert [r.find_elements("tag name", "td")[3].text for r in rows] == [x["source"] for x in log]
    points = chrome.find_element("id", "curve").get_attribute("points").split()
    assert len(points) == len(api["history"]) + 1
    chrome.save_screenshot(str(tmp_path / "budget.png"))


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
