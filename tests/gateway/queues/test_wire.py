"""Parsing queue requests and rendering queue responses, without a server."""

from __future__ import annotations

import pytest

from gateway.errors.mns import MNSError
from gateway.protocol.xml import parse_document, render_document
from gateway.queues.records import NewMessage, QueueAttributes, QueueMessage, SentMessage
from gateway.queues.wire import (
    message_nodes,
    parse_batch,
    parse_new_message,
    parse_properties,
    property_nodes,
    queue_attribute_changes,
    root_name,
    sent_nodes,
)

NS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'


def element(xml: str, root: str):  # type: ignore[no-untyped-def]
    return parse_document(xml.encode(), root)


def test_root_name_skips_the_declaration_and_comments() -> None:
    assert root_name(b'<?xml version="1.0"?><!-- x --><Messages/>') == "Messages"
    assert root_name(b"<mns:Message xmlns:mns='x'/>") == "Message"
    assert root_name(b"") == ""


def test_queue_attributes_with_and_without_defaults() -> None:
    root = element(
        f"<Queue {NS}><DelaySeconds>5</DelaySeconds><LoggingEnabled>TRUE</LoggingEnabled></Queue>",
        "Queue",
    )
    assert queue_attribute_changes(root, defaults=False) == {
        "delay_seconds": 5,
        "logging_enabled": True,
    }
    everything = queue_attribute_changes(root, defaults=True)
    assert QueueAttributes(**everything) == QueueAttributes(delay_seconds=5, logging_enabled=True)
    assert QueueAttributes(**queue_attribute_changes(None, defaults=True)) == QueueAttributes()


@pytest.mark.parametrize(
    ("element_xml", "code"),
    [
        ("<VisibilityTimeout>0</VisibilityTimeout>", "InvalidArgument"),
        ("<MessageRetentionPeriod>1296000</MessageRetentionPeriod>", "InvalidArgument"),
        ("<PollingWaitSeconds>31</PollingWaitSeconds>", "InvalidArgument"),
        ("<MaximumMessageSize>1023</MaximumMessageSize>", "InvalidArgument"),
        ("<LoggingEnabled>yes</LoggingEnabled>", "InvalidArgument"),
    ],
)
def test_queue_attribute_ranges(element_xml: str, code: str) -> None:
    root = element(f"<Queue>{element_xml}</Queue>", "Queue")
    with pytest.raises(MNSError) as caught:
        queue_attribute_changes(root, defaults=True)
    assert caught.value.code == code


def test_a_message_keeps_its_body_and_properties_verbatim() -> None:
    root = element(
        f"<Message {NS}><MessageBody>  a&amp;b  </MessageBody><Priority>3</Priority>"
        "<DelaySeconds>0</DelaySeconds><MessageGroupId>g1</MessageGroupId>"
        "<UserProperties><PropertyValue><Name>k</Name><Value>v</Value><Type>STRING</Type>"
        "</PropertyValue></UserProperties></Message>",
        "Message",
    )
    message = parse_new_message(root)
    assert message == NewMessage(
        "  a&b  ",
        3,
        0,
        {
            "UserProperties": [{"Name": "k", "Value": "v", "Type": "STRING"}],
            "MessageGroupId": "g1",
        },
    )
    rendered = render_document("Message", property_nodes(message.properties))
    assert parse_properties(parse_document(rendered, "Message")) == message.properties


@pytest.mark.parametrize(
    "inner",
    [
        "",
        "<MessageBody></MessageBody>",
        "<MessageBody>x</MessageBody><Priority>0</Priority>",
        "<MessageBody>x</MessageBody><DelaySeconds>604801</DelaySeconds>",
    ],
)
def test_bad_messages(inner: str) -> None:
    with pytest.raises(MNSError) as caught:
        parse_new_message(element(f"<Message>{inner}</Message>", "Message"))
    assert caught.value.code == "InvalidArgument"


def test_a_batch_fails_per_message_or_whole() -> None:
    good = "<Message><MessageBody>x</MessageBody></Message>"
    bad = "<Message><MessageBody>x</MessageBody><Priority>99</Priority></Message>"
    parsed = parse_batch(element(f"<Messages>{good}{bad}{good}</Messages>", "Messages"))
    assert [type(p).__name__ for p in parsed] == ["NewMessage", "MNSError", "NewMessage"]
    for body in ("", good * 17, f"<Message><MessageBody>{'x' * 65537}</MessageBody></Message>"):
        with pytest.raises(MNSError):
            parse_batch(element(f"<Messages>{body}</Messages>", "Messages"))


def test_received_and_peeked_messages_render_what_the_sdk_requires() -> None:
    message = QueueMessage("id", "body", "MD5", 8, 1, 2, 1, 1, {}, "handle")
    received = [name for name, _ in message_nodes(message, received=True)]
    assert received == [
        "MessageId",
        "ReceiptHandle",
        "MessageBodyMD5",
        "MessageBody",
        "EnqueueTime",
        "NextVisibleTime",
        "FirstDequeueTime",
        "DequeueCount",
        "Priority",
    ]
    peeked = [name for name, _ in message_nodes(message, received=False)]
    assert "ReceiptHandle" not in peeked and "NextVisibleTime" not in peeked


def test_sent_message_nodes() -> None:
    sent = SentMessage("id", "MD5", 5, "handle", {"MessageGroupId": "g"})
    assert [n for n, _ in sent_nodes(sent, with_handle=True, with_group=True)] == [
        "MessageId",
        "MessageBodyMD5",
        "ReceiptHandle",
        "MessageGroupId",
    ]
    assert [n for n, _ in sent_nodes(sent, with_handle=False, with_group=False)] == [
        "MessageId",
        "MessageBodyMD5",
    ]
