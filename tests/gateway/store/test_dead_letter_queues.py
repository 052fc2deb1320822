"""Queue dead-letter policies on each backend: a message received MaxReceiveCount times moves to
the target queue at the receive that would exceed the count, with its retention unchanged."""

from __future__ import annotations

import pytest

from gateway.queues.dlq_policy import DeadLetterPolicy, PolicyUpdate
from gateway.queues.records import NewMessage, QueueType
from gateway.store.queues import QueueStore
from tests.conftest import OpenDatabase
from tests.gateway.store.queue_helpers import (
    T0,
    counts,
    error_code,
    make_queue,
    open_store,
    send,
)
from tests.support.clock import Clock


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> QueueStore:
    return open_store(open_database, clock, region="cn-test", account_id="42")


def with_dlq(store: QueueStore, max_receive_count: int = 2, **attributes: object) -> None:
    make_queue(store, "dlq")
    policy = DeadLetterPolicy("dlq", max_receive_count)
    make_queue(store, "q", visibility_timeout=10, dead_letter_policy=policy, **attributes)


def test_moves_at_the_receive_that_would_exceed_the_count(store: QueueStore, clock: Clock) -> None:
    with_dlq(store, max_receive_count=2, message_retention_period=600)
    original = send(
        store,
        "q",
        "poison",
        priority=3,
        properties={"UserProperties": [{"Name": "k", "Value": "v", "Type": "STRING"}]},
    )
    for expected_count in (1, 2):
        (message,) = store.receive("q", 1, 0).messages
        assert message.dequeue_count == expected_count
        clock.now += 10
    third = store.receive("q", 1, 0)
    assert third.messages == []
    (moved,) = third.moved
    assert (moved.message_id, moved.dequeue_count, moved.dead_letter_queue) == (original, 2, "dlq")
    assert counts(store, "q") == (0, 0, 0)
    (dead,) = store.receive("dlq", 1, 0).messages
    assert (dead.message_id, dead.body, dead.priority) == (
        moved.dead_letter_message_id,
        "poison",
        3,
    )
    assert dead.dequeue_count == 1
    assert dead.properties["UserProperties"] == [{"Name": "k", "Value": "v", "Type": "STRING"}]
    system = {p["Name"]: p["Value"] for p in dead.properties["SystemProperties"]}
    assert system == {
        "DLQMessageType": "QUEUE",
        "DLQSourceArn": "acs:mns:cn-test:42:/queues/q",
        "DLQOriginMessageId": original,
    }
    # retention is not reset: the message expires 600 s after it was first sent
    store.change_visibility("dlq", dead.receipt_handle or "", 0)
    clock.now = T0 + 599
    assert counts(store, "dlq") == (1, 0, 0)
    clock.now = T0 + 600
    assert counts(store, "dlq") == (0, 0, 0)


def test_a_batch_receive_takes_the_others(store: QueueStore, clock: Clock) -> None:
    with_dlq(store, max_receive_count=1)
    send(store, "q", "poison")
    store.receive("q", 1, 0)
    clock.now += 10
    send(store, "q", "fresh")
    result = store.receive("q", 16, 0)
    assert [m.body for m in result.messages] == ["fresh"]
    assert len(result.moved) == 1


def test_a_long_poll_reports_the_moves_it_made(store: QueueStore, clock: Clock) -> None:
    with_dlq(store, max_receive_count=1)
    send(store, "q", "poison")
    store.receive("q", 1, 0)
    clock.now += 10
    result = store.receive("q", 1, 1)  # moves it, then waits (up to 1 s) for more
    assert (result.messages, len(result.moved)) == ([], 1)


def test_ordered_queue_head_moves_and_the_next_one_is_received(
    store: QueueStore, clock: Clock
) -> None:
    with_dlq(store, max_receive_count=1, queue_type=QueueType.FIFO)
    group = {"MessageGroupId": "g"}
    store.send("q", [NewMessage("bad", properties=group), NewMessage("good", properties=group)])
    assert [m.body for m in store.receive("q", 1, 0).messages] == ["bad"]
    clock.now += 10
    result = store.receive("q", 1, 0)
    assert [m.body for m in result.messages] == ["good"]
    (dead,) = store.receive("dlq", 1, 0).messages
    assert (dead.body, dead.properties["MessageGroupId"]) == ("bad", "g")


def test_into_an_ordered_dead_letter_queue(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "dlq", queue_type=QueueType.FIFO)
    make_queue(store, "q", visibility_timeout=10, dead_letter_policy=DeadLetterPolicy("dlq", 1))
    send(store, "q", "no group")  # a standard queue's message: a group of its own there
    store.receive("q", 1, 0)
    clock.now += 10
    assert len(store.receive("q", 1, 0).moved) == 1
    assert [m.body for m in store.receive("dlq", 1, 0).messages] == ["no group"]


def test_without_its_target_a_message_is_received_as_usual(store: QueueStore, clock: Clock) -> None:
    with_dlq(store, max_receive_count=1)
    send(store, "q", "x")
    store.receive("q", 1, 0)
    store.delete_queue("dlq")
    clock.now += 10
    result = store.receive("q", 1, 0)
    assert ([m.dequeue_count for m in result.messages], result.moved) == ([2], [])


def test_policies_are_checked_and_changed_field_by_field(store: QueueStore) -> None:
    make_queue(store, "dlq")
    make_queue(store, "q")
    assert (
        error_code(
            lambda: store.set_queue_attributes("q", {}, dead_letter_policy=PolicyUpdate("q", 3))
        )
        == "InvalidArgument"
    )  # its own dead-letter queue
    assert (
        error_code(
            lambda: store.set_queue_attributes("q", {}, dead_letter_policy=PolicyUpdate("nope", 3))
        )
        == "InvalidArgument"
    )  # a missing one
    assert (
        error_code(
            lambda: store.set_queue_attributes("q", {}, dead_letter_policy=PolicyUpdate("dlq"))
        )
        == "InvalidArgument"
    )  # enabled without MaxReceiveCount
    store.set_queue_attributes("q", {}, dead_letter_policy=PolicyUpdate("dlq", 3))
    store.set_queue_attributes("q", {}, dead_letter_policy=PolicyUpdate(max_receive_count=5))
    assert store.get_queue("q")[0].attributes.dead_letter_policy == DeadLetterPolicy("dlq", 5)
    store.set_queue_attributes("q", {}, dead_letter_policy=PolicyUpdate(enabled=False))
    policy = store.get_queue("q")[0].attributes.dead_letter_policy
    assert policy == DeadLetterPolicy("dlq", 5, enabled=False)


def test_a_disabled_policy_moves_nothing(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "dlq")
    policy = DeadLetterPolicy("dlq", 1, enabled=False)
    make_queue(store, "q", visibility_timeout=10, dead_letter_policy=policy)
    send(store, "q", "x")
    store.receive("q", 1, 0)
    clock.now += 10
    assert [m.dequeue_count for m in store.receive("q", 1, 0).messages] == [2]


def test_creating_a_queue_checks_its_policy(store: QueueStore) -> None:
    assert error_code(lambda: make_queue(store, "q", dead_letter_policy=DeadLetterPolicy("dlq", 1)))
    make_queue(store, "dlq")
    make_queue(store, "q", dead_letter_policy=DeadLetterPolicy("dlq", 1))
    assert (
        error_code(lambda: make_queue(store, "q", dead_letter_policy=DeadLetterPolicy("dlq", 2)))
        == "QueueAlreadyExist"
    )
