"""Queue statements (the ``queues`` table, and a queue's message counts), each run on a
connection the caller provides. Its messages' statements are in
:mod:`gateway.store.sql.queue_message_sql`.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.errors.mns import MNSError
from gateway.protocol.listing import Page
from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.queues.records import MessageCounts, Queue, QueueAttributes, QueueType
from gateway.store.sql import control_sql
from gateway.store.sql.connection import Connection, Row, placeholders

#: QueueAttributes fields stored in a column of the same name as integers.
_NUMBER_COLUMNS: Final = (
    "delay_seconds",
    "maximum_message_size",
    "message_retention_period",
    "visibility_timeout",
    "polling_wait_seconds",
)


# queues ---------------------------------------------------------------------------------------
def queue_from_row(row: Row) -> Queue:
    policy = None
    if row["dlq_target"]:
        policy = DeadLetterPolicy(
            row["dlq_target"], row["dlq_max_receive_count"], bool(row["dlq_enabled"])
        )
    attributes = QueueAttributes(
        **{name: row[name] for name in _NUMBER_COLUMNS},
        logging_enabled=bool(row["logging_enabled"]),
        queue_type=QueueType(row["queue_type"]),
        dead_letter_policy=policy,
    )
    return Queue(row["name"], row["create_time"], row["last_modify_time"], attributes)


def _columns(attributes: QueueAttributes) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(attributes, name) for name in _NUMBER_COLUMNS}
    policy = attributes.dead_letter_policy
    values.update(
        logging_enabled=int(attributes.logging_enabled),
        queue_type=attributes.queue_type.value,
        dlq_target=policy.target_queue if policy else None,
        dlq_max_receive_count=policy.max_receive_count if policy else None,
        dlq_enabled=int(policy.enabled) if policy else 0,
    )
    return values


def get_queue(conn: Connection, name: str) -> Queue | None:
    row = conn.execute("SELECT * FROM queues WHERE name = ?", (name,)).fetchone()
    return queue_from_row(row) if row else None


def require_queue(conn: Connection, name: str) -> Queue:
    queue = get_queue(conn, name)
    if queue is None:
        raise MNSError("QueueNotExist")
    return queue


def create_queue(conn: Connection, queue: Queue, max_queues: int | None) -> bool:
    """Insert ``queue``; ``False`` when an identical one exists, 409 when a different one does."""
    existing = get_queue(conn, queue.name)
    if existing is not None:
        if existing.attributes != queue.attributes:
            raise MNSError("QueueAlreadyExist")
        return False
    if max_queues is not None:
        count = conn.execute("SELECT COUNT(*) AS n FROM queues").fetchone()["n"]
        if count >= max_queues:
            raise MNSError("QueueNumExceededLimit")
    values = _columns(queue.attributes)
    columns = ("name", "create_time", "last_modify_time", *values)
    inserted = conn.execute(
        f"INSERT INTO queues ({', '.join(columns)}) VALUES ({placeholders(len(columns))})"
        " ON CONFLICT (name) DO NOTHING RETURNING name",
        (queue.name, queue.create_time, queue.last_modify_time, *values.values()),
    ).fetchall()
    if inserted:
        return True
    return create_queue(conn, queue, None)  # created meanwhile by someone else: compare


def update_queue(conn: Connection, name: str, attributes: QueueAttributes, now: int) -> None:
    """Store ``attributes`` as the queue's; LastModifyTime becomes ``now``."""
    values = _columns(attributes)
    assignments = ", ".join(f"{column} = ?" for column in values)
    conn.execute(
        f"UPDATE queues SET {assignments}, last_modify_time = ? WHERE name = ?",
        (*values.values(), now, name),
    )


def delete_queue(conn: Connection, name: str) -> None:
    """Delete the queue and every message in it (a missing queue is not an error)."""
    conn.execute("DELETE FROM queue_messages WHERE queue_name = ?", (name,))
    conn.execute("DELETE FROM queue_groups WHERE queue_name = ?", (name,))
    conn.execute("DELETE FROM queues WHERE name = ?", (name,))
    control_sql.forget_resource(conn, "queue", name)


def list_queues(conn: Connection, prefix: str, marker: str, limit: int) -> Page[Queue]:
    rows = conn.execute(
        "SELECT * FROM queues WHERE substr(name, 1, ?) = ? AND name >= ? ORDER BY name LIMIT ?",
        (len(prefix), prefix, marker, limit + 1),
    ).fetchall()
    if len(rows) > limit:
        return Page([queue_from_row(row) for row in rows[:limit]], rows[limit]["name"])
    return Page([queue_from_row(row) for row in rows], None)


def message_counts(conn: Connection, name: str, now_ms: int) -> MessageCounts:
    """Messages per state, by :func:`~gateway.queues.states.message_state`'s rules in SQL
    (tests check the two agree)."""
    row = conn.execute(
        "SELECT"
        " SUM(CASE WHEN visible_at <= ? THEN 1 ELSE 0 END) AS active,"
        " SUM(CASE WHEN visible_at > ? AND dequeue_count > 0 THEN 1 ELSE 0 END) AS inactive,"
        " SUM(CASE WHEN visible_at > ? AND dequeue_count = 0 THEN 1 ELSE 0 END) AS delayed"
        " FROM queue_messages WHERE queue_name = ? AND expires_at > ?",
        (now_ms, now_ms, now_ms, name, now_ms),
    ).fetchone()
    return MessageCounts(*(int(row[state] or 0) for state in ("active", "inactive", "delayed")))
