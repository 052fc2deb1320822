"""Chromium for the console's browser tests, and the checks every page gets there: no hostile
input executed or became markup, no horizontal overflow at 390 and 1400 px, every control
labelled and reached with the Tab key, no Content-Security-Policy violation, and screenshots."""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

WIDTHS = (390, 1400)
#: Elements that would exist only if hostile input had become markup.
INJECTED = "img[src='x'], svg[onload], script:not([src]), [onerror], [onclick]"


class Pages:
    """The browser on the console, with the checks every page gets."""

    def __init__(
        self, driver: webdriver.Chrome, base: str, artifacts: Path, *, layout: bool = True
    ) -> None:
        self.driver = driver
        self.base = base
        self.artifacts = artifacts
        #: The checks of layout (labels, Tab order, overflow and screenshots at both widths); off
        #: for a second run of the same pages over another database backend, where they would
        #: only repeat the first's.
        self.layout = layout

    def open(self, path: str) -> None:
        self.driver.get(self.base + path)

    def text(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "body").text

    def submit(self, form_selector: str, **fields: str) -> None:
        form = self.driver.find_element(By.CSS_SELECTOR, form_selector)
        for name, value in fields.items():
            element = form.find_element(By.NAME, name)
            element.clear()
            self.driver.execute_script("arguments[0].value = arguments[1]", element, value)
        old = self.driver.find_element(By.TAG_NAME, "html")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        WebDriverWait(self.driver, 10).until(lambda d: _stale(old))

    def check(self, name: str) -> None:
        """Every page's checks, then (unless ``layout`` is off) screenshots at both widths."""
        assert self.driver.execute_script("return window.pwned") is None
        assert self.driver.find_elements(By.CSS_SELECTOR, INJECTED) == []
        if self.layout:
            self._labelled_and_reachable(name)
        for width in WIDTHS if self.layout else ():
            self.driver.set_window_size(width, 900)
            overflow = self.driver.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth"
            )
            assert overflow <= 0, f"{name} overflows by {overflow} px at {width} px"
            height = self.driver.execute_script("return document.documentElement.scrollHeight")
            self.driver.set_window_size(width, min(int(height) + 100, 6000))
            self.driver.execute_script("window.scrollTo(0, 0)")
            self.driver.save_screenshot(str(self.artifacts / f"{name}-{width}.png"))
        self.driver.set_window_size(1400, 900)
        violations = [
            entry["message"]
            for entry in self.driver.get_log("browser")
            if "Content Security Policy" in entry["message"]
        ]
        assert violations == [], violations

    def _labelled_and_reachable(self, name: str) -> None:
        unlabelled = self.driver.execute_script(UNLABELLED_CONTROLS)
        assert unlabelled == [], f"{name}: controls without a label: {unlabelled}"
        controls = self.driver.execute_script(FOCUSABLE_CONTROLS)
        # Start from the page's first control (the skip link), not from where focus last was.
        self.driver.execute_script("document.querySelector('.skip').focus()")
        reached = set()
        # Date and time inputs take a Tab stop per field: allow a few more stops than controls.
        for _ in range(len(controls) + 12):
            ActionChains(self.driver).send_keys(Keys.TAB).perform()
            reached.add(self.driver.execute_script("return document.activeElement.dataset.k"))
            if reached.issuperset(controls):
                break
        missing = [c for c in controls if c not in reached]
        assert missing == [], f"{name}: not reached with Tab: {missing}"


_CONTROLS = """
const CONTROLS = 'input:not([type=hidden]), select, textarea, button, a[href]';
"""
UNLABELLED_CONTROLS = (
    _CONTROLS
    + """
const out = [];
for (const el of document.querySelectorAll(CONTROLS)) {
  let name = el.getAttribute('aria-label') || '';
  if (!name && el.id) {
    const label = document.querySelector('label[for="' + CSS.escape(el.id) + '"]');
    if (label) name = label.textContent;
  }
  if (!name && el.closest('label')) name = el.closest('label').textContent;
  if (!name && (el.tagName === 'BUTTON' || el.tagName === 'A')) name = el.textContent;
  if (!name.trim()) out.push(el.outerHTML.slice(0, 120));
}
return out;
"""
)
#: Marks every visible, enabled control with a key and returns the keys, in document order.
FOCUSABLE_CONTROLS = (
    _CONTROLS
    + """
const keys = [];
let n = 0;
for (const el of document.querySelectorAll(CONTROLS)) {
  const box = el.getBoundingClientRect();
  if (el.disabled || box.width === 0 || box.height === 0 || el.closest('.skip')) continue;
  el.dataset.k = 'c' + (n++) + ':' + (el.name || el.textContent.trim().slice(0, 20));
  keys.push(el.dataset.k);
}
return keys;
"""
)


def _stale(element: object) -> bool:
    try:
        element.is_enabled()  # type: ignore[attr-defined]
    except StaleElementReferenceException:  # the page was replaced
        return True
    except WebDriverException as error:
        # Asked while the old document is being torn down, chromedriver reports the same fact
        # in other words ("Node with given id does not belong to the document").
        if "does not belong to the document" in str(error):
            return True
        raise
    return False
