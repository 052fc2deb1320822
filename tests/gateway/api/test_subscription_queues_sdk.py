"""Subscriptions and queues through the official Python SDK, on each database backend: the
QueueEndpoint checks at Subscribe, a subscription's dead-letter queue, and the properties a push
into a queue carries (docs/delivery.md)."""

from __future__ import annotations

import json
import time

import pytest
from mns.account import Account
from mns.message_property import (
    MessagePropertyValue,
    MessageSystemPropertyValue,
    PropertyType,
    SystemPropertyName,
)
from mns.subscription import SubscriptionMeta
from mns.topic import Topic, TopicMessage, TopicMeta

from tests.conftest import free_port
from tests.gateway.api.sdk import NS, put_queue, server_error, text_queue
from tests.mns_http import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
LOCAL = "acs:mns:local:1234567890:queues"


@pytest.fixture()
def topic(account: Account, unique: str) -> Topic:
    t = account.get_topic(unique)
    t.create(TopicMeta())
    return t


def subscribe(raw: RawClient, topic: str, name: str, inner: str) -> tuple[int, str | None]:
    body = f"<Subscription {NS}>{inner}</Subscription>".encode()
    response = raw.send("PUT", f"/topics/{topic}/subscriptions/{name}", body)
    return response.status, response.error_code()


def test_a_queue_endpoint_needs_a_queue_someone_serves(
    account: Account, topic: Topic, unique: str
) -> None:
    subscription = topic.get_subscription("s")
    for endpoint in (f"{LOCAL}/{unique}-missing", f"acs:mns:cn-elsewhere:999:queues/{unique}"):
        error = server_error(lambda e=endpoint: subscription.subscribe(SubscriptionMeta(e)))
        assert error.type == "EndpointInvalid"
    text_queue(account, f"{unique}-here")
    subscription.subscribe(SubscriptionMeta(f"{LOCAL}/{unique}-here"))


def test_a_dead_letter_queue_must_exist_and_not_be_the_endpoint(
    account: Account, raw: RawClient, topic: Topic, unique: str
) -> None:
    text_queue(account, unique)
    endpoint = f"<Endpoint>{LOCAL}/{unique}</Endpoint>"
    own = f'<DlqPolicy>{{"DeadLetterTargetQueue":"{unique}"}}</DlqPolicy>'
    missing = f'<DlqPolicy>{{"DeadLetterTargetQueue":"{unique}-nope"}}</DlqPolicy>'
    assert subscribe(raw, topic.topic_name, "s", endpoint + own) == (400, "InvalidArgument")
    assert subscribe(raw, topic.topic_name, "s", endpoint + missing) == (400, "InvalidArgument")
    text_queue(account, f"{unique}-dlq")
    good = f"<DlqPolicy><DeadLetterTargetQueue>{unique}-dlq</DeadLetterTargetQueue></DlqPolicy>"
    assert subscribe(raw, topic.topic_name, "s", endpoint + good) == (201, None)
    attributes = topic.get_subscription("s").get_attributes()  # the SDK reads it as before
    assert attributes.endpoint == f"{LOCAL}/{unique}"
    body = raw.send("GET", f"/topics/{topic.topic_name}/subscriptions/s").body.decode()
    assert f'"DeadLetterTargetQueue":"{unique}-dlq"' in body
    off = f'<Subscription {NS}><DlqPolicy>{{"Enabled":false}}</DlqPolicy></Subscription>'
    uri = f"/topics/{topic.topic_name}/subscriptions/s?metaoverride=true"
    assert raw.send("PUT", uri, off.encode()).status == 204
    assert '"Enabled":false' in raw.send("GET", uri.split("?")[0]).body.decode()


def publish_rich(topic: Topic, body: str, group: str = "g1") -> str:
    message = TopicMessage(body, "the-tag", message_group_id=group)
    message.add_user_property("kind", MessagePropertyValue(PropertyType.STRING, "order"))
    message.add_system_property(
        SystemPropertyName.TRACEPARENT, MessageSystemPropertyValue.create_string("00-a-b-01")
    )
    return topic.publish_message(message).message_id


def test_pushes_into_queues_carry_group_properties_and_tag(
    account: Account, topic: Topic, unique: str
) -> None:
    xml_queue, plain_queue = text_queue(account, unique), text_queue(account, f"{unique}-plain")
    topic.get_subscription("xml").subscribe(SubscriptionMeta(f"{LOCAL}/{unique}"))
    topic.get_subscription("plain").subscribe(
        SubscriptionMeta(f"{LOCAL}/{unique}-plain", notify_content_format="SIMPLIFIED")
    )
    publish_rich(topic, "payload")
    for queue in (xml_queue, plain_queue):
        received = queue.receive_message(wait_seconds=10)
        assert received.message_group_id == "g1"
        assert received.get_user_properties()["kind"].get_raw_value() == "order"
        assert SystemPropertyName.TRACEPARENT in received.get_system_properties()
    assert "<MessageTag>the-tag</MessageTag>" in xml_received_body(account, topic, unique)


def xml_received_body(account: Account, topic: Topic, unique: str) -> str:
    publish_rich(topic, "again")
    message = text_queue(account, unique).receive_message(wait_seconds=10)
    return str(message.message_body)


def test_pushes_into_an_ordered_queue_keep_their_groups(
    account: Account, raw: RawClient, topic: Topic, unique: str
) -> None:
    assert put_queue(raw, unique, "<QueueType>fifo</QueueType>") == 201
    queue = account.get_queue(unique)
    queue.set_encoding(False)
    topic.get_subscription("s").subscribe(
        SubscriptionMeta(f"{LOCAL}/{unique}", notify_content_format="SIMPLIFIED")
    )
    for body in ("first", "second"):
        publish_rich(topic, body, group="orders")
    # Two pushes may be in flight at once and arrive in either order (MNS promises none:
    # docs/delivery.md); whichever is first holds the group until it is deleted.
    head = queue.receive_message(wait_seconds=10)
    assert head.message_body in ("first", "second")
    time.sleep(0.5)  # the other push has long arrived; its group is locked
    assert server_error(queue.receive_message).type == "MessageNotExist"
    queue.delete_message(head.receipt_handle)
    other = queue.receive_message(wait_seconds=10).message_body
    assert {head.message_body, other} == {"first", "second"}


def test_a_push_whose_retries_ran_out_goes_to_the_dead_letter_queue(
    account: Account, raw: RawClient, topic: Topic, unique: str
) -> None:
    dlq = text_queue(account, f"{unique}-dlq")
    nobody = f"http://127.0.0.1:{free_port()}/gone"  # refused: retried, then dead
    inner = (
        f"<Endpoint>{nobody}</Endpoint><NotifyContentFormat>JSON</NotifyContentFormat>"
        f'<DlqPolicy>{{"DeadLetterTargetQueue":"{unique}-dlq","Enabled":true}}</DlqPolicy>'
    )
    assert subscribe(raw, topic.topic_name, "s", inner) == (201, None)
    message_id = publish_rich(topic, "undeliverable")
    dead = dlq.receive_message(wait_seconds=20)
    notification = json.loads(dead.message_body)
    assert (notification["MessageId"], notification["Message"]) == (message_id, "undeliverable")
    assert notification["MessageTag"] == "the-tag"
    assert dead.message_group_id == "g1"
    system = {k: v.get_raw_value() for k, v in dead.get_system_properties().items()}
    assert system[SystemPropertyName.DLQ_MESSAGE_TYPE] == "TOPIC"
    assert system[SystemPropertyName.DLQ_ORIGIN_MESSAGE_ID] == message_id
    assert system[SystemPropertyName.DLQ_SOURCE_ARN].endswith(
        f":/topics/{topic.topic_name}/subscriptions/s"
    )
    (letter,) = dead_letters(raw, topic.topic_name)
    assert letter["DeadLetterQueue"] == {"Queue": f"{unique}-dlq", "MessageId": dead.message_id}


def dead_letters(raw: RawClient, topic: str) -> list[dict[str, object]]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        response = raw.send("GET", f"/admin/dead-letters?topic={topic}")
        letters = json.loads(response.body)["DeadLetters"]
        if letters:
            return letters
        time.sleep(0.1)
    return []
