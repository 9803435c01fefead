"""Real headless Chromium (Debian's) driven by selenium, for tests that assert on what a person sees.

The browser runs with networking features off and a fresh profile, so a page that tried to fetch
plotly.js from a CDN would visibly fail rather than silently work on a connected laptop.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def chromium_available() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


@contextmanager
def chromium(width: int = 1600, height: int = 1000) -> Iterator[Any]:
    """A selenium WebDriver on headless Chromium; browser console logs kept for error checks."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="jepsen-py-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--no-first-run", "--disable-sync",
              "--disable-dev-shm-usage", "--enable-unsafe-swiftshader", "--use-gl=angle",
              "--use-angle=swiftshader", f"--user-data-dir={profile}",
              f"--window-size={width},{height}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def severe_console_errors(driver: Any) -> list[str]:
    """SEVERE browser console entries (JavaScript errors, failed loads)."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def wait_rendered(driver: Any, timeout: float = 30.0) -> None:
    """Waits until the page's script has finished its first plotly draw (body[data-rendered])."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body && document.body.dataset.rendered || null"))


def screenshot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
