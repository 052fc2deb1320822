"""An ordered queue served by two ``mns-gateway serve`` replicas on one PostgreSQL database,
driven through the official Python SDK: each group's messages are received in send order, one at
a time, whichever replica producers and consumers talk to, and a group whose head was in flight
on a SIGKILLed replica resumes on the other with that same head."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Message, Queue

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.e2e.test_replicas import Replicas, replicas  # noqa: F401 - the fixture

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
    received: dict[str, list[int]] = defaultdict(list)
    in_flight: set[str] = set()
    violations: list[str] = []
    lock = threading.Lock()

    def consume(queue: Queue) -> None:
        idle = 0
        while idle < 10:
            batch = receive_batch(queue, 5)
            idle = 0 if batch else idle + 1
            for message in batch:
                group, seq = message.message_body.split(":")
                with lock:
                    if group in in_flight:
                        violations.append(message.message_body)
                    in_flight.add(group)
                    received[group].append(int(seq))
            for message in batch:
                with lock:
                    in_flight.discard(message.message_body.split(":")[0])
                queue.delete_message(message.receipt_handle)

    consumers = [sdk_queue(gateway) for gateway in (a, b, a, b)]
    threads = [threading.Thread(target=consume, args=(q,)) for q in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert violations == []
    assert dict(received) == {str(g): list(range(PER_GROUP)) for g in range(GROUPS)}


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
