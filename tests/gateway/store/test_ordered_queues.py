"""Ordered (FIFO) queues on each backend: one message in flight per group, send order within a
group, and both kept across stores (processes, replicas) and restarts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gateway.errors.mns import MNSError
from gateway.queues.records import NewMessage, QueueMessage, QueueType
from gateway.store.queues import QueueStore
from tests.conftest import OpenDatabase
from tests.gateway.store.queue_helpers import (
    counts,
    error_code,
    make_queue,
    open_store,
)
from tests.ordering import GroupOrder
from tests.support.clock import Clock

FIFO = QueueType.FIFO


def grouped(body: str, group: str, **fields: object) -> NewMessage:
    return NewMessage(body, properties={"MessageGroupId": group}, **fields)  # type: ignore[arg-type]


def send_all(store: QueueStore, queue: str, *messages: NewMessage) -> list[str]:
    _, results = store.send(queue, list(messages))
    return [r.message_id for r in results]  # type: ignore[union-attr]


def bodies(store: QueueStore, queue: str = "q", count: int = 16) -> list[str]:
    return [m.body for m in store.receive(queue, count, 0).messages]


def test_one_message_in_flight_per_group(store: QueueStore) -> None:
    make_queue(store, "q", queue_type=FIFO)
    send_all(store, "q", grouped("a1", "A"), grouped("a2", "A"), grouped("b1", "B"))
    send_all(store, "q", grouped("a3", "A"), grouped("b2", "B"))
    first = store.receive("q", 16, 0).messages
    assert [m.body for m in first] == ["a1", "b1"]
    assert bodies(store) == []  # both groups are locked
    assert store.peek("q", 16)[1] == []
    a1 = first[0]
    store.delete_message("q", a1.receipt_handle or "")
    assert bodies(store) == ["a2"]
    assert bodies(store) == []


def test_a_store_that_has_not_seen_the_queue_deletes_as_ordered(
    open_database: OpenDatabase, clock: Clock
) -> None:
    # Another replica's first DeleteMessage on an ordered queue: the group is freed as usual
    # (a standard queue's delete is one statement; an ordered one's refreshes its group).
    sender, deleter = open_store(open_database, clock), open_store(open_database, clock)
    make_queue(sender, "q", queue_type=FIFO)
    send_all(sender, "q", grouped("first", "g"), grouped("second", "g"))
    (head,) = sender.receive("q", 16, 0).messages
    assert deleter.delete_message("q", head.receipt_handle or "")[1] == head.message_id
    assert bodies(sender) == ["second"]
    assert error_code(lambda: deleter.delete_message("q", head.receipt_handle or "")) == (
        "MessageNotExist"
    )


def test_the_head_comes_back_when_its_visibility_expires(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", queue_type=FIFO, visibility_timeout=30)
    send_all(store, "q", grouped("first", "g"), grouped("second", "g"))
    assert bodies(store) == ["first"]
    clock.now += 29
    assert bodies(store) == []
    clock.now += 1
    (again,) = store.receive("q", 16, 0).messages
    assert (again.body, again.dequeue_count) == ("first", 2)
    store.change_visibility("q", again.receipt_handle or "", 0)
    (third,) = store.receive("q", 16, 0).messages
    assert (third.body, third.dequeue_count) == ("first", 3)
    store.delete_message("q", third.receipt_handle or "")
    assert bodies(store) == ["second"]


def test_the_head_deletes_with_the_handle_a_visibility_change_replaced(
    store: QueueStore, clock: Clock
) -> None:
    make_queue(store, "q", queue_type=FIFO, visibility_timeout=30)
    send_all(store, "q", grouped("first", "g"), grouped("second", "g"))
    (head,) = store.receive("q", 16, 0).messages
    handle = head.receipt_handle or ""
    store.change_visibility("q", handle, 60)
    store.change_visibility("q", handle, 90)  # the replaced handle changes it again
    clock.now += 60
    assert bodies(store) == []  # the group is still held by its head
    assert store.delete_message("q", handle)[1] == head.message_id
    assert bodies(store) == ["second"]  # and deleting it freed the group


def test_a_handle_of_an_earlier_receive_of_the_head_is_refused(
    store: QueueStore, clock: Clock
) -> None:
    make_queue(store, "q", queue_type=FIFO, visibility_timeout=30)
    send_all(store, "q", grouped("first", "g"), grouped("second", "g"))
    (head,) = store.receive("q", 16, 0).messages
    store.change_visibility("q", head.receipt_handle or "", 10)
    clock.now += 10
    (again,) = store.receive("q", 16, 0).messages
    assert error_code(lambda: store.delete_message("q", head.receipt_handle or "")) == (
        "MessageNotExist"
    )
    assert bodies(store) == []
    store.delete_message("q", again.receipt_handle or "")
    assert bodies(store) == ["second"]


def test_a_delayed_head_holds_its_group_back(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", queue_type=FIFO)
    send_all(store, "q", grouped("late", "g", delay_seconds=10), grouped("after", "g"))
    send_all(store, "q", grouped("other", "h"))
    assert bodies(store) == ["other"]
    clock.now += 10
    assert bodies(store) == ["late"]


def test_expired_heads_make_way(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", queue_type=FIFO, message_retention_period=60, visibility_timeout=300)
    send_all(store, "q", grouped("old", "g"))
    assert bodies(store) == ["old"]  # in flight for 300 s, expires after 60
    clock.now += 30
    send_all(store, "q", grouped("new", "g"))
    assert bodies(store) == []
    clock.now += 30
    assert bodies(store) == ["new"]


def test_a_message_without_group_is_refused(store: QueueStore) -> None:
    make_queue(store, "q", queue_type=FIFO)
    _, results = store.send("q", [grouped("ok", "g"), NewMessage("no group")])
    assert isinstance(results[1], MNSError)
    assert results[1].code == "FifoMissingMessageGroupId"
    assert counts(store, "q") == (1, 0, 0)


def test_a_pushed_message_without_group_is_a_group_of_its_own(
    store: QueueStore, clock: Clock
) -> None:
    make_queue(store, "q", queue_type=FIFO)
    now_ms = int(clock.now * 1000)
    for body in ("x", "y"):
        store.database.write(
            lambda conn, body=body: store.enqueue_in(conn, "q", body, now_ms=now_ms)
        )
    assert sorted(bodies(store)) == ["x", "y"]


def test_group_order_survives_a_restart(open_database: OpenDatabase, clock: Clock) -> None:
    before = open_store(open_database, clock)
    make_queue(before, "q", queue_type=FIFO)
    for i in range(5):
        send_all(before, "q", grouped(f"m{i}", "g"))
    before.database.close()
    after = open_store(open_database, clock)
    seen = []
    for _ in range(5):
        (message,) = after.receive("q", 16, 0).messages
        seen.append(message.body)
        after.delete_message("q", message.receipt_handle or "")
    assert seen == [f"m{i}" for i in range(5)]


def test_queue_type_is_set_at_creation_only(store: QueueStore) -> None:
    make_queue(store, "q", queue_type=FIFO)
    store.set_queue_attributes("q", {"visibility_timeout": 60}, queue_type=FIFO)
    assert error_code(lambda: store.set_queue_attributes("q", {}, queue_type=QueueType.NORMAL)) == (
        "InvalidArgument"
    )
    assert store.get_queue("q")[0].attributes.queue_type is FIFO


def test_deleting_the_queue_forgets_its_groups(store: QueueStore) -> None:
    make_queue(store, "q", queue_type=FIFO)
    send_all(store, "q", grouped("a", "g"))
    assert bodies(store) == ["a"]
    store.delete_queue("q")
    make_queue(store, "q", queue_type=FIFO)
    send_all(store, "q", grouped("b", "g"))
    assert bodies(store) == ["b"]


def test_concurrent_consumers_keep_each_group_in_order(
    open_database: OpenDatabase, clock: Clock
) -> None:
    """Two stores (two processes or replicas on one database), four threads each, 20 groups of
    8 messages: each group's messages are received in send order, none twice, and never two
    of a group in flight at once."""
    stores = [open_store(open_database, clock), open_store(open_database, clock)]
    make_queue(stores[0], "q", queue_type=FIFO, visibility_timeout=600)
    for seq in range(8):
        send_all(stores[seq % 2], "q", *(grouped(f"{g}:{seq}", f"g{g}") for g in range(20)))
    order: GroupOrder[QueueMessage] = GroupOrder(lambda m: m.body)

    def consumer(store: QueueStore) -> Callable[[], None]:
        return lambda: order.consume(
            lambda: store.receive("q", 4, 0).messages,
            lambda m: store.delete_message("q", m.receipt_handle or ""),
        )

    order.run([consumer(stores[i % 2]) for i in range(8)])
    assert order.violations == []
    assert order.in_order(groups=20, per_group=8)


def test_deleting_a_head_wakes_a_long_poll_for_the_next(
    open_database: OpenDatabase, clock: Clock
) -> None:
    # Re-checks 30 s apart: only the wake-up can hand the waiter its message within the bound
    # below, however loaded the machine (a bound under the default 1 s re-check could not say).
    store = open_store(open_database, clock, recheck_seconds=30)
    make_queue(store, "q", queue_type=FIFO)
    send_all(store, "q", grouped("first", "g"), grouped("second", "g"))
    (head,) = store.receive("q", 1, 0).messages
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.extend(bodies_waiting(store)))
    waiter.start()
    time.sleep(0.3)  # asleep on a locked group
    started = time.monotonic()
    store.delete_message("q", head.receipt_handle or "")
    waiter.join(timeout=10)
    assert got == ["second"]
    assert time.monotonic() - started < 5  # woken, not found by a re-check


def bodies_waiting(store: QueueStore) -> list[str]:
    return [m.body for m in store.receive("q", 1, 10).messages]


def test_a_released_receive_frees_its_group_with_the_same_head(
    store: QueueStore, clock: Clock
) -> None:
    """A response that could not be written (docs/queues.md#clients-that-go-away): the group's
    head is receivable again at once, not after VisibilityTimeout, and still first."""
    make_queue(store, "q", queue_type=FIFO, visibility_timeout=600)
    send_all(store, "q", grouped("a1", "A"), grouped("a2", "A"), grouped("b1", "B"))
    received = store.receive("q", 16, 0).messages
    assert [m.body for m in received] == ["a1", "b1"]
    assert bodies(store) == []
    assert store.release("q", received[:1]) == 1
    clock.now += 1
    (again,) = store.receive("q", 16, 0).messages
    assert (again.body, again.dequeue_count) == ("a1", 1)
    store.delete_message("q", again.receipt_handle or "")
    assert bodies(store) == ["a2"]


def test_a_receive_for_a_client_that_is_gone_leaves_the_group_free(store: QueueStore) -> None:
    make_queue(store, "q", queue_type=FIFO)
    send_all(store, "q", grouped("a1", "A"))
    assert store.receive("q", 1, 0, client_connected=lambda: False).messages == []
    assert bodies(store) == ["a1"]
