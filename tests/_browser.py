"""Headless Chromium for the tests that render a page (the service's, the quality report)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def headless_chrome() -> Iterator[Any]:
    """Yield a headless Chromium driver (Debian's; no sandbox: tests run as root), then quit it.

    Skips where Chromium is missing, but fails under CI (``CI=true``), which installs it.
    """
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        reason = "Chromium or its driver is not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run this test, but {reason}")
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1000,900"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
