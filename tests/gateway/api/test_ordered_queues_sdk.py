"""Ordered (FIFO) queues through the official Python SDK, on each database backend.

The SDK cannot create an ordered queue (QueueMeta has no type), so ``<QueueType>`` is sent with
any XML client (docs/queues.md#ordered-queues); sending, receiving and deleting are the SDK's.
"""

from __future__ import annotations

import pytest
from mns.account import Account
from mns.queue import Message, Queue

from tests.gateway.api.sdk import put_queue, queue_element, server_error
from tests.mns_http import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture()
def fifo(account: Account, raw: RawClient, unique: str) -> Queue:
    assert put_queue(raw, unique, "<QueueType>FIFO</QueueType>") == 201
    queue = account.get_queue(unique)
    queue.set_encoding(False)
    return queue


def send(queue: Queue, body: str, group: str) -> None:
    queue.send_message(Message(body, message_group_id=group))


def test_one_message_in_flight_per_group_in_send_order(fifo: Queue, raw: RawClient) -> None:
    assert queue_element(raw, fifo.queue_name, "QueueType") == "fifo"
    for body, group in (("a1", "A"), ("b1", "B"), ("a2", "A"), ("a3", "A"), ("b2", "B")):
        send(fifo, body, group)
    first = fifo.batch_receive_message(16)
    assert sorted((m.message_body, m.message_group_id) for m in first) == [
        ("a1", "A"),
        ("b1", "B"),
    ]
    assert server_error(fifo.receive_message).type == "MessageNotExist"
    by_group = {m.message_group_id: m for m in first}
    fifo.delete_message(by_group["A"].receipt_handle)
    second = fifo.receive_message()
    assert (second.message_body, second.message_group_id) == ("a2", "A")
    fifo.delete_message(second.receipt_handle)
    fifo.delete_message(by_group["B"].receipt_handle)
    assert sorted(m.message_body for m in fifo.batch_receive_message(16)) == ["a3", "b2"]


def test_an_expired_visibility_gives_the_same_head_back(fifo: Queue) -> None:
    send(fifo, "head", "g")
    send(fifo, "next", "g")
    head = fifo.receive_message()
    fifo.change_message_visibility(head.receipt_handle, 0)  # as if its timeout had ended
    again = fifo.receive_message()
    assert (again.message_body, again.dequeue_count) == ("head", 2)


def test_the_head_deletes_with_the_handle_a_visibility_change_replaced(fifo: Queue) -> None:
    send(fifo, "head", "g")
    send(fifo, "next", "g")
    head = fifo.receive_message()
    fifo.change_message_visibility(head.receipt_handle, 100)
    fifo.delete_message(head.receipt_handle)
    following = fifo.receive_message()  # deleting the head freed its group
    assert (following.message_body, following.dequeue_count) == ("next", 1)


def test_sending_without_a_group_is_refused(fifo: Queue, raw: RawClient) -> None:
    error = server_error(lambda: fifo.send_message(Message("no group")))
    assert error.type == "FifoMissingMessageGroupId"
    body = (
        b'<Message xmlns="http://mns.aliyuncs.com/doc/v1/"><MessageBody>x</MessageBody></Message>'
    )
    response = raw.send("POST", f"/queues/{fifo.queue_name}/messages", body)
    assert (response.status, response.error_code()) == (400, "FifoMissingMessageGroupId")
    batch_error = server_error(
        lambda: fifo.batch_send_message([Message("ok", message_group_id="g"), Message("none")])
    )
    assert [entry.get("ErrorCode") for entry in batch_error.sub_errors] == [
        None,
        "FifoMissingMessageGroupId",
    ]


def test_the_type_cannot_change(fifo: Queue, raw: RawClient) -> None:
    assert put_queue(raw, fifo.queue_name, "<QueueType>fifo</QueueType>", override=True) == 204
    response = raw.send(
        "PUT",
        f"/queues/{fifo.queue_name}?metaoverride=true",
        b'<Queue xmlns="http://mns.aliyuncs.com/doc/v1/"><QueueType>normal</QueueType></Queue>',
    )
    assert (response.status, response.error_code()) == (400, "InvalidArgument")
    assert put_queue(raw, fifo.queue_name, "<QueueType>normal</QueueType>") == 409


def test_an_unknown_type_is_refused(raw: RawClient, unique: str) -> None:
    response = raw.send(
        "PUT",
        f"/queues/{unique}",
        b'<Queue xmlns="http://mns.aliyuncs.com/doc/v1/"><QueueType>lifo</QueueType></Queue>',
    )
    assert (response.status, response.error_code()) == (400, "InvalidArgument")
