"""The gateway pushes to a Flask app using the receiver blueprint, all three formats, verified
against the gateway's real certificate URL. The two halves of the product meet only on the wire."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta
from werkzeug.serving import make_server

from receiver import MNSReceiver, Notification
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    RunningGateway,
    gateway_fixture,
    start_gateway,
)


class ReceivingApp:
    """A real Flask app on 127.0.0.1 trusting only this gateway's certificate URLs."""

    def __init__(self, gateway_url: str) -> None:
        self.received: list[Notification] = []
        self.arrived = threading.Condition()
        self.receiver = MNSReceiver(allowed_cert_url_prefixes=[f"{gateway_url}/certs/"])
        self.receiver.handler()(self.record)
        app = Flask(__name__)
        self.receiver.init_app(app, url_prefix="/mns")
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}/mns/notifications"

    def record(self, notification: Notification) -> None:
        with self.arrived:
            self.received.append(notification)
            self.arrived.notify_all()

    def wait_for(self, count: int, timeout: float = 15) -> list[Notification]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.received) < count and time.monotonic() < deadline:
                self.arrived.wait(deadline - time.monotonic())
        assert len(self.received) >= count, f"{len(self.received)} of {count} pushes verified"
        return list(self.received)


gateway = gateway_fixture("e2e", {"MNS_GATEWAY_RETRY_SCALE": "0.01"})


@pytest.fixture()
def receiving_app(gateway: RunningGateway) -> Iterator[ReceivingApp]:
    app = ReceivingApp(gateway.url)
    thread = threading.Thread(target=app.server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield app
    app.server.shutdown()
    thread.join(10)


@pytest.mark.parametrize("fmt", ["XML", "JSON", "SIMPLIFIED"])
def test_receiver_accepts_the_gateways_pushes(
    gateway: RunningGateway, receiving_app: ReceivingApp, unique: str, fmt: str
) -> None:
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    topic.get_subscription("app").subscribe(
        SubscriptionMeta(receiving_app.url, notify_content_format=fmt)
    )
    published = topic.publish_message(TopicMessage("订单 <42> & done", "paid"))
    (notification,) = receiving_app.wait_for(1)
    assert notification.format == fmt
    assert notification.message == "订单 <42> & done"
    assert notification.message_id == published.message_id
    assert notification.message_md5 == published.message_body_md5
    assert notification.message_tag == "paid"
    assert notification.topic_name == unique
    assert notification.subscription_name == "app"
    assert notification.topic_owner == "1234567890"
    assert notification.publish_time and abs(notification.publish_time / 1000 - time.time()) < 60


def test_receiver_refuses_a_gateway_it_does_not_trust(tmp_path: Path, unique: str) -> None:
    """Same pushes, but the app trusts another certificate location: no handler ever runs."""
    gateway = start_gateway(tmp_path, {"MNS_GATEWAY_RETRY_SCALE": "0.01"})
    app = ReceivingApp("http://127.0.0.1:1")  # trusts nothing this gateway serves
    thread = threading.Thread(target=app.server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        topic = account.get_topic(unique)
        topic.create(TopicMeta())
        topic.get_subscription("app").subscribe(SubscriptionMeta(app.url))
        topic.publish_message(TopicMessage("forged?"))
        letters: list[dict[str, object]] = []
        deadline = time.monotonic() + 20
        while not letters and time.monotonic() < deadline:
            letters = json.loads(gateway.raw().send("GET", "/admin/dead-letters").body)[
                "DeadLetters"
            ]
            time.sleep(0.1)
        assert len(letters) == 1, "the retries never ran out"
        detail = json.loads(
            gateway.raw().send("GET", f"/admin/dead-letters/{letters[0]['Id']}").body
        )
        assert [a["StatusCode"] for a in detail["AttemptHistory"]] == [403] * 4
        assert app.received == []
    finally:
        app.server.shutdown()
        thread.join(10)
        gateway.stop()
