"""Headless Chromium for the browser tests (the delivery report, the web console): Debian's
chromium and chromium-driver, which .ci/run installs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: A JavaScript function for ``execute_script``: ``badBreaks(cell)`` lists, for each place the
#: cell's text wraps to a new line after a character that is not a URL separator, the two
#: characters around the break. URLs and endpoints must break only after one of ``/?&=.:,_-``.
BAD_BREAKS_JS = """
function badBreaks(cell) {
  const bad = [];
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  let previous = null, node;
  while ((node = walker.nextNode())) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i); range.setEnd(node, i + 1);
      const top = Math.round(range.getBoundingClientRect().top);
      if (previous && top > previous.top && !'/?&=.:,_-'.includes(previous.char))
        bad.push(previous.char + node.data[i]);
      previous = {top: top, char: node.data[i]};
    }
  }
  return bad;
}
"""


def chromium(
    tmp_path_factory: pytest.TempPathFactory, *, javascript: bool = True, width: int = 1400
) -> webdriver.Chrome:
    """Debian's headless Chromium through its WebDriver, with a fresh profile; ``javascript``
    off for the pages that must read without it; its console log kept for CSP checks."""
    assert os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK), (
        "the browser test needs Debian's chromium and chromium-driver (.ci/run installs them)"
    )
    options = webdriver.ChromeOptions()
    if not javascript:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2}
        )
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for argument in (
        "--headless",
        "--no-sandbox",  # we run as root
        "--disable-gpu",
        "--no-first-run",
        # Without these Chromium reaches out to the network, which this machine refuses.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={width},900",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


@pytest.fixture(scope="module")
def browser(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[webdriver.Chrome]:
    """One headless Chromium for the module, its window ``BROWSER_WIDTH`` wide (the module's
    own, else 1400 px)."""
    driver = chromium(tmp_path_factory, width=getattr(request.module, "BROWSER_WIDTH", 1400))
    try:
        yield driver
    finally:
        driver.quit()


def artifacts_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """Where screenshots are kept: ``$MNS_TEST_ARTIFACTS/name`` (CI keeps that directory),
    else a temporary directory, printed so that a person can find them."""
    root = os.environ.get("MNS_TEST_ARTIFACTS")
    target = Path(root) / name if root else tmp_path_factory.mktemp(f"{name}-screenshots")
    target.mkdir(parents=True, exist_ok=True)
    print(f"\n{name} screenshots: {target}")
    return target
