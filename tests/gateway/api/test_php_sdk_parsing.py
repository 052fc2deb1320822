"""The gateway's message responses as the official PHP SDK 1.4.0 reads them
(docs/protocol.md#response-shape).

The SDK's own suite and samples run in tests/php (docs/compatibility.md#php-sdk-140); these
tests read the gateway's real responses with its reading code re-expressed in
``php_sdk_reader``, on both backends and with cases its suite does not reach, and check that
nothing is lost: system properties, every message of a batch, every field.
"""

from __future__ import annotations

import itertools

import pytest
from mns.account import Account
from mns.message_property import (
    MessagePropertyValue,
    MessageSystemPropertyValue,
    PropertyType,
)
from mns.queue import Message, Queue

from tests.gateway.api.php_sdk_reader import (
    PhpMessage,
    batch_receive_messages,
    reader_nodes,
    receive_message,
)
from tests.gateway.api.sdk import text_queue
from tests.mns_http import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SYSTEM = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
SYSTEM["baggage"] = "userId=alice"
#: What the gateway sent before (one line, no whitespace between elements), as the SDK got it.
COMPACT_BATCH = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Messages xmlns="http://mns.aliyuncs.com/doc/v1/">'
    b"<Message><MessageId>A</MessageId><MessageBody>a</MessageBody><SystemProperties>"
    b"<SystemPropertyValue><Name>baggage</Name><Value>k=v</Value><Type>STRING</Type>"
    b"</SystemPropertyValue></SystemProperties></Message>"
    b"<Message><MessageId>B</MessageId><MessageBody>b</MessageBody></Message></Messages>"
)


@pytest.fixture()
def queue(account: Account, unique: str) -> Queue:
    return text_queue(account, unique)


def _send(queue: Queue, body: str, *, user: bool) -> None:
    message = Message(body)
    for name, value in SYSTEM.items():
        message.add_system_property(name, MessageSystemPropertyValue.create_string(value))
    if user:
        message.add_user_property("k1", MessagePropertyValue(PropertyType.STRING, "v1"))
        message.add_user_property("k2", MessagePropertyValue(PropertyType.NUMBER, 2))
    queue.send_message(message)


def _complete(message: PhpMessage, body: str, *, received: bool) -> None:
    """Every field the service sends for such a message was read, and every system property."""
    absent = {"receipt_handle", "next_visible_time"} if not received else set()
    assert {k for k, v in message.fields.items() if v is None} == absent
    assert message.fields["body"] == body
    assert message.system_properties == {k: ("STRING", v) for k, v in SYSTEM.items()}


def test_the_reader_loses_what_the_issue_says_on_compact_xml() -> None:
    """The re-expressed reader misreads compact XML as the SDK does: the system properties of
    the first message are dropped and the loop runs past the second message."""
    messages = batch_receive_messages(COMPACT_BATCH)
    assert len(messages) == 1
    assert messages[0].system_properties == {}


def test_a_received_and_a_peeked_message_keep_everything(queue: Queue, raw: RawClient) -> None:
    _send(queue, "one", user=True)
    peeked = raw.send("GET", f"/queues/{queue.queue_name}/messages?peekonly=true")
    message = receive_message(peeked.body)
    _complete(message, "one", received=False)
    assert message.user_properties == {"k1": ("STRING", "v1"), "k2": ("NUMBER", "2")}
    received = receive_message(raw.send("GET", f"/queues/{queue.queue_name}/messages").body)
    _complete(received, "one", received=True)
    assert received.user_properties == message.user_properties


def test_a_batch_keeps_every_message(queue: Queue, raw: RawClient) -> None:
    for body in ("a", "b", "c"):
        _send(queue, body, user=False)
    uri = f"/queues/{queue.queue_name}/messages?numOfMessages=16"
    peeked = batch_receive_messages(raw.send("GET", f"{uri}&peekonly=true").body)
    assert sorted(m.fields["body"] or "" for m in peeked) == ["a", "b", "c"]
    for message in peeked:
        _complete(message, message.fields["body"] or "", received=False)
    received = batch_receive_messages(raw.send("GET", uri).body)
    assert len(received) == 3
    for message in received:
        _complete(message, message.fields["body"] or "", received=True)


def test_a_batch_with_user_properties_is_cut_short_by_the_sdk(queue: Queue, raw: RawClient) -> None:
    """The SDK's bug, not the shape's: parseUserPropertiesFromXML reads to the end of the
    document, so in a batch the messages after the first with UserProperties are lost, on the
    service too (docs/compatibility.md#php-sdk-140). System properties, ahead of them, survive."""
    for body in ("a", "b"):
        _send(queue, body, user=True)
    document = raw.send("GET", f"/queues/{queue.queue_name}/messages?numOfMessages=16").body
    messages = batch_receive_messages(document)
    assert len(messages) == 1
    _complete(messages[0], messages[0].fields["body"] or "", received=True)


def test_the_response_has_whitespace_between_all_elements(queue: Queue, raw: RawClient) -> None:
    """What the system-property reader needs: no element follows another directly."""
    _send(queue, "x", user=True)
    document = raw.send("GET", f"/queues/{queue.queue_name}/messages?peekonly=true").body
    nodes = reader_nodes(document)
    for before, after in itertools.pairwise(nodes):
        assert not (before.type == 15 and after.type == 1), (before, after)
        assert not (before.type == 1 and after.type == 1), (before, after)
