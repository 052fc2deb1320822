"""An ordered queue served by two ``mns-gateway serve`` replicas on one PostgreSQL database,
driven through the official Python SDK: each group's messages are received in send order, one at
a time, whichever replica producers and consumers talk to, and a group whose head was in flight
on a SIGKILLed replica resumes on the other with that same head."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Message, Queue

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.e2e.test_replicas import Replicas, replicas  # noqa: F401 - the fixture
from tests.ordering import GroupOrder

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
GROUPS, PER_GROUP = 12, 10


def fifo(gateway: RunningGateway, visibility: int) -> Queue:
    body = (
        "<Queue><QueueType>fifo</QueueType>"
        f"<VisibilityTimeout>{visibility}</VisibilityTimeout></Queue>"
    ).encode()
    assert gateway.raw().send("PUT", "/queues/ordered", body).status in (201, 204)
    return sdk_queue(gateway)


def sdk_queue(gateway: RunningGateway) -> Queue:
    queue = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("ordered")
    queue.set_encoding(False)
    return queue


def receive_batch(queue: Queue, count: int, wait: int = 0) -> list:  # type: ignore[type-arg]
    try:
        return queue.batch_receive_message(count, wait)
    except MNSServerException as exc:
        assert exc.type == "MessageNotExist"
        return []


def test_each_group_in_order_across_replicas(replicas: Replicas) -> None:  # noqa: F811
    a, b = replicas.start("a"), replicas.start("b")
    fifo(a, visibility=60)
    producers = [sdk_queue(a), sdk_queue(b)]
    for seq in range(PER_GROUP):
        for group in range(GROUPS):
            producers[(seq + group) % 2].send_message(
                Message(f"{group}:{seq}", message_group_id=f"g{group}")
            )
    order: GroupOrder[Any] = GroupOrder(lambda m: m.message_body)

    def consumer(queue: Queue) -> Callable[[], None]:
        return lambda: order.consume(
            lambda: receive_batch(queue, 5),
            lambda m: queue.delete_message(m.receipt_handle),
            idle_rounds=10,
        )

    order.run([consumer(sdk_queue(gateway)) for gateway in (a, b, a, b)])
    assert order.violations == []
    assert order.in_order(groups=GROUPS, per_group=PER_GROUP)


def test_a_head_in_flight_on_a_killed_replica_comes_back_first(
    replicas: Replicas,  # noqa: F811
) -> None:
    a, b = replicas.start("a"), replicas.start("b")
    fifo(b, visibility=2)
    for seq in range(3):
        sdk_queue(b).send_message(Message(f"m{seq}", message_group_id="g"))
    head = sdk_queue(a).receive_message()
    assert head.message_body == "m0"
    a.kill()  # the head was in flight on A: the group stays locked until its timeout ends
    on_b = sdk_queue(b)
    assert receive_batch(on_b, 16) == []
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 3 and time.monotonic() < deadline:
        for message in receive_batch(on_b, 16, wait=1):
            seen.append((message.message_body, message.dequeue_count))
            on_b.delete_message(message.receipt_handle)
    assert seen == [("m0", 2), ("m1", 1), ("m2", 1)]
