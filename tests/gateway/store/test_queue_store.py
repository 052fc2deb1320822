"""QueueStore on each backend with an injected clock: states, ordering, receipts, waiting."""

from __future__ import annotations

import threading

import pytest

from gateway.errors.mns import MNSError
from gateway.queues.records import NewMessage, QueueAttributes
from gateway.store.queues import QueueStore
from gateway.store.sql.queue_message_sql import next_due, ready_rows, take
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


# queues ---------------------------------------------------------------------------------------
def test_create_is_idempotent_for_identical_attributes_only(store: QueueStore) -> None:
    make_queue(store, "q", visibility_timeout=60)
    assert store.create_queue("q", QueueAttributes(visibility_timeout=60)) is False
    assert error_code(lambda: store.create_queue("q", QueueAttributes())) == "QueueAlreadyExist"


def test_set_attributes_changes_only_what_was_sent(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", delay_seconds=5)
    clock.now += 30
    store.set_queue_attributes("q", {"visibility_timeout": 99, "logging_enabled": True})
    queue, _ = store.get_queue("q")
    assert (queue.create_time, queue.last_modify_time) == (int(T0), int(T0) + 30)
    assert queue.attributes == QueueAttributes(
        delay_seconds=5, visibility_timeout=99, logging_enabled=True
    )
    assert error_code(lambda: store.set_queue_attributes("nope", {})) == "QueueNotExist"


def test_queue_limit(open_database: OpenDatabase, clock: Clock) -> None:
    store = open_store(open_database, clock, max_queues=2)
    make_queue(store, "a")
    make_queue(store, "b")
    assert store.create_queue("a", QueueAttributes()) is False  # re-creating is not a new one
    assert error_code(lambda: store.create_queue("c", QueueAttributes())) == (
        "QueueNumExceededLimit"
    )


def test_delete_queue_removes_its_messages(store: QueueStore) -> None:
    make_queue(store)
    send(store, "q", "x")
    store.delete_queue("q")
    store.delete_queue("q")  # missing is fine
    make_queue(store)
    assert counts(store, "q") == (0, 0, 0)


# states ---------------------------------------------------------------------------------------
def test_delayed_active_inactive_and_back(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", delay_seconds=10, visibility_timeout=30)
    message_id = send(store, "q", "body")
    assert counts(store, "q") == (0, 0, 1)
    assert store.receive("q", 1, 0).messages == []
    clock.now += 10
    assert counts(store, "q") == (1, 0, 0)
    (first,) = store.receive("q", 1, 0).messages
    assert (first.message_id, first.dequeue_count) == (message_id, 1)
    assert first.first_dequeue_time == int(clock.now * 1000)
    assert first.next_visible_time == int(clock.now * 1000) + 30_000
    assert counts(store, "q") == (0, 1, 0)
    clock.now += 30
    assert counts(store, "q") == (1, 0, 0)
    (again,) = store.receive("q", 1, 0).messages
    assert again.dequeue_count == 2
    assert again.first_dequeue_time == first.first_dequeue_time
    assert again.enqueue_time == int(T0 * 1000)


def test_message_delay_overrides_queue_delay_even_when_zero(store: QueueStore) -> None:
    make_queue(store, "q", delay_seconds=100)
    send(store, "q", "now", delay_seconds=0)
    send(store, "q", "later")
    assert counts(store, "q") == (1, 0, 1)


def test_peek_changes_nothing(store: QueueStore) -> None:
    make_queue(store)
    send(store, "q", "x")
    (peeked,) = store.peek("q", 16)[1]
    assert (peeked.dequeue_count, peeked.first_dequeue_time) == (0, peeked.enqueue_time)
    assert counts(store, "q") == (1, 0, 0)


def test_priority_first_then_age(store: QueueStore, clock: Clock) -> None:
    make_queue(store)
    old = send(store, "q", "old")
    clock.now += 1
    urgent = send(store, "q", "urgent", priority=1)
    _, batch = store.send("q", [NewMessage(f"b{i}") for i in range(5)])
    lowest = send(store, "q", "lowest", priority=16)
    received = [m.message_id for m in store.receive("q", 16, 0).messages]
    batch_ids = [m.message_id for m in batch]  # type: ignore[union-attr]
    assert received == [urgent, old, *batch_ids, lowest]


def test_a_priority_with_nothing_active_is_passed_over(store: QueueStore) -> None:
    make_queue(store)
    send(store, "q", "in flight", priority=1)
    assert len(store.receive("q", 1, 0).messages) == 1
    send(store, "q", "delayed", priority=2, delay_seconds=100)
    first, second = send(store, "q", "ready", priority=9), send(store, "q", "later", priority=12)
    assert [m.message_id for m in store.peek("q", 16)[1]] == [first, second]
    assert [m.message_id for m in store.receive("q", 1, 0).messages] == [first]
    assert [m.message_id for m in store.receive("q", 16, 0).messages] == [second]
    assert store.receive("q", 16, 0).messages == []


def test_retention_expires_messages_in_every_state(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", message_retention_period=60, visibility_timeout=50)
    send(store, "q", "received")
    store.receive("q", 1, 0)
    send(store, "q", "delayed", delay_seconds=100)
    send(store, "q", "active")
    assert counts(store, "q") == (1, 1, 1)
    clock.now += 60
    assert counts(store, "q") == (0, 0, 0)
    assert store.receive("q", 16, 0).messages == []
    assert store.peek("q", 16)[1] == []


def stored_rows(store: QueueStore) -> int:
    row = store.database.read(
        lambda c: c.execute("SELECT COUNT(*) AS n FROM queue_messages").fetchone()
    )
    return int(row["n"])


def test_expired_rows_are_deleted_when_met_or_by_the_periodic_purge(
    open_database: OpenDatabase, clock: Clock
) -> None:
    monotonic = Clock(0.0)
    store = open_store(open_database, clock, monotonic=monotonic)
    make_queue(store, "q", message_retention_period=60)
    send(store, "q", "active")
    send(store, "q", "delayed", delay_seconds=600)
    clock.now += 61
    store.receive("q", 1, 0)  # meets the expired Active row and deletes it
    assert stored_rows(store) == 1  # the Delayed one is out of reach until its delay ends
    monotonic.now += 61  # a minute later the next request also purges
    store.receive("q", 1, 0)
    assert stored_rows(store) == 0


def test_oversized_message_fails_alone(store: QueueStore) -> None:
    make_queue(store, "q", maximum_message_size=1024)
    _, results = store.send("q", [NewMessage("a"), NewMessage("x" * 1025), NewMessage("b")])
    assert [type(r).__name__ for r in results] == ["SentMessage", "MNSError", "SentMessage"]
    assert results[1].code == "InvalidArgument"  # type: ignore[union-attr]
    assert counts(store, "q") == (2, 0, 0)


def test_next_due_is_the_earliest_hidden_message(store: QueueStore, clock: Clock) -> None:
    make_queue(store)
    send(store, "q", "a", delay_seconds=50, priority=3)
    send(store, "q", "b", delay_seconds=20, priority=9)
    now_ms = int(clock.now * 1000)
    assert store.database.read(lambda c: next_due(c, "q", now_ms)) == now_ms + 20_000


# receipts -------------------------------------------------------------------------------------
def received_handle(store: QueueStore, queue: str = "q") -> str:
    (message,) = store.receive(queue, 1, 0).messages
    assert message.receipt_handle
    return message.receipt_handle


def test_a_handle_deletes_once(store: QueueStore) -> None:
    make_queue(store)
    message_id = send(store, "q", "x")
    handle = received_handle(store)
    assert store.delete_message("q", handle)[1] == message_id
    assert error_code(lambda: store.delete_message("q", handle)) == "MessageNotExist"


def test_change_visibility_issues_a_new_handle_and_the_replaced_one_still_works(
    store: QueueStore, clock: Clock
) -> None:
    """The PHP SDK's own testMessage deletes with the handle the receive gave after changing
    its visibility (issue 36 item 2): both handles of one receive act on the message."""
    make_queue(store)
    send(store, "q", "x")
    old = received_handle(store)
    _, change = store.change_visibility("q", old, 100)
    assert change.receipt_handle != old
    assert change.next_visible_time == int(clock.now * 1000) + 100_000
    _, again = store.change_visibility("q", old, 200)  # the replaced handle changes it again
    assert again.next_visible_time == int(clock.now * 1000) + 200_000
    clock.now += 150  # past the first change's time, within the second's
    assert counts(store, "q") == (0, 1, 0)
    assert store.delete_message("q", old)[0].name == "q"
    assert counts(store, "q") == (0, 0, 0)
    for spent in (old, change.receipt_handle, again.receipt_handle):
        assert error_code(lambda h=spent: store.delete_message("q", h)) == "MessageNotExist"


def test_a_replaced_handle_dies_with_the_receive(store: QueueStore, clock: Clock) -> None:
    """Once the message is visible again or received again, no handle of the earlier receive
    acts on it, the one ChangeMessageVisibility issued nor the one it replaced."""
    make_queue(store, "q", visibility_timeout=10)
    send(store, "q", "x")
    first = received_handle(store)
    _, change = store.change_visibility("q", first, 20)
    clock.now += 20
    for handle in (first, change.receipt_handle):
        assert error_code(lambda h=handle: store.delete_message("q", h)) == "MessageNotExist"
    second = received_handle(store)
    for handle in (first, change.receipt_handle):
        assert error_code(lambda h=handle: store.change_visibility("q", h, 5)) == (
            "MessageNotExist"
        )
        _, (result,) = store.delete_messages("q", [handle])
        assert isinstance(result, MNSError) and result.code == "MessageNotExist"
    assert counts(store, "q") == (0, 1, 0)
    store.delete_message("q", second)


def test_a_replaced_handle_deletes_in_a_batch(store: QueueStore) -> None:
    make_queue(store)
    for body in "ab":
        send(store, "q", body)
    first, second = (m.receipt_handle or "" for m in store.receive("q", 2, 0).messages)
    store.change_visibility("q", first, 100)
    store.change_visibility("q", second, 100)
    _, results = store.delete_messages("q", [first, second])
    assert all(isinstance(result, str) for result in results)
    assert counts(store, "q") == (0, 0, 0)


def test_change_visibility_to_zero_makes_the_message_active(store: QueueStore) -> None:
    make_queue(store)
    send(store, "q", "x")
    _, change = store.change_visibility("q", received_handle(store), 0)
    assert counts(store, "q") == (1, 0, 0)
    assert error_code(lambda: store.delete_message("q", change.receipt_handle)) == (
        "MessageNotExist"
    )


def test_a_handle_dies_when_the_message_is_visible_again(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", visibility_timeout=10)
    send(store, "q", "x")
    first = received_handle(store)
    clock.now += 10
    assert error_code(lambda: store.delete_message("q", first)) == "MessageNotExist"
    second = received_handle(store)  # received again: the first handle stays dead
    assert error_code(lambda: store.delete_message("q", first)) == "MessageNotExist"
    store.delete_message("q", second)


def test_forged_and_foreign_handles_are_rejected(store: QueueStore) -> None:
    make_queue(store, "q")
    make_queue(store, "other")
    send(store, "q", "x")
    handle = received_handle(store)
    flipped = handle[:10] + ("A" if handle[10] != "A" else "B") + handle[11:]
    for bad in (flipped, "not a handle!", "", "AAAA", handle + "AAAA"):
        assert error_code(lambda bad=bad: store.delete_message("q", bad)) == "ReceiptHandleError"
    assert error_code(lambda: store.delete_message("other", handle)) == "ReceiptHandleError"
    store.delete_message("q", handle)


def test_delayed_send_returns_a_handle_that_can_delete_it(store: QueueStore) -> None:
    make_queue(store)
    _, (sent,) = store.send("q", [NewMessage("later", delay_seconds=60)])
    assert sent.receipt_handle  # type: ignore[union-attr]
    _, (now,) = store.send("q", [NewMessage("now")])
    assert now.receipt_handle is None  # type: ignore[union-attr]
    store.delete_message("q", sent.receipt_handle)  # type: ignore[union-attr]
    assert counts(store, "q") == (1, 0, 0)


def test_batch_delete_reports_each_handle(store: QueueStore) -> None:
    make_queue(store)
    for body in "ab":
        send(store, "q", body)
    good, spent = (m.receipt_handle for m in store.receive("q", 2, 0).messages)
    store.delete_message("q", spent)  # type: ignore[arg-type]
    _, results = store.delete_messages("q", [good, spent, "garbage"])  # type: ignore[list-item]
    assert isinstance(results[0], str)
    codes = [r.code for r in results[1:]]  # type: ignore[union-attr]
    assert codes == ["MessageNotExist", "ReceiptHandleError"]
    # a missing queue fails the whole batch
    assert error_code(lambda: store.delete_messages("nope", ["x"])) == "QueueNotExist"


def test_queue_errors_come_before_message_errors(store: QueueStore) -> None:
    for call in (
        lambda: store.send("nope", [NewMessage("x")]),
        lambda: store.receive("nope", 1, 0),
        lambda: store.peek("nope", 1),
        lambda: store.get_queue("nope"),
    ):
        assert error_code(call) == "QueueNotExist"


# durability -----------------------------------------------------------------------------------
def test_every_state_and_handle_survives_reopening(
    open_database: OpenDatabase, clock: Clock
) -> None:
    first = open_store(open_database, clock)
    make_queue(first, "q", visibility_timeout=100)
    send(first, "q", "delayed", delay_seconds=100)
    send(first, "q", "inactive")
    handle = received_handle(first)
    send(first, "q", "active")

    second = open_store(open_database, clock)
    assert counts(second, "q") == (1, 1, 1)
    second.delete_message("q", handle)  # the receipt secret lives in the database
    assert [m.body for m in second.peek("q", 16)[1]] == ["active"]


# bridging -------------------------------------------------------------------------------------
def test_enqueue_in_commits_with_the_callers_job(store: QueueStore, clock: Clock) -> None:
    make_queue(store, "q", delay_seconds=5)
    now_ms = int(clock.now * 1000)

    def enqueue_then_fail(conn: object) -> None:
        store.enqueue_in(conn, "q", "lost", now_ms=now_ms)
        raise RuntimeError("delivery bookkeeping failed")

    with pytest.raises(RuntimeError):
        store.database.write(enqueue_then_fail)
    assert counts(store, "q") == (0, 0, 0)

    message_id = store.database.write(
        lambda conn: store.enqueue_in(conn, "q", "kept", priority=2, now_ms=now_ms)
    )
    store.notify("q")
    assert counts(store, "q") == (0, 0, 1)
    clock.now += 5
    (message,) = store.receive("q", 1, 0).messages
    assert (message.message_id, message.body, message.priority) == (message_id, "kept", 2)


def test_enqueue_in_refuses_missing_queues_and_large_bodies(
    store: QueueStore, clock: Clock
) -> None:
    make_queue(store, "q", maximum_message_size=1024)
    now_ms = int(clock.now * 1000)
    for queue, body in (("nope", "x"), ("q", "x" * 1025)):
        assert error_code(
            lambda queue=queue, body=body: store.database.write(
                lambda conn: store.enqueue_in(conn, queue, body, now_ms=now_ms)
            )
        ) in ("QueueNotExist", "InvalidArgument")


# concurrency ----------------------------------------------------------------------------------
def test_concurrent_receivers_never_share_a_message(
    open_database: OpenDatabase, clock: Clock
) -> None:
    """Two stores on one file stand in for two worker processes, each with several threads."""
    stores = [open_store(open_database, clock), open_store(open_database, clock)]
    make_queue(stores[0], "q")
    for _ in range(10):
        stores[1].send("q", [NewMessage("more") for _ in range(16)])
    received: list[str] = []
    lock = threading.Lock()

    def consume(store: QueueStore) -> None:
        for _ in range(200):
            batch = store.receive("q", 3, 0).messages
            if not batch:
                return
            with lock:
                received.extend(m.message_id for m in batch)

    threads = [threading.Thread(target=consume, args=(stores[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(received) == 160
    assert len(set(received)) == 160


def test_a_claim_keeps_only_the_rows_it_won(store: QueueStore, clock: Clock) -> None:
    """On a database with concurrent writers another claimer may update some of the rows this
    one selected; the conditional UPDATE skips those, and the nonce tells which are ours."""
    make_queue(store)
    for body in "abc":
        send(store, "q", body)
    now_ms = int(clock.now * 1000)

    def race(conn: object) -> tuple[list[str], list[str]]:
        rows = ready_rows(conn, "q", now_ms, 3)
        rival = take(conn, rows[1:2], now_ms, now_ms + 5000, nonce=1)
        mine = take(conn, rows, now_ms, now_ms + 9000, nonce=2)
        return [c.message().body for c in rival], [c.message().body for c in mine]

    assert store.database.write(race) == (["b"], ["a", "c"])


def test_a_released_receive_is_undone(store: QueueStore, clock: Clock) -> None:
    """What a response that could not be written hands back: the message as before the
    receive, at its place in the queue, its handle spent (docs/queues.md#clients-that-go-away)."""
    make_queue(store, visibility_timeout=600)
    send(store, "q", "first")
    clock.now += 1
    send(store, "q", "second")
    [received] = store.receive("q", 1, 0).messages
    assert received.message_id and counts(store, "q") == (1, 1, 0)
    assert store.release("q", [received]) == 1
    assert counts(store, "q") == (2, 0, 0)
    clock.now += 4
    [again] = store.receive("q", 1, 0).messages
    assert (again.body, again.dequeue_count) == ("first", 1)  # first in line, counted once
    assert again.first_dequeue_time == int(clock.now * 1000)  # the undone receive left no trace
    assert error_code(lambda: store.delete_message("q", received.receipt_handle)) in (
        "MessageNotExist",
        "ReceiptHandleError",
    )


def test_only_a_current_handle_is_released(store: QueueStore, clock: Clock) -> None:
    make_queue(store, visibility_timeout=600)
    send(store, "q", "m")
    [received] = store.receive("q", 1, 0).messages
    store.change_visibility("q", received.receipt_handle or "", 300)  # the client used it
    assert store.release("q", [received]) == 0
    assert counts(store, "q") == (0, 1, 0)


def test_a_receive_for_a_client_that_is_gone_takes_nothing(store: QueueStore) -> None:
    make_queue(store)
    send(store, "q", "m")
    assert store.receive("q", 1, 0, client_connected=lambda: False).messages == []
    assert store.receive("q", 1, 5, client_connected=lambda: False).messages == []
    assert counts(store, "q") == (1, 0, 0)
