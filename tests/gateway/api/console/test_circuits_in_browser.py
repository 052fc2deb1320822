"""The topic page's endpoint circuits in headless Chromium, at 390 and 1,400 px: a subscription
whose circuit is open and one that is half-open (recovering, its probe out), each showing its
state, failure rate, attempts skipped and when the next probe goes (issue 35). The states are
driven through the store with the toolbox's settable clock (failed attempts settled, the
cool-down passed, a claim letting the probe out), as the pushing worker would; the console is
the real app, served on 127.0.0.1.

Screenshots are kept where the console's other browser tests keep theirs
(``$MNS_TEST_ARTIFACTS/console``): ``circuit-open-*.png`` and ``circuit-half-open-*.png``.
Over SQLite only: the page is the same over PostgreSQL (tests/gateway/console/
test_circuit_forms.py checks its figures on both).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from werkzeug.serving import make_server

from gateway.breaker.state import State
from gateway.delivery.records import Attempt, Settlement
from gateway.topics.records import Subscription, TopicMessage
from tests.chromium import artifacts_dir
from tests.conftest import OpenDatabase
from tests.gateway.api.console.browser import WIDTHS, Pages
from tests.gateway.api.console.conftest import KEY_ID, SECRET, Console, make_console

pytestmark = pytest.mark.parametrize("open_database", ["sqlite"], indirect=True)

TOPIC_PAGE = "/console/topics/orders"
#: Messages published to the topic: ten fail and open billing's circuit; all wait behind it.
MESSAGES = 14


@pytest.fixture()
def served(open_database: OpenDatabase, tmp_path: Path) -> Iterator[tuple[Console, str]]:
    """The console's app on its store and settable clock, served on 127.0.0.1."""
    console = make_console(open_database, tmp_path)
    server = make_server("127.0.0.1", 0, console.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield console, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)
        console.oplog.close()


@pytest.fixture()
def site(
    served: tuple[Console, str],
    browser: webdriver.Chrome,
    tmp_path_factory: pytest.TempPathFactory,
) -> Pages:
    console, base = served
    topics = console.store.topics
    topics.create_topic("orders", 65536, True)
    for name in ("audit", "billing"):
        topics.subscribe(Subscription("orders", name, f"http://127.0.0.1:9/{name}"))
    pages = Pages(browser, base, artifacts_dir(tmp_path_factory, "console"))
    pages.open("/console/sign-in")
    pages.submit("form.narrow", access_key_id=KEY_ID, access_key_secret=SECRET)
    return pages


def _open_billing(console: Console) -> None:
    """``MESSAGES`` published; audit's pushes succeed, billing's all fail (503): its breaker
    opens at the tenth, and every billing delivery, due again at once, waits behind it."""
    store = console.store
    now = store.now_ms()
    store.topics.publish_all(
        [TopicMessage(f"M{n:02d}", "orders", "b", "X", now) for n in range(MESSAGES)]
    )
    jobs = store.deliveries.claim("worker", 60, 100, frozenset())
    settled = [
        Settlement(job, Attempt(1, now, "success", 204))
        if job.subscription.name == "audit"
        else Settlement(job, Attempt(1, now, "http_error", 503), retry_at_ms=now)
        for job in jobs
    ]
    store.deliveries.settle("worker", settled)


def _circuit_row(pages: Pages, name: str) -> str:
    section = pages.driver.find_element(By.CSS_SELECTOR, "section[aria-labelledby=circuit-title]")
    for row in section.find_elements(By.CSS_SELECTOR, "tbody tr"):
        if row.find_element(By.TAG_NAME, "td").text == name:
            return str(row.text)
    raise AssertionError(f"no circuit row for {name}")


def _shots(pages: Pages, name: str) -> None:
    """The circuits table at both widths, scrolled into view, kept; nothing overflows."""
    for width in WIDTHS:
        pages.driver.set_window_size(width, 900)
        overflow = pages.driver.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 0, f"{name} overflows by {overflow} px at {width} px"
        # Every column on the screen: the table does not hide its next probe behind a scroll.
        box = pages.driver.find_element(
            By.CSS_SELECTOR, "section[aria-labelledby=circuit-title] .table-box"
        )
        hidden = pages.driver.execute_script(
            "return arguments[0].scrollWidth - arguments[0].clientWidth", box
        )
        assert hidden <= 0, f"{name}: the circuits table hides {hidden} px at {width} px"
        pages.driver.execute_script(
            "document.getElementById('circuit-title').scrollIntoView({block: 'start'})"
        )
        pages.driver.save_screenshot(str(pages.artifacts / f"{name}-{width}.png"))
        assert (pages.artifacts / f"{name}-{width}.png").stat().st_size > 0
    pages.driver.set_window_size(1400, 900)


def test_an_open_circuit_on_screens(served: tuple[Console, str], site: Pages) -> None:
    console, _ = served
    _open_billing(console)
    breaker = console.store.deliveries.breakers()[0]["orders/billing"]
    assert breaker.state is State.OPEN
    site.open(TOPIC_PAGE)
    row = _circuit_row(site, "billing")
    # State, failure rate, attempts skipped (every billing delivery is due and held), and the
    # next probe: 30 s after it opened, in UTC.
    assert row.startswith(f"billing open 100% {MESSAGES} "), row
    assert "2026-05-28 20:27:10" in row, row
    assert _circuit_row(site, "audit") == "audit closed 0% 0 -"
    _shots(site, "circuit-open")


def test_a_recovering_circuit_on_screens(served: tuple[Console, str], site: Pages) -> None:
    console, _ = served
    _open_billing(console)
    console.clock.advance(31)  # the cool-down is over: the next claim lets one probe out
    probe = console.store.deliveries.claim("worker", 60, 100, frozenset())
    assert [job.subscription.name for job in probe] == ["billing"]
    assert console.store.deliveries.breakers()[0]["orders/billing"].state is State.HALF_OPEN
    site.open(TOPIC_PAGE)
    row = _circuit_row(site, "billing")
    # The probe is out; the other deliveries wait for its outcome.
    assert row.startswith(f"billing half-open 100% {MESSAGES - 1} "), row
    assert "probe out" in row, row
    _shots(site, "circuit-half-open")


def _page_shots(pages: Pages, name: str) -> None:
    """The page at both widths, kept; nothing overflows the screen."""
    for width in WIDTHS:
        pages.driver.set_window_size(width, 900)
        overflow = pages.driver.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 0, f"{name} overflows by {overflow} px at {width} px"
        pages.driver.save_screenshot(str(pages.artifacts / f"{name}-{width}.png"))
    pages.driver.set_window_size(1400, 900)


def test_an_open_circuit_on_the_overview_and_deliveries(
    served: tuple[Console, str], site: Pages
) -> None:
    """Issue 47: the overview flags the open circuit; a push waiting behind it says so, with
    the next probe (in UTC), instead of a next attempt that never comes."""
    console, _ = served
    _open_billing(console)
    site.open("/console/")
    alert = site.driver.find_element(
        By.CSS_SELECTOR, "section[aria-labelledby=open-circuits-title]"
    )
    assert "Endpoint circuits not closed (1)" in alert.text
    assert f"orders/billing: open, {MESSAGES} waiting, next probe 2026-05-28 20:27:10 UTC" in (
        alert.text
    )
    _page_shots(site, "overview-circuit-open")
    site.open("/console/deliveries?message_id=M03")
    body = site.driver.find_element(By.TAG_NAME, "main").text
    assert "Pending, held by the endpoint's open circuit" in body, body
    assert "the next probe is at 2026-05-28 20:27:10 UTC" in body
    _page_shots(site, "deliveries-circuit-open")
