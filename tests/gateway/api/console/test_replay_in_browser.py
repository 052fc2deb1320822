"""The topic page's "Replay what was delivered" form as a person uses it: a real
``mns-gateway serve``, a recording endpoint and Debian's headless Chromium. A dry run says how
many would be queued and pushes nothing; the replay says how many it queued and the endpoint
gets them again; the form is labelled, reached with Tab and fits at 390 and 1400 px. (The
form's rules, its CSRF check and both backends: test_console_replay.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta
from selenium import webdriver
from selenium.webdriver.common.by import By

from gateway.delivery.replays import iso_utc_ms
from gateway.testing import PushRecorder
from tests.chromium import artifacts_dir
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway
from tests.gateway.api.console.browser import Pages
from tests.support.pushes import pushes_to

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FORM = "form[action$='/topics/orders/replay']"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    process = start_gateway(tmp_path_factory.mktemp("replay-console"))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def endpoint(gateway: RunningGateway) -> Iterator[PushRecorder]:
    with pushes_to(gateway.url) as recorder:
        yield recorder


def test_replay_from_the_topic_page(
    browser: webdriver.Chrome,
    gateway: RunningGateway,
    endpoint: PushRecorder,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = account.get_topic("orders")
    topic.create(TopicMeta())
    topic.get_subscription("web").subscribe(SubscriptionMeta(endpoint.url_for("/orders")))
    since = iso_utc_ms(int(time.time() * 1000) - 1000)
    for n in range(2):
        topic.publish_message(TopicMessage(f"order {n}"))
    endpoint.wait_for(2, timeout=15)

    site = Pages(browser, gateway.url, artifacts_dir(tmp_path_factory, "console-replay"))
    site.open("/console/sign-in")
    site.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET)
    site.open("/console/topics/orders")
    assert "Replay what was delivered" in site.text()
    site.check("topic-replay")

    browser.find_element(By.ID, "replay-dry-run").click()
    site.submit(FORM, since=since)
    assert "would queue 2 of the messages delivered to orders/web" in site.text()
    site.submit(FORM, since=since)
    assert "queued 2 of the messages delivered to orders/web" in site.text()
    again = endpoint.wait_for(4, timeout=15)[2:]
    # Same messages (in whatever order: this gateway pushes several at a time to an endpoint).
    first = endpoint.received[:2]
    assert sorted(p.message_id for p in again) == sorted(p.message_id for p in first)

    site.submit(FORM, since="yesterday")
    assert "Since 'yesterday' is not an ISO 8601 time in UTC" in site.text()
    typed = browser.find_element(By.ID, "replay-since").get_attribute("value")
    assert typed == "yesterday"
    site.check("topic-replay-refused")
    assert Path(site.artifacts).is_dir()
