"""UserProperties and SystemProperties checked as the service documents them
(docs/protocol.md#message-properties), through the official Python SDK where it lets a test
send the value, and as raw XML where it refuses to."""

from __future__ import annotations

import base64

import pytest
from mns.account import Account
from mns.message_property import (
    MessagePropertyValue,
    MessageSystemPropertyValue,
    PropertyType,
    SystemPropertyName,
)
from mns.queue import Message, Queue, QueueMeta
from mns.topic import TopicMessage, TopicMeta

from tests.gateway.api.sdk import NS, server_error, text_queue
from tests.mns_http import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture()
def queue(account: Account, unique: str) -> Queue:
    return text_queue(account, unique, QueueMeta(max_msg_size=2048))


def with_properties(**values: tuple[str, object]) -> Message:
    message = Message("body")
    for name, (kind, value) in values.items():
        message.add_user_property(name, MessagePropertyValue(kind, value))
    return message


def test_every_type_round_trips(queue: Queue) -> None:
    message = with_properties(
        s=(PropertyType.STRING, "text"),
        n=(PropertyType.NUMBER, 1.5),
        b=(PropertyType.BOOLEAN, True),
        x=(PropertyType.BINARY, b"\x00\xffbytes"),
    )
    message.add_system_property(
        SystemPropertyName.BAGGAGE, MessageSystemPropertyValue.create_string("k=v")
    )
    queue.send_message(message)
    got = queue.receive_message().get_user_properties()
    assert {k: v.get_data_type() for k, v in got.items()} == {
        "s": "STRING",
        "n": "NUMBER",
        "b": "BOOLEAN",
        "x": "BINARY",
    }
    assert got["x"].get_binary_value() == b"\x00\xffbytes"


def test_at_most_fifty(queue: Queue) -> None:
    fifty = {f"p{i}": (PropertyType.STRING, "v") for i in range(50)}
    queue.send_message(with_properties(**fifty))
    too_many = {**fifty, "p50": (PropertyType.STRING, "v")}
    assert server_error(lambda: queue.send_message(with_properties(**too_many))).type == (
        "InvalidArgument"
    )


@pytest.mark.parametrize("name", ["a..b", ".start", "end.", "sp ace", "x" * 257, "ünï"])
def test_names_follow_the_rules(queue: Queue, name: str) -> None:
    message = with_properties(**{name: (PropertyType.STRING, "v")})
    assert server_error(lambda: queue.send_message(message)).type == "InvalidArgument"


def test_values_are_limited_and_count_towards_the_size(queue: Queue) -> None:
    long = with_properties(k=(PropertyType.STRING, "v" * 4097))
    assert server_error(lambda: queue.send_message(long)).type == "InvalidArgument"
    # 1900 bytes of body and 200 of property: over the queue's 2048 together
    big = with_properties(k=(PropertyType.STRING, "v" * 200))
    big.message_body = "b" * 1900
    assert server_error(lambda: queue.send_message(big)).type == "InvalidArgument"


def raw_property(raw: RawClient, queue: str, name: str, value: str, kind: str) -> str | None:
    body = (
        f"<Message {NS}><MessageBody>b</MessageBody><UserProperties><PropertyValue>"
        f"<Name>{name}</Name><Value>{value}</Value><Type>{kind}</Type>"
        "</PropertyValue></UserProperties></Message>"
    ).encode()
    return raw.send("POST", f"/queues/{queue}/messages", body).error_code()


def test_types_and_typed_values_the_sdk_would_not_send(queue: Queue, raw: RawClient) -> None:
    name = queue.queue_name
    assert raw_property(raw, name, "k", "v", "DATE") == "InvalidArgument"
    assert raw_property(raw, name, "k", "yes", "BOOLEAN") == "InvalidArgument"
    assert raw_property(raw, name, "k", "not base64!", "BINARY") == "InvalidArgument"
    assert raw_property(raw, name, "k", base64.b64encode(b"ok").decode(), "binary") is None
    assert raw_property(raw, name, "k", "not a number", "NUMBER") is None  # not checked


def test_system_properties_are_the_sdk_names(queue: Queue, raw: RawClient) -> None:
    body = (
        f"<Message {NS}><MessageBody>b</MessageBody><SystemProperties><SystemPropertyValue>"
        "<Name>x-custom</Name><Value>1</Value><Type>STRING</Type>"
        "</SystemPropertyValue></SystemProperties></Message>"
    ).encode()
    response = raw.send("POST", f"/queues/{queue.queue_name}/messages", body)
    assert (response.status, response.error_code()) == (400, "InvalidArgument")


def test_topics_check_them_too(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    message = TopicMessage("body")
    message.add_user_property("a..b", MessagePropertyValue(PropertyType.STRING, "v"))
    assert server_error(lambda: topic.publish_message(message)).type == "InvalidArgument"
