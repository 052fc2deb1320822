"""Moving queue messages to a dead-letter queue, inside the receive that would have taken them.

A message whose DequeueCount has reached its queue's MaxReceiveCount is not received again: the
receive deletes it from its queue and adds it to the policy's target queue in the same
transaction, so it is never lost between the two nor found in both
(docs/queues.md#dead-letter-queues). In the target it is a new message: a new MessageId, the
original body, priority, MessageGroupId and properties, the DLQ system properties naming where
it came from, DequeueCount 0, Active at once, and the original expiry time: its retention is
not reset. When the target queue no longer exists the message is received as usual.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from gateway.queues import dlq_policy as dead_letters
from gateway.queues.dlq_policy import Moved
from gateway.queues.records import Queue
from gateway.store.sql import fifo_sql, queue_sql
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql.connection import Connection, Row
from gateway.store.sql.queue_message_sql import StoredMessage


class DeadLetterMover:
    """Moves the messages of one receive on ``source`` that are due for its dead-letter queue.

    ``new_id`` draws MessageIds, ``new_nonce`` receipt nonces; ``source_arn`` names the source
    queue in the moved message's ``DLQSourceArn``.
    """

    def __init__(
        self,
        source: Queue,
        *,
        now_ms: int,
        source_arn: str,
        new_id: Callable[[int], str],
        new_nonce: Callable[[], int],
    ) -> None:
        self.source = source
        self.policy = source.attributes.dead_letter_policy
        self.now_ms = now_ms
        self.source_arn = source_arn
        self._new_id = new_id
        self._new_nonce = new_nonce

    def move_due(self, conn: Connection, rows: Sequence[Row]) -> list[Moved]:
        """Move those of ``rows`` (Active messages of the source) that this receive would take
        past MaxReceiveCount; the moves made. Rows not moved are left for the receive."""
        due = [r for r in rows if dead_letters.exceeds(self.policy, r["dequeue_count"])]
        if not due or self.policy is None:
            return []
        target = queue_sql.get_queue(conn, self.policy.target_queue)
        if target is None:
            return []
        return [moved for row in due if (moved := self._move(conn, row, target))]

    def _move(self, conn: Connection, row: Row, target: Queue) -> Moved | None:
        taken = conn.execute(
            "DELETE FROM queue_messages WHERE id = ? AND visible_at <= ? RETURNING id",
            (row["id"], self.now_ms),
        ).fetchall()
        if not taken:  # another receive got it first
            return None
        properties = dead_letters.dead_lettered_properties(
            json.loads(row["properties"]) if row["properties"] else {},
            kind=dead_letters.FROM_QUEUE,
            source_arn=self.source_arn,
            origin_message_id=row["id"],
        )
        message = StoredMessage(
            id=self._new_id(self.now_ms),
            queue_name=target.name,
            body=row["body"],
            body_md5=row["body_md5"],
            priority=row["priority"],
            enqueue_time=self.now_ms,
            visible_at=self.now_ms,
            expires_at=row["expires_at"],
            receipt_nonce=self._new_nonce(),
            properties=properties,
        )
        message_sql.insert_messages(conn, fifo_sql.grouped(conn, target, [message]))
        return Moved(row["id"], row["dequeue_count"], target.name, message.id)
