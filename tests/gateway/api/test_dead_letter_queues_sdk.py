"""Queue dead-letter policies through the official Python SDK, on each database backend.

The SDK has no setter for a dead-letter policy, so the policy is set with the ``<DlqPolicy>``
element (docs/queues.md#the-dlqpolicy-element); everything else is the SDK's own calls.
"""

from __future__ import annotations

import json

import pytest
from mns.account import Account
from mns.message_property import MessagePropertyValue, PropertyType, SystemPropertyName
from mns.mns_request import ListQueueRequest, ListQueueResponse
from mns.queue import Message, Queue, QueueMeta

from tests.gateway.api.sdk import NS, put_queue, queue_element, server_error
from tests.mns_http import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture()
def queues(account: Account, raw: RawClient, unique: str) -> tuple[Queue, Queue]:
    """``(source, dead-letter queue)``: the source moves a message after 2 receives."""
    dlq = account.get_queue(f"{unique}-dlq")
    dlq.create(QueueMeta())
    policy = json.dumps({"DeadLetterTargetQueue": f"{unique}-dlq", "MaxReceiveCount": 2})
    assert put_queue(raw, unique, f"<DlqPolicy>{policy}</DlqPolicy>") == 201
    source = account.get_queue(unique)
    for queue in (source, dlq):
        queue.set_encoding(False)  # bodies as text, not base64
    return source, dlq


def receive_and_release(queue: Queue) -> int:
    message = queue.receive_message()
    queue.change_message_visibility(message.receipt_handle, 0)  # received, not deleted
    return message.dequeue_count


def test_a_message_moves_at_the_receive_that_would_exceed_max_receive_count(
    queues: tuple[Queue, Queue],
) -> None:
    source, dlq = queues
    message = Message("poison", priority=2)
    message.add_user_property("order", MessagePropertyValue(PropertyType.STRING, "o-1"))
    sent = source.send_message(message)
    assert [receive_and_release(source) for _ in range(2)] == [1, 2]
    assert server_error(source.receive_message).type == "MessageNotExist"  # moved, not received
    dead = dlq.receive_message()
    assert (dead.message_body, dead.dequeue_count, dead.priority) == ("poison", 1, 2)
    assert dead.message_id != sent.message_id
    assert dead.get_user_properties()["order"].get_raw_value() == "o-1"
    system = {k: v.get_raw_value() for k, v in dead.get_system_properties().items()}
    assert system[SystemPropertyName.DLQ_ORIGIN_MESSAGE_ID] == sent.message_id
    assert system[SystemPropertyName.DLQ_MESSAGE_TYPE] == "QUEUE"
    assert system[SystemPropertyName.DLQ_SOURCE_ARN].endswith(f":/queues/{source.queue_name}")


def test_the_policy_is_returned_and_changed_field_by_field(
    queues: tuple[Queue, Queue], raw: RawClient
) -> None:
    source, dlq = queues
    policy = json.loads(queue_element(raw, source.queue_name, "DlqPolicy") or "")
    assert policy == {
        "DeadLetterTargetQueue": dlq.queue_name,
        "MaxReceiveCount": 2,
        "Enabled": True,
    }
    assert source.get_attributes().visibility_timeout == 30  # the SDK still reads the rest
    inner = "<DlqPolicy><MaxReceiveCount>5</MaxReceiveCount></DlqPolicy>"
    assert put_queue(raw, source.queue_name, inner, override=True) == 204
    changed = json.loads(queue_element(raw, source.queue_name, "DlqPolicy") or "")
    assert (changed["MaxReceiveCount"], changed["Enabled"]) == (5, True)
    assert (
        put_queue(raw, source.queue_name, '<DlqPolicy>{"Enabled":false}</DlqPolicy>', override=True)
        == 204
    )
    source.send_message(Message("kept"))
    assert [receive_and_release(source) for _ in range(6)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    ("policy", "code"),
    [
        ('{"DeadLetterTargetQueue":"SELF","MaxReceiveCount":3}', "InvalidArgument"),
        ('{"DeadLetterTargetQueue":"missing-queue","MaxReceiveCount":3}', "InvalidArgument"),
        ('{"DeadLetterTargetQueue":"DLQ","MaxReceiveCount":0}', "InvalidArgument"),
        ('{"DeadLetterTargetQueue":"DLQ"}', "InvalidArgument"),
        ("not json", "InvalidArgument"),
        ("[" * 100_000 + "]" * 100_000, "InvalidArgument"),  # nested too deep to read
        # Integers are ASCII digits (docs/http.md#integers), in JSON text and child elements.
        ('{"DeadLetterTargetQueue":"DLQ","MaxReceiveCount":"1_0"}', "InvalidArgument"),
        ('{"DeadLetterTargetQueue":"DLQ","MaxReceiveCount":"\uff13"}', "InvalidArgument"),
        ('{"DeadLetterTargetQueue":"DLQ","MaxReceiveCount":true}', "InvalidArgument"),
        (
            "<DeadLetterTargetQueue>DLQ</DeadLetterTargetQueue><MaxReceiveCount>+3</MaxReceiveCount>",
            "InvalidArgument",
        ),
    ],
)
def test_bad_policies_are_refused(
    account: Account, raw: RawClient, unique: str, policy: str, code: str
) -> None:
    account.get_queue(f"{unique}-dlq").create(QueueMeta())
    policy = policy.replace("SELF", unique).replace("DLQ", f"{unique}-dlq")
    response = raw.send(
        "PUT", f"/queues/{unique}", f"<Queue {NS}><DlqPolicy>{policy}</DlqPolicy></Queue>".encode()
    )
    assert (response.status, response.error_code()) == (400, code)
    assert server_error(account.get_queue(unique).get_attributes).type == "QueueNotExist"


def test_list_queue_meta_carries_the_policy_without_breaking_the_sdk(
    queues: tuple[Queue, Queue], account: Account
) -> None:
    source, dlq = queues
    request = ListQueueRequest(source.queue_name, with_meta=True)
    response = ListQueueResponse()
    account.mns_client.list_queue(request, response)
    (meta,) = [m for m in response.queuemeta_list if m["QueueName"] == source.queue_name]
    assert meta["QueueType"] == "normal"
    assert json.loads(meta["DlqPolicy"])["DeadLetterTargetQueue"] == dlq.queue_name
