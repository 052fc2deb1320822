"""The console on a phone (390 px) and a desktop (1,400 px), as issue 36 item 9 found it: a real
``mns-gateway serve`` (filled as ``test_console_in_browser`` fills it) and headless Chromium,
measuring what a person sees. Each test failed on 8db9520:

- tables clipped the failing subscription's and the dead letter's error off a phone's screen,
  with nothing saying that they scroll;
- the overview chart's text was ~5 px at 390 px and ~18 px at 1,400 px (one drawing stretched);
- a refused form (Priority 99) came back empty;
- endpoint URLs broke mid-address;
- Deliveries opened as an empty form with no hint, the "Published message …" notice was no
  link to it, and its MessageId box cut the id;
- "Dead-letter policy enabled" was ticked where the page said "none";
- redrive showed on every queue, not only on dead-letter queues;
- tags were shown nowhere; queues paged 25 and topics 50;
- a failed sign-in cleared the AccessKey ID.

Over SQLite only: the pages are the same over PostgreSQL. Screenshots go where
``test_console_in_browser`` keeps its own (``$MNS_TEST_ARTIFACTS/console``), named
``screens-*-390.png`` and ``screens-*-1400.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.chromium import BAD_BREAKS_JS, chromium
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.console.browser import WIDTHS, Pages
from tests.gateway.api.console.test_console_in_browser import (  # noqa: F401 - fixtures
    artifacts,
    backend,
    endpoint,
    filled,
    gateway,
)
from tests.gateway.api.control.clients import Classic

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.parametrize("backend", ["sqlite"], indirect=True),
]

#: An endpoint as long as real ones are, to see where it wraps.
LONG_PATH = "/hooks/mns/notifications/orders-created?tenant=acme-corporation&region=eu"


@pytest.fixture(scope="module")
def site(
    browser: webdriver.Chrome,
    gateway: RunningGateway,  # noqa: F811
    filled: dict[str, str],  # noqa: F811
    artifacts: Path,  # noqa: F811
    endpoint: str,  # noqa: F811
) -> Pages:
    """Signed in, with a subscription to a long endpoint and tags on a queue and a topic."""
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    meta = SubscriptionMeta(endpoint + LONG_PATH, notify_content_format="JSON")
    account.get_topic("orders").get_subscription("long-endpoint").subscribe(meta)
    control = Classic(gateway.port)
    for kind, name in (("queue", "jobs"), ("topic", "orders")):
        params = {"ResourceType": kind, "ResourceId.1": name}
        params.update({"Tag.1.Key": "team", "Tag.1.Value": "payments"})
        params.update({"Tag.2.Key": "env", "Tag.2.Value": "prod"})
        control.common("TagResources", params)
    pages = Pages(browser, gateway.url, artifacts)
    pages.open("/console/sign-in")
    pages.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET)
    return pages


@pytest.fixture()
def width(site: Pages, request: pytest.FixtureRequest) -> Iterator[int]:
    chosen = int(request.param)
    site.driver.set_window_size(chosen, 900)
    yield chosen
    site.driver.set_window_size(1400, 900)


def shot(site: Pages, name: str, width: int) -> None:
    """The whole page at ``width``, kept."""
    height = site.driver.execute_script("return document.documentElement.scrollHeight")
    site.driver.set_window_size(width, min(int(height) + 100, 6000))
    site.driver.execute_script("window.scrollTo(0, 0)")
    site.driver.save_screenshot(str(site.artifacts / f"screens-{name}-{width}.png"))
    site.driver.set_window_size(width, 900)


both_widths = pytest.mark.parametrize("width", WIDTHS, indirect=True, ids=lambda w: f"{w}px")


def test_a_failed_sign_in_keeps_the_access_key_id(
    gateway: RunningGateway,  # noqa: F811
    artifacts: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """In a browser of its own: signing out here would end the other tests' session."""
    driver = chromium(tmp_path_factory, width=390)
    try:
        pages = Pages(driver, gateway.url, artifacts)
        pages.open("/console/sign-in")
        pages.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret="wrong")
        assert "not accepted" in pages.text()
        typed = driver.find_element(By.ID, "access_key_id").get_attribute("value")
        secret = driver.find_element(By.ID, "access_key_secret").get_attribute("value")
        assert (typed, secret) == (ACCESS_KEY_ID, "")
        for width in WIDTHS:
            shot(pages, "sign-in-refused", width)
    finally:
        driver.quit()


#: For every table box: whether it scrolls, whether its hint shows, and where its error cells
#: start and end relative to the box (what a person sees without scrolling).
TABLES = """
return [...document.querySelectorAll('.table-box')].map(box => {
  const frame = box.getBoundingClientRect();
  const hint = box.nextElementSibling;
  const errors = [...box.querySelectorAll('td.error')].map(cell => {
    const r = cell.getBoundingClientRect();
    return {left: r.left - frame.left, right: r.right - frame.left, text: cell.innerText};
  });
  return {scrolls: box.scrollWidth > box.clientWidth + 1, width: frame.width,
          hint: !!(hint && hint.classList.contains('scroll-hint') && hint.offsetHeight > 0),
          shadow: getComputedStyle(box).backgroundImage.includes('gradient'),
          right: frame.right, errors: errors};
});
"""


@both_widths
def test_tables_show_the_error_first_and_say_when_they_scroll(
    site: Pages,
    width: int,
    filled: dict[str, str],  # noqa: F811
) -> None:
    pages = {
        "topic": "/console/topics/orders",
        "dead-letters": "/console/dead-letters",
        "dead-letter": f"/console/dead-letters/{filled['letter']}",
        "deliveries": f"/console/deliveries?message_id={filled['message_id']}",
        "queues": "/console/queues?prefix=jobs",
    }
    for name, path in pages.items():
        site.open(path)
        tables = site.driver.execute_script(TABLES)
        assert tables, name
        for table in tables:
            assert table["right"] <= width, (name, table)
            assert table["hint"] == table["scrolls"], (name, width, table)
            assert table["shadow"], name
            for error in table["errors"]:
                # The error starts on the screen, with room for its first words.
                assert error["left"] < table["width"] - 120, (name, width, error)
        # A heading across the whole table (a subscription's name and endpoint) stays on screen.
        heads = site.driver.execute_script(
            "return [...document.querySelectorAll('.group-head')]"
            ".map(head => head.getBoundingClientRect().right)"
        )
        assert all(right <= width for right in heads), (name, heads)
        shot(site, f"table-{name}", width)
    site.open("/console/topics/orders")
    row = site.driver.find_element(By.CSS_SELECTOR, "tr.failing td.error")
    assert "Broken" in row.text and row.is_displayed()
    site.open("/console/dead-letters")  # the reason, and the endpoint's last error under it
    reason = site.driver.find_element(By.CSS_SELECTOR, "td.error").text
    assert "retries exhausted" in reason and "Broken" in reason


TEXT_SIZES = """
const shown = [...document.querySelectorAll('svg.chart')].filter(s => s.getClientRects().length);
return shown.map(svg => {
  const box = svg.getBoundingClientRect(), frame = svg.parentElement.getBoundingClientRect();
  const scale = box.width / svg.viewBox.baseVal.width;
  return {sizes: [...svg.querySelectorAll('text')]
            .map(t => parseFloat(getComputedStyle(t).fontSize) * scale),
          inside: box.left >= frame.left && box.right <= frame.right};
});
"""


@both_widths
def test_the_overview_chart_text_is_12_px_at_every_width(site: Pages, width: int) -> None:
    site.open("/console/")
    [drawn] = site.driver.execute_script(TEXT_SIZES)
    assert drawn["inside"]
    assert drawn["sizes"] and all(11.5 <= size <= 13 for size in drawn["sizes"]), drawn
    shot(site, "overview", width)


def test_a_refused_form_comes_back_with_what_was_typed(site: Pages, endpoint: str) -> None:  # noqa: F811
    site.open("/console/queues/jobs")
    site.submit("form[action$='/send']", body="keep this body", priority="99", delay_seconds="3")
    assert "Priority should between 1 and 16" in site.text()
    form = site.driver.find_element(By.CSS_SELECTOR, "form[action$='/send']")
    typed = {
        name: form.find_element(By.NAME, name).get_attribute("value")
        for name in ("body", "priority", "delay_seconds")
    }
    assert typed == {"body": "keep this body", "priority": "99", "delay_seconds": "3"}
    for width in WIDTHS:
        shot(site, "queue-send-refused", width)
    site.open("/console/topics/orders")
    site.submit("form[action$='/subscribe']", name="bad name!", endpoint=f"{endpoint}/kept")
    assert "SubscriptionNameInvalid" in site.text()
    form = site.driver.find_element(By.CSS_SELECTOR, "form[action$='/subscribe']")
    assert form.find_element(By.NAME, "name").get_attribute("value") == "bad name!"
    assert form.find_element(By.NAME, "endpoint").get_attribute("value") == f"{endpoint}/kept"


#: Every place a line break falls inside an endpoint (a table's Endpoint column, a page's
#: Endpoint entry) after a character that is no separator.
BREAKS = (
    BAD_BREAKS_JS
    + """
const bad = [], cells = [];
for (const table of document.querySelectorAll('table')) {
  const column = [...table.querySelectorAll('thead th')]
    .findIndex(th => th.innerText === 'Endpoint');
  if (column < 0) continue;
  for (const row of table.querySelectorAll('tbody tr'))
    if (row.cells[column]) cells.push(row.cells[column]);
}
for (const dt of document.querySelectorAll('dt'))
  if (dt.innerText === 'Endpoint') cells.push(dt.nextElementSibling);
for (const cell of cells)
  for (const pair of badBreaks(cell)) bad.push(pair + ' in ' + cell.innerText);
return [cells.length, bad];
"""
)


@both_widths
def test_endpoints_wrap_only_after_a_separator(
    site: Pages,
    width: int,
    filled: dict[str, str],  # noqa: F811
) -> None:
    pages = {"topic": "/console/topics/orders", "dead-letter": "/console/dead-letters/"}
    for name, path in pages.items():
        site.open(path + (filled["letter"] if name == "dead-letter" else ""))
        count, bad = site.driver.execute_script(BREAKS)
        assert count and bad == [], (path, bad)
        shot(site, f"{name}-endpoints", width)


@both_widths
def test_deliveries_explains_itself_and_the_publish_notice_links_there(
    site: Pages, width: int
) -> None:
    site.open("/console/deliveries")
    hint = site.driver.find_element(By.ID, "message-id-hint")
    assert hint.is_displayed() and "MessageId" in hint.text
    shot(site, "deliveries-empty", width)
    site.open("/console/topics/orders")
    site.submit("form[action$='/publish']", body="find me", tag="")
    link = site.driver.find_element(By.CSS_SELECTOR, ".flash a")
    message_id = link.text
    link.click()
    assert site.driver.current_url.endswith(f"/console/deliveries?message_id={message_id}")
    box = site.driver.find_element(By.ID, "message_id")
    assert box.get_attribute("value") == message_id
    # The whole id shows in its box: nothing scrolled out of sight.
    inner = site.driver.execute_script(
        "return [arguments[0].scrollWidth, arguments[0].clientWidth]", box
    )
    assert inner[0] <= inner[1], inner
    assert box.rect["x"] + box.rect["width"] <= width
    shot(site, "deliveries-published", width)


def test_the_dead_letter_checkbox_and_redrive_say_what_the_queue_is(site: Pages) -> None:
    expected = {  # queue: (what the page says, box ticked, redrive shown)
        "bulk-00": ("none", False, False),
        "jobs": ("to jobs-dlq after 1 receives, enabled", True, False),
        "jobs-dlq": ("none", False, True),
    }
    for queue, (policy, ticked, redrive) in expected.items():
        site.open(f"/console/queues/{queue}")
        said = site.driver.find_element(
            By.XPATH, "//dt[.='Dead-letter policy']/following-sibling::dd[1]"
        ).text
        box = site.driver.find_element(By.ID, "dlq_enabled")
        shown = bool(site.driver.find_elements(By.CSS_SELECTOR, "form[action$='/redrive']"))
        assert (said, box.is_selected(), shown) == (policy, ticked, redrive), queue
    assert "Dead-letter queue of\njobs" in site.text()  # jobs-dlq, the last one opened
    for width in WIDTHS:
        shot(site, "queue-dead-letter-queue", width)


def test_tags_show_on_queues_and_topics(site: Pages) -> None:
    for path in ("/console/queues/jobs", "/console/topics/orders"):
        site.open(path)
        tags = site.driver.find_element(By.XPATH, "//dt[.='Tags']/following-sibling::dd[1]")
        assert tags.text == "env = prod team = payments", path
    site.open("/console/queues?prefix=jobs")
    row = site.driver.find_element(By.XPATH, "//tr[td/a[.='jobs']]").text
    assert "env = prod" in row and "team = payments" in row
    site.open("/console/topics")
    row = site.driver.find_element(By.XPATH, "//tr[td/a[.='orders']]").text
    assert "env = prod" in row and "team = payments" in row
    for width in WIDTHS:
        shot(site, "queue-tags", width)


def test_queues_and_topics_page_alike(site: Pages) -> None:
    sizes = {}
    for path in ("/console/queues", "/console/topics"):
        site.open(path)
        sizes[path] = site.driver.find_element(By.ID, "size").get_attribute("value")
    assert sizes["/console/queues"] == sizes["/console/topics"] == "50"
    site.open("/console/queues")
    assert site.text().count("bulk-") == 30  # all 32 queues on one page, as topics would be
