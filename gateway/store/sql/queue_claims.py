"""What a receive does on a connection, for either kind of queue: standard queues hand out
Active messages in receive order (:mod:`gateway.store.sql.queue_message_sql`), ordered ones the
Active heads of their groups (:mod:`gateway.store.sql.fifo_sql`). Both move a message that a
receive would take past MaxReceiveCount to the dead-letter queue instead
(:mod:`gateway.store.sql.dead_letter_queue_sql`)."""

from __future__ import annotations

from collections.abc import Callable

from gateway.queues import receipts
from gateway.queues.dlq_policy import Moved
from gateway.queues.records import Queue, QueueMessage
from gateway.queues.states import visible_after
from gateway.store.sql import fifo_sql
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.dead_letter_queue_sql import DeadLetterMover
from gateway.store.sql.queue_message_sql import Claimed


def claim(
    conn: Connection,
    queue: Queue,
    count: int,
    *,
    now_ms: int,
    mover: DeadLetterMover | None,
) -> tuple[list[Claimed], list[Moved]]:
    """Up to ``count`` messages made Inactive for the queue's VisibilityTimeout, and the moves
    to the dead-letter queue made on the way."""
    until = visible_after(now_ms, queue.attributes.visibility_timeout)
    if queue.attributes.ordered:
        return fifo_sql.claim(
            conn,
            queue,
            count,
            now_ms=now_ms,
            invisible_until=until,
            nonce=receipts.new_nonce(),
            mover=mover,
        )
    return message_sql.claim(
        conn,
        queue.name,
        count,
        now_ms=now_ms,
        invisible_until=until,
        new_nonce=receipts.new_nonce,
        mover=mover,
    )


def mover_for(
    queue: Queue, *, now_ms: int, source_arn: str, new_id: Callable[[int], str]
) -> DeadLetterMover | None:
    """The dead-letter mover of a receive on ``queue``, when it has an enabled policy."""
    policy = queue.attributes.dead_letter_policy
    if policy is None or not policy.enabled:
        return None
    return DeadLetterMover(
        queue, now_ms=now_ms, source_arn=source_arn, new_id=new_id, new_nonce=receipts.new_nonce
    )


def receivable(conn: Connection, queue: Queue, now_ms: int) -> bool:
    """Whether a receive now might get something (a cheap read before taking the writer)."""
    if queue.attributes.ordered:
        return fifo_sql.ready(conn, queue.name, now_ms)
    return bool(message_sql.ready_rows(conn, queue.name, now_ms, 1))


def next_due(conn: Connection, queue: Queue, now_ms: int) -> int | None:
    """When a message may next become receivable, for a long poll's sleep."""
    if queue.attributes.ordered:
        return fifo_sql.next_due(conn, queue.name, now_ms)
    return message_sql.next_due(conn, queue.name, now_ms)


def peek(conn: Connection, queue: Queue, now_ms: int, count: int) -> list[QueueMessage]:
    if queue.attributes.ordered:
        return fifo_sql.peek(conn, queue.name, now_ms, count)
    return message_sql.peek(conn, queue.name, now_ms, count)
