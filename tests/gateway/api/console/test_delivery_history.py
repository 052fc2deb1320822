"""The Deliveries page shows successful pushes with every attempt (issue 27), on each backend.

A real delivery worker (the production HTTP sender, signed pushes over a real connection) pushes
to a real HTTP endpoint on 127.0.0.1 that fails twice with an HTML error page and then accepts;
time is the console's injected clock, moved to each retry, so nothing sleeps.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.pushing.keyring import KeyRing
from gateway.pushing.senders import HttpSender, SenderRegistry
from gateway.pushing.transport import PushTransport
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.testing import Answer, PushRecorder
from gateway.topics.records import Subscription, TopicMessage
from tests.gateway.api.console.conftest import Console
from tests.support.pushes import raw_pushes

#: What a hostile or broken upstream might put in its error page: it must stay text on the page.
HOSTILE = "<img src=x onerror=alert(1)>"
ERROR_PAGE = (
    "<html><head><title>502</title><script>window.pwned=1</script></head>"
    f"<body><h1>Bad Gateway</h1><p>upstream said {HOSTILE.replace('<', '&lt;')}</p></body></html>"
)


@pytest.fixture()
def endpoint() -> Iterator[PushRecorder]:
    """Fails twice with the HTML error page, then accepts. Raw: the in-process sender's
    certificate is served nowhere and its pushes are dated by the console's clock."""
    page = ERROR_PAGE.encode()
    with raw_pushes(Answer(502, page, "text/html"), Answer(503, page, "text/html")) as recorder:
        yield recorder


@pytest.fixture()
def worker(signed_in: Console, tmp_path: Path) -> Iterator[DeliveryWorker]:
    with PushTransport() as transport:
        sender = HttpSender(
            transport,
            KeyRing(tmp_path / "keys", bits=1024),
            public_url="http://127.0.0.1",
            account_id="1234567890",
            clock=signed_in.clock,
        )
        options = WorkerOptions(threads=2, max_per_route=2, lease_seconds=30)
        made = DeliveryWorker(
            signed_in.store.deliveries, SenderRegistry(sender), options, rng=random.Random(7)
        )
        yield made
        made.stop(5)


def run_until_idle(worker: DeliveryWorker, console: Console) -> None:
    """Dispatch, wait for the pushes to settle, move the clock to the next retry."""
    deliveries = console.store.deliveries
    for _ in range(20):
        worker.dispatch_once()
        worker.drain(10)
        due = deliveries.next_due_ms()
        if due is None:
            return
        console.clock.now = max(console.clock.now, due / 1000)
    raise AssertionError("the deliveries never settled")


def publish(console: Console, endpoint: str) -> str:
    store = console.store
    store.topics.create_topic("orders", 65536, False)
    store.topics.subscribe(Subscription("orders", "hooks", endpoint + "/hook"))
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "orders", "hello", "X", store.now_ms()))
    return message_id


def attempt_rows(page: str) -> list[list[str]]:
    """The text of each attempt row's cells: push, #, when, outcome, status, latency, error."""
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr><td>.*?</tr>", page, re.S)
    ]


def test_fails_twice_then_succeeds_shows_three_attempts(
    signed_in: Console, worker: DeliveryWorker, endpoint: PushRecorder
) -> None:
    message_id = publish(signed_in, endpoint.url)
    run_until_idle(worker, signed_in)
    assert len(endpoint.received) == 3

    page = signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    assert "Delivered on attempt 3" in page
    rows = attempt_rows(page)
    assert [row[:2] for row in rows] == [["Delivered on attempt 3", "1"], ["", "2"], ["", "3"]]
    assert [(row[3], row[4]) for row in rows] == [
        ("http_error", "502"),
        ("http_error", "503"),
        ("success", "204"),
    ]
    # The HTML error page is reduced to its text, and what looked like markup stays text.
    assert "Bad Gateway upstream said" in page
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "pwned" not in page
    # The delivered message can be pushed again while the topic keeps it.
    assert "Deliver again" in page
    response = signed_in.post(
        "/console/deliveries/again", message_id=message_id, subscription="hooks"
    )
    assert response.status_code == 302
    run_until_idle(worker, signed_in)
    assert len(endpoint.received) == 4
    page = signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    assert page.count("Delivered on attempt 1") == 1 and "Delivered on attempt 3" in page


def test_history_older_than_a_day_is_purged(
    signed_in: Console, worker: DeliveryWorker, endpoint: PushRecorder
) -> None:
    message_id = publish(signed_in, endpoint.url)
    run_until_idle(worker, signed_in)
    signed_in.clock.now += 86_400 + 1
    signed_in.store.deliveries.expire()
    signed_in.sign_in()  # a day later: the session has ended (SESSION_SECONDS)
    page = signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    assert "Nothing is known of" in page and "Delivered" not in page
    # The page says how far back it sees (MNS_GATEWAY_HISTORY_RETENTION).
    assert "are kept 1 day;" in page and "no push in the last 1 day" in page
