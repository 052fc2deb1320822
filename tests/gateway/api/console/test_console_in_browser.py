"""The console as a person uses it: a real ``mns-gateway serve`` and Debian's headless Chromium.

The gateway is filled through the official Python SDK (and the raw API for a dead-letter
policy, which the SDK cannot set) with hostile input everywhere a user's text can reach a page:
message bodies and tags with script tags and attribute breakers, a very long body, base64 that
decodes to invalid UTF-8, and an endpoint answering with an HTML error page holding script and
invalid UTF-8. The browser then signs in, opens every page, sends, peeks (through htmx),
publishes, replays (and meets the guard), redrives and delivers again; on every page it checks
that no hostile input executed or became markup, that nothing overflows horizontally at 390 px
and at 1400 px, that every control has a label and is reached with the Tab key, and that the
Content-Security-Policy was never violated. The flows run over SQLite and again over
PostgreSQL; the checks of layout (labels, Tab, overflow, screenshots) and the pages without
JavaScript only over SQLite, as the pages are the same.

Screenshots of every page at both widths are kept in ``$MNS_TEST_ARTIFACTS/console`` when that
variable is set (CI keeps the directory), else in the test's temporary directory; the path is
printed either way.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.queue import Message, QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from gateway.testing import Answer
from tests.chromium import artifacts_dir, chromium
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    BACKENDS,
    RunningGateway,
    start_gateway,
)
from tests.gateway.api.console.browser import Pages
from tests.gateway.api.control.clients import Classic
from tests.gateway.api.sdk import put_queue
from tests.support.pushes import pushes_to

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BODY = (
    '<script>window.pwned=1</script>"><img src=x onerror="window.pwned=2">'
    "'><svg onload=window.pwned=3>&amp; " + "x" * 6000
)
TAG = "<svg onload=p()>"
BINARY = base64.b64encode(b"\xff\xfe<script>window.pwned=7</script>\xc3(").decode()
ERROR_PAGE = (
    b"<html><head><title>Oops</title><script>window.pwned=4</script></head><body>"
    b"<h1>Broken \xff\xfe upstream</h1><img src=x onerror=window.pwned=5></body></html>"
)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test of the module runs over SQLite, then over PostgreSQL (one gateway each)."""
    return str(request.param)


@pytest.fixture(scope="module")
def gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, backend: str
) -> Iterator[RunningGateway]:
    env = {"MNS_GATEWAY_INBOX": "1"}
    if backend == "postgresql":
        env["MNS_GATEWAY_DATABASE_URL"] = request.getfixturevalue("postgres").new_database()
    process = start_gateway(tmp_path_factory.mktemp(f"console-gateway-{backend}"), env)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def endpoint(gateway: RunningGateway) -> Iterator[str]:
    """Answers every push with a hostile HTML error page (a 502)."""
    with pushes_to(gateway.url) as recorder:
        recorder.default = Answer(502, ERROR_PAGE, "text/html")
        yield recorder.url


@pytest.fixture(scope="module")
def filled(gateway: RunningGateway, endpoint: str) -> dict[str, str]:
    """Queues (one a dead-letter queue holding a message from another), a topic whose one
    subscription always fails, and its dead letter."""
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    raw = gateway.raw()
    jobs = account.get_queue("jobs")
    jobs.set_encoding(False)
    account.get_queue("jobs-dlq").create(QueueMeta())
    policy = json.dumps({"DeadLetterTargetQueue": "jobs-dlq", "MaxReceiveCount": 1})
    assert put_queue(raw, "jobs", f"<DlqPolicy>{policy}</DlqPolicy>") == 201
    jobs.send_message(Message("poison", priority=1))
    jobs.send_message(Message(BODY, priority=3))
    jobs.send_message(Message(BINARY))
    for _ in range(2):  # the second receive moves "poison" to jobs-dlq
        received = jobs.receive_message()
        jobs.change_message_visibility(received.receipt_handle, 1)
        time.sleep(1.1)  # visibility is in whole seconds; a real gateway, a real wait
    for index in range(30):
        account.get_queue(f"bulk-{index:02d}").create(QueueMeta())
    topic = account.get_topic("orders")
    topic.create(TopicMeta())
    meta = SubscriptionMeta(f"{endpoint}/hook", notify_content_format="JSON")
    topic.get_subscription("hooks").subscribe(meta)
    published = topic.publish_message(TopicMessage(BODY, TAG))
    letters = _wait_for_dead_letters(raw, 1)
    return {"message_id": published.message_id, "letter": letters[0]["Id"]}


def _wait_for_dead_letters(raw: object, count: int) -> list[dict[str, object]]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = raw.send("GET", "/admin/dead-letters")  # type: ignore[attr-defined]
        letters = json.loads(answer.body)["DeadLetters"]
        if len(letters) >= count:
            return letters
        time.sleep(0.2)
    raise AssertionError("no dead letter within 30 s")


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifacts_dir(tmp_path_factory, "console")


@pytest.fixture(scope="module")
def pages(
    browser: webdriver.Chrome,
    gateway: RunningGateway,
    filled: dict[str, str],
    artifacts: Path,
    backend: str,
) -> Pages:
    # Layout (labels, Tab order, overflow, screenshots) once, over SQLite: the pages are the same.
    site = Pages(browser, gateway.url, artifacts, layout=backend == "sqlite")
    site.open("/console/queues")
    assert "/console/sign-in" in browser.current_url
    assert browser.execute_script("return typeof window.htmx") == "object"
    site.check("sign-in")
    site.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret="wrong")
    assert "not accepted" in site.text()
    site.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET)
    assert browser.current_url.endswith("/console/queues")
    return site


def test_overview_and_lists(pages: Pages) -> None:
    pages.open("/console/")
    for _ in range(20):  # the first view counts in the background; a slow machine shows it later
        if "being counted" not in pages.text():
            break
        pages.open("/console/")
    text = pages.text()
    assert "Queues\n32" in text and "Dead letters\n1" in text
    assert "Success rate" in text
    assert pages.driver.find_elements(By.CSS_SELECTOR, "svg.chart rect.failed")
    pages.check("overview")
    pages.open("/console/queues?size=10")
    assert pages.text().count("bulk-") == 10
    pages.driver.find_element(By.LINK_TEXT, "Next page").click()
    assert "bulk-08" in pages.text() or "bulk-10" in pages.text()
    pages.open("/console/queues?prefix=jobs")
    assert "jobs-dlq" in pages.text() and "bulk-" not in pages.text()
    pages.check("queues")
    pages.open("/console/topics")
    pages.check("topics")


def test_queue_send_peek_and_decode(pages: Pages) -> None:
    pages.open("/console/queues/jobs")
    pages.submit("form[action$='/send']", body=BODY + " from the console", priority="2")
    assert "Sent message" in pages.text()
    peek = pages.driver.find_element(By.CSS_SELECTOR, "form[hx-get]")
    peek.find_element(By.NAME, "peek").clear()
    peek.find_element(By.NAME, "peek").send_keys("16")
    peek.find_element(By.CSS_SELECTOR, "button").click()  # htmx puts the messages in place
    WebDriverWait(pages.driver, 10).until(
        lambda d: "from the console" in d.find_element(By.ID, "peeked").text
    )
    assert pages.driver.current_url.removeprefix(pages.base) == "/console/queues/jobs"
    peeked = pages.driver.find_element(By.ID, "peeked").text
    assert "<script>window.pwned=1</script>" in peeked and TAG not in peeked
    pages.check("queue")
    pages.open("/console/queues/jobs?peek=16&decode=base64")  # the same without JavaScript
    assert "\ufffd\ufffd<script>window.pwned=7</script>\ufffd(" in pages.text()
    pages.check("queue-peek-decoded")


def test_topic_publish_and_subscribe(pages: Pages, endpoint: str) -> None:
    pages.open("/console/topics/orders")
    row = pages.driver.find_element(By.CSS_SELECTOR, "tr.failing").text
    assert "hooks" in row and "Broken" in row and "upstream" in row  # the error page as text
    pages.submit("form[action$='/subscribe']", name="second", endpoint=f"{endpoint}/two")
    assert "Subscribed second." in pages.text()
    pages.submit("form[action$='/subscribe']", name="bad<script>", endpoint=f"{endpoint}/x")
    assert "SubscriptionNameInvalid" in pages.text()
    pages.submit("form[action$='/publish']", body=BODY, tag="x")
    assert "Published message" in pages.text()
    pages.check("topic")


def test_dead_letters_replay_with_guard(pages: Pages, filled: dict[str, str]) -> None:
    letter = filled["letter"]
    pages.open("/console/dead-letters?topic=orders")
    assert letter in pages.text()
    pages.check("dead-letters")
    pages.open(f"/console/dead-letters/{letter}")
    text = pages.text()
    assert "<script>window.pwned=1</script>" in text and TAG in text
    assert "Broken \ufffd\ufffd upstream" in text or "Broken" in text
    pages.check("dead-letter")
    pages.submit("form[action$='/replay']")
    assert "Replayed 1" in pages.text()
    # The page now asks before replaying again: the box must be ticked (the browser insists).
    again = pages.driver.find_element(By.ID, "again")
    assert again.get_attribute("required") is not None
    pages.open("/console/dead-letters")
    pages.driver.find_element(By.CSS_SELECTOR, "input[name=id]").click()
    pages.submit("form[action$='/replay']")
    assert "DeadLetterAlreadyReplayed" in pages.text()


def test_deliveries_and_deliver_again(pages: Pages, filled: dict[str, str]) -> None:
    pages.open(f"/console/deliveries?message_id={filled['message_id']}")
    text = pages.text()
    assert "hooks" in text and "Broken" in text
    pages.check("deliveries")
    pages.submit("form[action$='/deliveries/again']")
    assert "again" in pages.text()


def test_redrive(pages: Pages) -> None:
    pages.open("/console/queues/jobs-dlq")
    assert "Active\n1" in pages.text()
    pages.submit("form[action$='/redrive']")
    assert "Redrove 1 to jobs" in pages.text()
    assert "Active\n0" in pages.text()


def test_inbox_and_sign_out(pages: Pages) -> None:
    pages.open("/console/inbox")
    assert "Inbox" in pages.text()
    pages.check("inbox")
    pages.submit("form.signout")
    pages.open("/console/")
    assert "/console/sign-in" in pages.driver.current_url


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_pages_that_only_show_read_without_javascript(
    tmp_path_factory: pytest.TempPathFactory,
    gateway: RunningGateway,
    filled: dict[str, str],
    artifacts: Path,
    backend: str,
) -> None:
    """Chromium with JavaScript off: sign-in is a plain form, every page that only shows is
    whole as the server sent it (peek and base64 decoding by URL). Over SQLite only: the pages
    are the same over PostgreSQL, and a second Chromium costs seconds."""
    driver = chromium(tmp_path_factory, javascript=False)
    try:
        site = Pages(driver, gateway.url, artifacts)
        site.open("/console/sign-in")
        site.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET)
        # The page's own script (htmx) really did not run.
        assert driver.execute_script("return typeof window.htmx") == "undefined"
        expectations = {
            "/console/": "Pushes in the last hour",
            "/console/queues?prefix=jobs": "jobs-dlq",
            "/console/queues/jobs?peek=16": "<script>window.pwned=1</script>",
            "/console/topics/orders": "hooks",
            f"/console/dead-letters/{filled['letter']}": "Broken",
            f"/console/deliveries?message_id={filled['message_id']}": "hooks",
        }
        for path, text in expectations.items():
            site.open(path)
            assert text in site.text(), path
        driver.save_screenshot(str(artifacts / "no-javascript-queue.png"))
    finally:
        driver.quit()


def _sign_in_again(pages: Pages) -> None:
    """test_inbox_and_sign_out signed out."""
    pages.open("/console/sign-in")
    pages.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET)


def _tick(pages: Pages, element_id: str) -> None:
    box = pages.driver.find_element(By.ID, element_id)
    if not box.is_selected():
        box.click()


def test_rate_limits_of_a_queue_and_a_subscription(pages: Pages, gateway: RunningGateway) -> None:
    """Set in the browser, refused with the control plane's text, and read back by the control
    plane's own official client."""
    _sign_in_again(pages)
    control = Classic(gateway.port)
    pages.open("/console/queues/jobs")
    _tick(pages, "queue-rate-enabled")
    pages.submit("form[action$='/rate-limit']", max_receives_per_second="0")
    assert "MaxReceivesPerSecond should be between 1 and 100000" in pages.text()
    _tick(pages, "queue-rate-enabled")
    pages.submit("form[action$='/rate-limit']", max_receives_per_second="25")
    assert "Rate limit of jobs: 25/s, enabled." in pages.text()
    pages.check("queue-rate-limit")
    queue = control.common("GetQueueAttributes", {"QueueName": "jobs"})["Data"]
    assert queue["TenantRateLimitPolicy"] == {"Enabled": True, "MaxReceivesPerSecond": 25}
    pages.open("/console/topics/orders")
    form = "form[action$='/rate-limit']"
    pages.driver.find_element(By.CSS_SELECTOR, f"{form} select option[value=hooks]").click()
    _tick(pages, "subscription-rate-enabled")
    pages.submit(form, max_receives_per_second="4")
    assert "Rate limit of hooks: 4/s, enabled." in pages.text()
    row = pages.driver.find_element(By.CSS_SELECTOR, "tr.failing").text
    assert "hooks" in row and "4/s, enabled" in row
    pages.check("topic-rate-limit")
    params = {"TopicName": "orders", "SubscriptionName": "hooks"}
    subscription = control.common("GetSubscriptionAttributes", params)["Data"]
    assert subscription["TenantRateLimitPolicy"] == {"Enabled": True, "MaxReceivesPerSecond": 4}


def test_a_delivered_message_on_the_deliveries_page(pages: Pages, gateway: RunningGateway) -> None:
    """A successful push is shown with its attempt (deliveries-history), and passes every
    page's checks. Signs in again: an earlier test signed out."""
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    with pushes_to(gateway.url) as accepting:
        topic = account.get_topic("receipts")
        topic.create(TopicMeta())
        topic.get_subscription("ledger").subscribe(SubscriptionMeta(f"{accepting.url}/ok"))
        message_id = topic.publish_message(TopicMessage(BODY)).message_id
        _sign_in_again(pages)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pages.open(f"/console/deliveries?message_id={message_id}")
            if "Delivered on attempt 1" in pages.text():
                break
            time.sleep(0.2)
    text = pages.text()
    assert "Delivered on attempt 1" in text and "ledger" in text and "success" in text
    pages.check("deliveries-delivered")


def test_an_endpoint_circuit_held_open_closed_and_handed_back(pages: Pages) -> None:
    """The topic's endpoint circuits: held open for maintenance from the form (the topic list
    flags the topic), forced closed, then handed back to the breaker; screenshots of the first
    two."""
    pages.open("/console/topics/orders")
    form = "form[action$='/circuit']"
    _choose(pages, form, subscription="hooks", override="open")
    pages.submit(form)
    assert "The circuit of hooks is open (override: open)." in pages.text()
    circuits = pages.driver.find_element(By.CSS_SELECTOR, "section[aria-labelledby=circuit-title]")
    assert "hooks open (override: open)" in circuits.text
    pages.check("topic-circuit-open")
    pages.open("/console/topics")
    assert "orders (endpoint circuit open)" in pages.text()
    pages.open("/console/topics/orders")
    _choose(pages, form, subscription="hooks", override="closed")
    pages.submit(form)
    assert "The circuit of hooks is closed (override: closed)." in pages.text()
    pages.check("topic-circuit-closed")
    # Handed back, the breaker decides (the module's failed pushes to hooks may have opened it).
    _choose(pages, form, subscription="hooks", override="auto")
    pages.submit(form)
    assert re.search(r"The circuit of hooks is (closed|open|half-open)\.", pages.text())


def _choose(pages: Pages, form: str, **choices: str) -> None:
    """Pick each select's option, as a person clicks it."""
    for name, value in choices.items():
        option = f"{form} select[name={name}] option[value={value}]"
        pages.driver.find_element(By.CSS_SELECTOR, option).click()
