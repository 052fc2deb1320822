"""QueueEndpoint subscriptions: topic messages delivered into queues, on this gateway or another.

The two-gateway test runs two real ``mns-gateway serve`` processes on 127.0.0.1 with different
account ids; the first forwards into the second with a signed SendMessage, as it would forward
to Alibaba Cloud MNS.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mns.account import Account
from mns.message_property import MessagePropertyValue, PropertyType
from mns.mns_exception import MNSServerException
from mns.queue import QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    RunningGateway,
    gateway_fixture,
    start_gateway,
)

FAST = {"MNS_GATEWAY_RETRY_SCALE": "0.01"}


def receive(account: Account, queue_name: str, timeout: float = 15) -> str:
    """Long-poll the queue until a message arrives; return its body (raw, not base64)."""
    queue = account.get_queue(queue_name)
    queue.set_encoding(False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = queue.receive_message(wait_seconds=1)
        except MNSServerException as exc:
            assert exc.type == "MessageNotExist"
            continue
        queue.delete_message(message.receipt_handle)
        return message.message_body
    raise AssertionError(f"nothing arrived in {queue_name}")


gateway = gateway_fixture("bridge", FAST)


@pytest.fixture()
def account(gateway: RunningGateway) -> Account:
    return gateway.account()  # type: ignore[no-any-return]


@pytest.mark.parametrize("fmt", ["XML", "JSON", "SIMPLIFIED"])
def test_local_queue_endpoint_in_each_format(account: Account, unique: str, fmt: str) -> None:
    account.get_queue(unique).create(QueueMeta())
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    endpoint = f"acs:mns:local:1234567890:queues/{unique}"
    topic.get_subscription("q").subscribe(SubscriptionMeta(endpoint, notify_content_format=fmt))
    published = topic.publish_message(TopicMessage("into the queue", "t1"))
    body = receive(account, unique)
    if fmt == "SIMPLIFIED":
        assert body == "into the queue"
    elif fmt == "JSON":
        notification = json.loads(body)
        assert notification["Message"] == "into the queue"
        assert notification["MessageId"] == published.message_id
        assert notification["SubscriptionName"] == "q"
    else:
        assert body.startswith('<?xml version="1.0" encoding="utf-8"?><Notification')
        assert f"<MessageId>{published.message_id}</MessageId>" in body
        assert "<Message>into the queue</Message>" in body


def test_a_queue_deleted_after_subscribe_retries_then_dead_letters(
    gateway: RunningGateway, account: Account, unique: str
) -> None:
    """Subscribe refuses a missing queue; one deleted afterwards fails each push instead."""
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    queue = account.get_queue(f"{unique}-gone")
    queue.create(QueueMeta())
    topic.get_subscription("q").subscribe(
        SubscriptionMeta(f"acs:mns:local:1234567890:queues/{unique}-gone")
    )
    queue.delete()
    topic.publish_message(TopicMessage("nowhere to go"))
    deadline = time.monotonic() + 20
    letters: list[dict[str, object]] = []
    while not letters and time.monotonic() < deadline:
        response = gateway.raw().send("GET", f"/admin/dead-letters?topic={unique}")
        letters = json.loads(response.body)["DeadLetters"]
        time.sleep(0.1)
    assert len(letters) == 1 and letters[0]["Attempts"] == 4


def test_topic_on_one_gateway_delivers_into_a_queue_on_another(tmp_path: Path, unique: str) -> None:
    remote = start_gateway(tmp_path / "remote", {**FAST, "MNS_GATEWAY_ACCOUNT_ID": "2222"})
    try:
        bridges = {
            "local:2222": {
                "url": remote.url,
                "access_key_id": ACCESS_KEY_ID,
                "access_key_secret": ACCESS_KEY_SECRET,
            }
        }
        local = start_gateway(
            tmp_path / "local", {**FAST, "MNS_GATEWAY_QUEUE_BRIDGES": json.dumps(bridges)}
        )
        try:
            remote_account = Account(remote.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
            remote_account.get_queue("inbox").create(QueueMeta())
            topic = Account(local.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_topic(unique)
            topic.create(TopicMeta())
            topic.get_subscription("bridge").subscribe(
                SubscriptionMeta(
                    "acs:mns:local:2222:queues/inbox", notify_content_format="SIMPLIFIED"
                )
            )
            message = TopicMessage("across gateways", message_group_id="g7")
            message.add_user_property("k", MessagePropertyValue(PropertyType.NUMBER, 3))
            topic.publish_message(message)
            inbox = remote_account.get_queue("inbox")
            inbox.set_encoding(False)
            received = inbox.receive_message(wait_seconds=15)
            assert received.message_body == "across gateways"
            # the forwarded SendMessage carries the group and properties
            assert received.message_group_id == "g7"
            assert received.get_user_properties()["k"].get_raw_value() == "3"
        finally:
            local.stop()
    finally:
        remote.stop()
