"""The Deliveries page shows successful pushes with every attempt (issue 27), on each backend.

A real delivery worker (the production HTTP sender, signed pushes over a real connection) pushes
to a real HTTP endpoint on 127.0.0.1 that fails twice with an HTML error page and then accepts;
time is the console's injected clock, moved to each retry, so nothing sleeps.
"""

from __future__ import annotations

import http.server
import random
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.pushing.keyring import KeyRing
from gateway.pushing.senders import HttpSender, SenderRegistry
from gateway.pushing.transport import PushTransport
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.topics.records import Subscription, TopicMessage
from tests.gateway.api.console.conftest import Console
from tests.local_server import local_server

#: What a hostile or broken upstream might put in its error page: it must stay text on the page.
HOSTILE = "<img src=x onerror=alert(1)>"
ERROR_PAGE = (
    "<html><head><title>502</title><script>window.pwned=1</script></head>"
    f"<body><h1>Bad Gateway</h1><p>upstream said {HOSTILE.replace('<', '&lt;')}</p></body></html>"
)


class Answers:
    """The endpoint's answers in turn (status, body), then 204; the requests it got."""

    def __init__(self, *script: tuple[int, str]) -> None:
        self.script = list(script)
        self.received = 0
        self.lock = threading.Lock()

    def next(self) -> tuple[int, str]:
        with self.lock:
            self.received += 1
            return self.script.pop(0) if self.script else (204, "")


def _handler(answers: Answers) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, body = answers.next()
            payload = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    return Handler


@pytest.fixture()
def answers() -> Answers:
    return Answers((502, ERROR_PAGE), (503, ERROR_PAGE))


@pytest.fixture()
def endpoint(answers: Answers) -> Iterator[str]:
    with local_server(_handler(answers)) as url:
        yield url


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
    signed_in: Console, worker: DeliveryWorker, endpoint: str, answers: Answers
) -> None:
    message_id = publish(signed_in, endpoint)
    run_until_idle(worker, signed_in)
    assert answers.received == 3

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
    assert answers.received == 4
    page = signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    assert page.count("Delivered on attempt 1") == 1 and "Delivered on attempt 3" in page


def test_history_older_than_a_day_is_purged(
    signed_in: Console, worker: DeliveryWorker, endpoint: str
) -> None:
    message_id = publish(signed_in, endpoint)
    run_until_idle(worker, signed_in)
    signed_in.clock.now += 86_400 + 1
    signed_in.store.deliveries.expire()
    signed_in.sign_in()  # a day later: the session has ended (SESSION_SECONDS)
    page = signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    assert "Nothing is known of" in page and "Delivered" not in page
