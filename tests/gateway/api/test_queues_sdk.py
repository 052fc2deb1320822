"""Every queue operation driven through the official SDK against a gateway started like a user's."""

from __future__ import annotations

import base64
import hashlib
import threading

import pytest
from mns.account import Account
from mns.message_property import (
    MessagePropertyValue,
    MessageSystemPropertyValue,
    PropertyType,
    SystemPropertyName,
)
from mns.queue import Message, Queue, QueueMeta

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.sdk import server_error

#: The SDK marks the message counts deprecated; the gateway still reports them
#: (docs/protocol.md#queue-attributes).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture()
def queue(account: Account, unique: str) -> Queue:
    q = account.get_queue(unique)
    q.create(QueueMeta(vis_timeout=60))
    return q


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest().upper()


# queue management -----------------------------------------------------------------------------
def test_create_get_set_delete_queue(account: Account, unique: str) -> None:
    q = account.get_queue(unique)
    meta = QueueMeta(
        vis_timeout=45,
        max_msg_size=2048,
        msg_ttl=3600,
        delay_sec=2,
        polling_wait_sec=3,
        logging_enabled=True,
    )
    assert q.create(meta).endswith(f"/queues/{unique}")
    got = q.get_attributes()
    assert (got.queue_name, got.visibility_timeout, got.maximum_message_size) == (unique, 45, 2048)
    assert (got.message_retention_period, got.delay_seconds, got.polling_wait_seconds) == (
        3600,
        2,
        3,
    )
    assert got.logging_enabled is True and got.create_time > 0

    q.set_attributes(QueueMeta(vis_timeout=90, logging_enabled=False))
    changed = q.get_attributes()
    assert (changed.visibility_timeout, changed.logging_enabled, changed.delay_seconds) == (
        90,
        False,
        2,
    )
    assert changed.last_modify_time >= got.last_modify_time

    q.delete()
    assert server_error(q.get_attributes).type == "QueueNotExist"
    q.delete()  # deleting a missing queue succeeds


def test_defaults_and_recreation(account: Account, unique: str) -> None:
    q = account.get_queue(unique)
    q.create(QueueMeta())
    got = q.get_attributes()
    assert (got.delay_seconds, got.maximum_message_size, got.message_retention_period) == (
        0,
        65536,
        259200,
    )
    assert (got.visibility_timeout, got.polling_wait_seconds, got.logging_enabled) == (30, 0, False)
    q.create(QueueMeta(vis_timeout=30))  # identical: 204, no error
    assert server_error(lambda: q.create(QueueMeta(vis_timeout=31))).type == "QueueAlreadyExist"


def test_attribute_ranges(account: Account, unique: str) -> None:
    q = account.get_queue(unique)
    for meta in (QueueMeta(vis_timeout=43201), QueueMeta(msg_ttl=59), QueueMeta(delay_sec=604801)):
        assert server_error(lambda meta=meta: q.create(meta)).type == "InvalidArgument"
    assert server_error(lambda: q.set_attributes(QueueMeta(vis_timeout=5))).type == (
        "QueueNotExist"
    )


def test_list_queues_with_prefix_and_paging(account: Account, unique: str) -> None:
    names = [f"{unique}-{i:02d}" for i in range(5)]
    for name in names:
        account.get_queue(name).create(QueueMeta())
    seen: list[str] = []
    marker = ""
    for _ in range(10):
        urls, marker = account.list_queue(prefix=unique, ret_number=2, marker=marker)
        seen += [url.rsplit("/", 1)[1] for url in urls]
        if not marker:
            break
    assert seen == names


# sending and receiving ------------------------------------------------------------------------
@pytest.mark.parametrize("encoded", [True, False])
def test_send_receive_delete(queue: Queue, encoded: bool) -> None:
    queue.set_encoding(encoded)
    text = "héllo <wörld> & 中文"
    sent = queue.send_message(Message(text))
    wire_body = base64.b64encode(text.encode()).decode() if encoded else text
    assert sent.message_body_md5 == md5(wire_body)  # MD5 of the body as sent, never decoded

    received = queue.receive_message()
    body = received.message_body.decode() if encoded else received.message_body
    assert (received.message_id, body, received.message_body_md5) == (
        sent.message_id,
        text,
        sent.message_body_md5,
    )
    assert (received.dequeue_count, received.priority) == (1, 8)
    assert received.first_dequeue_time >= received.enqueue_time
    assert received.next_visible_time >= received.first_dequeue_time + 60_000
    queue.delete_message(received.receipt_handle)
    assert server_error(queue.receive_message).type == "MessageNotExist"


def test_batch_send_receive_peek_delete(queue: Queue) -> None:
    queue.set_encoding(False)
    sent = queue.batch_send_message([Message(f"m{i}") for i in range(16)])
    assert [m.message_body_md5 for m in sent] == [md5(f"m{i}") for i in range(16)]

    peeked = queue.batch_peek_message(16)
    assert [m.message_body for m in peeked] == [f"m{i}" for i in range(16)]
    assert {m.dequeue_count for m in peeked} == {0}

    received = queue.batch_receive_message(10)
    assert [m.message_id for m in received] == [m.message_id for m in sent[:10]]
    queue.batch_delete_message([m.receipt_handle for m in received])
    assert len(queue.batch_receive_message(16)) == 6
    assert server_error(lambda: queue.batch_peek_message(16)).type == "MessageNotExist"


def test_peek_leaves_the_message_active(queue: Queue) -> None:
    queue.set_encoding(False)
    assert server_error(queue.peek_message).type == "MessageNotExist"
    queue.send_message(Message("look"))
    peeked = queue.peek_message()
    assert (peeked.message_body, peeked.dequeue_count) == ("look", 0)
    assert peeked.first_dequeue_time == peeked.enqueue_time
    assert queue.receive_message().message_id == peeked.message_id
    assert server_error(queue.peek_message).type == "MessageNotExist"  # Inactive now


def test_priority_then_age(queue: Queue) -> None:
    queue.set_encoding(False)
    queue.send_message(Message("old"))
    queue.send_message(Message("urgent", priority=1))
    queue.send_message(Message("young"))
    queue.send_message(Message("unimportant", priority=16))
    bodies = [m.message_body for m in queue.batch_receive_message(16)]
    assert bodies == ["urgent", "old", "young", "unimportant"]


def test_delays_and_counts(account: Account, unique: str) -> None:
    q = account.get_queue(unique)
    q.create(QueueMeta(delay_sec=300, vis_timeout=60))
    q.set_encoding(False)
    delayed = q.send_message(Message("queue delay"))
    assert delayed.receipt_handle  # docs/protocol.md#message-states
    q.send_message(Message("no delay", delay_seconds=0))
    q.send_message(Message("own delay", delay_seconds=60))
    q.send_message(Message("will be received", delay_seconds=0))
    q.receive_message()
    counts = q.get_attributes()
    assert (counts.active_messages, counts.inactive_messages, counts.delay_messages) == (1, 1, 2)
    q.delete_message(delayed.receipt_handle)  # a Delayed message can be withdrawn
    assert q.get_attributes().delay_messages == 1


def test_change_visibility(queue: Queue) -> None:
    queue.send_message(Message("x"))
    received = queue.receive_message()
    changed = queue.change_message_visibility(received.receipt_handle, 100)
    assert changed.receipt_handle != received.receipt_handle
    assert int(changed.next_visible_time) > received.next_visible_time
    queue.change_message_visibility(changed.receipt_handle, 0)  # visible again right now
    again = queue.receive_message()
    assert again.dequeue_count == 2
    for earlier in (received.receipt_handle, changed.receipt_handle):  # an earlier receive's
        error = server_error(lambda h=earlier: queue.delete_message(h))
        assert error.type == "MessageNotExist"
    queue.delete_message(again.receipt_handle)


def test_the_handle_a_visibility_change_replaced_still_deletes(queue: Queue) -> None:
    """The PHP SDK's own testMessage and testMessageNoBase64 do this (issue 36 item 2):
    receive, change the visibility, delete with the handle the receive gave."""
    queue.send_message(Message("x"))
    received = queue.receive_message()
    queue.change_message_visibility(received.receipt_handle, 100)
    changed = queue.change_message_visibility(received.receipt_handle, 200)
    assert int(changed.next_visible_time) > received.next_visible_time
    queue.delete_message(received.receipt_handle)
    error = server_error(lambda: queue.delete_message(changed.receipt_handle))
    assert error.type == "MessageNotExist"  # deleted: every handle of the receive is spent
    assert server_error(queue.peek_message).type == "MessageNotExist"


def test_properties_and_group_id_come_back_unchanged(queue: Queue) -> None:
    message = Message("with properties", message_group_id="group-1")
    message.add_user_property("color", MessagePropertyValue(PropertyType.STRING, "red"))
    message.add_user_property("size", MessagePropertyValue(PropertyType.NUMBER, 42))
    message.add_system_property(
        SystemPropertyName.TRACEPARENT,
        MessageSystemPropertyValue("STRING", "00-abc-def-01"),
    )
    queue.send_message(message)
    received = queue.receive_message()
    assert received.message_group_id == "group-1"
    user = received.get_user_properties()
    assert (user["color"].get_raw_value(), user["size"].get_data_type()) == ("red", "NUMBER")
    assert received.get_system_properties()[SystemPropertyName.TRACEPARENT]


def test_errors_for_missing_queues(account: Account, unique: str) -> None:
    q = account.get_queue(unique)
    for call in (q.receive_message, q.peek_message, lambda: q.send_message(Message("x"))):
        assert server_error(call).type == "QueueNotExist"


# batch partial failures -----------------------------------------------------------------------
def test_batch_send_partial_failure(account: Account, unique: str) -> None:
    q = account.get_queue(unique)
    q.create(QueueMeta(max_msg_size=1024))
    q.set_encoding(False)
    error = server_error(
        lambda: q.batch_send_message([Message("ok"), Message("x" * 2000), Message("ok too")])
    )
    assert error.type == "InvalidArgument"
    assert [sorted(entry) for entry in error.sub_errors] == [
        ["MessageBodyMD5", "MessageId"],
        ["ErrorCode", "ErrorMessage"],
        ["MessageBodyMD5", "MessageId"],
    ]
    assert [m.message_body for m in q.batch_receive_message(16)] == ["ok", "ok too"]


def test_batch_delete_partial_failure(queue: Queue) -> None:
    queue.batch_send_message([Message("a"), Message("b")])
    first, second = queue.batch_receive_message(2)
    queue.delete_message(first.receipt_handle)
    error = server_error(
        lambda: queue.batch_delete_message([first.receipt_handle, second.receipt_handle])
    )
    assert error.type == "MessageNotExist"
    assert error.sub_errors == [
        {
            "ErrorCode": "MessageNotExist",
            "ErrorMessage": "Message not exist.",
            "ReceiptHandle": first.receipt_handle,
        }
    ]
    assert server_error(queue.receive_message).type == "MessageNotExist"  # second was deleted


# long polling ---------------------------------------------------------------------------------
def test_a_long_poll_is_woken_by_a_send(gateway_process: RunningGateway, queue: Queue) -> None:
    sender = Account(gateway_process.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    sender_queue = sender.get_queue(queue.queue_name)
    sender_queue.set_encoding(False)
    timer = threading.Timer(0.3, lambda: sender_queue.send_message(Message("wake up")))
    timer.start()
    try:
        queue.set_encoding(False)
        assert queue.receive_message(wait_seconds=30).message_body == "wake up"
    finally:
        timer.join(timeout=30)


def test_an_empty_long_poll_ends_with_message_not_exist(queue: Queue) -> None:
    assert server_error(lambda: queue.batch_receive_message(4, wait_seconds=1)).type == (
        "MessageNotExist"
    )
