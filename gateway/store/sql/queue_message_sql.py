"""Queue-message statements, each run on a connection the caller provides.

A receive claims messages with one ``UPDATE … WHERE id IN (…) AND visible_at <= now RETURNING
id``: the statement itself re-checks that each message is still Active, and returns the ones it
won. The rows it names come from a look in receive order that, on PostgreSQL, also locks them
(``FOR UPDATE SKIP LOCKED``), so concurrent receivers pick different messages instead of the
same ones; on SQLite the writer is one at a time anyway. Message states are derived from times
by the rules in :mod:`gateway.queues.states`, which the code below applies to the rows it reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.errors.mns import MNSError
from gateway.queues.dlq_policy import Moved
from gateway.queues.receipts import ReceiptMatch
from gateway.queues.records import Queue, QueueMessage, QueueType
from gateway.queues.states import MessageState, message_state
from gateway.store.sql.connection import Connection, Row, insert_rows, placeholders
from gateway.store.sql.queue_sql import queue_from_row, require_queue


class Mover(Protocol):
    """Moves the rows a receive would take past MaxReceiveCount to the dead-letter queue
    (:class:`~gateway.store.sql.dead_letter_queue_sql.DeadLetterMover`, which imports this
    module: a protocol here rather than an import back)."""

    def move_due(self, conn: Connection, rows: Sequence[Row]) -> list[Moved]: ...


#: Active (or expired) rows of one priority in receive order: one index range.
_READY = (
    "SELECT * FROM queue_messages m WHERE queue_name = ? AND priority = ? AND visible_at <= ?"
    " ORDER BY visible_at, id LIMIT ?"
)
_NEXT_PRIORITY = (
    "SELECT MIN(priority) AS priority FROM queue_messages WHERE queue_name = ? AND priority > ?"
)
#: The next priority in use after ``?`` and its first Active-or-expired rows (PostgreSQL).
_NEXT_PRIORITY_READY = (
    "SELECT p.priority AS next_priority, r.* FROM (" + _NEXT_PRIORITY + ") p LEFT JOIN LATERAL"
    " (SELECT * FROM queue_messages m WHERE queue_name = ? AND priority = p.priority"
    " AND visible_at <= ? ORDER BY visible_at, id LIMIT ?{lock}) r ON true"
)
_NEXT_DUE = (
    "SELECT MIN(visible_at) AS due FROM queue_messages"
    " WHERE queue_name = ? AND priority = ? AND visible_at > ?"
)
#: The message a handle may act on (:class:`~gateway.queues.receipts.ReceiptMatch`): its receive's
#: nonce, hidden and unexpired; :func:`_receipt_condition` adds the handle's own NextVisibleTime
#: where the match asks for it.
_RECEIPT_MATCH = (
    "id = ? AND queue_name = ? AND receipt_nonce = ? AND visible_at > ? AND expires_at > ?"
)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A row to insert: everything about a new message, its times already computed."""

    id: str
    queue_name: str
    body: str
    body_md5: str
    priority: int
    enqueue_time: int
    visible_at: int
    expires_at: int
    receipt_nonce: int
    properties: Mapping[str, Any]
    #: Ordered queues only: the message's group and its place in it (docs/queues.md#ordered-queues).
    group_id: str | None = None
    group_seq: int | None = None


@dataclass(frozen=True, slots=True)
class Claimed:
    """A message this receive won: its fields as of the claim and the receipt nonce; the store
    signs the handle outside the writer, then builds the message once."""

    fields: dict[str, Any]
    nonce: int
    #: The message's visible_at before the claim, which undoing it restores.
    claimed_from: int

    @property
    def message_id(self) -> str:
        return str(self.fields["message_id"])

    @property
    def next_visible_time(self) -> int:
        return int(self.fields["next_visible_time"])

    def message(self, receipt_handle: str | None = None) -> QueueMessage:
        return QueueMessage(
            **self.fields, receipt_handle=receipt_handle, claimed_from=self.claimed_from
        )


# messages -------------------------------------------------------------------------------------
def insert_messages(conn: Connection, messages: Sequence[StoredMessage]) -> None:
    if not messages:
        return
    insert_rows(
        conn,
        "queue_messages (id, queue_name, body, body_md5, priority, enqueue_time, visible_at,"
        " expires_at, dequeue_count, receipt_nonce, properties, group_id, group_seq)",
        [
            (
                m.id,
                m.queue_name,
                m.body,
                m.body_md5,
                m.priority,
                m.enqueue_time,
                m.visible_at,
                m.expires_at,
                0,
                m.receipt_nonce,
                json.dumps(m.properties) if m.properties else None,
                m.group_id,
                m.group_seq,
            )
            for m in messages
        ],
    )


def message_fields(row: Row, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "message_id": row["id"],
        "body": row["body"],
        "body_md5": row["body_md5"],
        "priority": row["priority"],
        "enqueue_time": row["enqueue_time"],
        "next_visible_time": row["visible_at"],
        "dequeue_count": row["dequeue_count"],
        "first_dequeue_time": row["first_dequeue_time"] or row["enqueue_time"],
        "properties": json.loads(row["properties"]) if row["properties"] else {},
    }
    values.update(overrides)
    return values


def _message(row: Row) -> QueueMessage:
    return QueueMessage(**message_fields(row))


def priorities_in_use(conn: Connection, queue_name: str) -> Iterator[int]:
    """The queue's distinct priorities, highest (1) first, one index seek each: a queue that
    uses only the default priority costs one look, not sixteen."""
    priority = 0
    while True:
        priority = conn.execute(_NEXT_PRIORITY, (queue_name, priority)).fetchone()["priority"]
        if priority is None:
            return
        yield priority


def ready_rows(
    conn: Connection, queue_name: str, now_ms: int, limit: int, *, lock: bool = False
) -> list[Row]:
    """Up to ``limit`` Active-or-expired rows in receive order (one index range per priority,
    so Delayed and Inactive rows are never scanned); with ``lock``, rows another transaction is
    claiming are skipped and these locked until the claim commits (PostgreSQL)."""
    if conn.dialect.lateral_join:
        return _ready_rows_by_priority(conn, queue_name, now_ms, limit, lock=lock)
    statement = _READY + conn.dialect.lock_skipping("m") if lock else _READY
    rows: list[Row] = []
    for priority in priorities_in_use(conn, queue_name):
        rows += conn.execute(
            statement, (queue_name, priority, now_ms, limit - len(rows))
        ).fetchall()
        if len(rows) >= limit:
            break
    return rows


def _ready_rows_by_priority(
    conn: Connection, queue_name: str, now_ms: int, limit: int, *, lock: bool
) -> list[Row]:
    """:func:`ready_rows` with each priority's look-up and its rows in one statement: one round
    trip per priority in use rather than two."""
    statement = _NEXT_PRIORITY_READY.format(lock=conn.dialect.lock_skipping("m") if lock else "")
    rows: list[Row] = []
    priority = 0
    while len(rows) < limit:
        found = conn.execute(
            statement, (queue_name, priority, queue_name, now_ms, limit - len(rows))
        ).fetchall()
        priority = found[0]["next_priority"]
        if priority is None:
            break
        rows += [row for row in found if row["id"] is not None]  # none: one row of NULLs
    return rows


def _state(row: Row, now_ms: int) -> MessageState:
    return message_state(
        visible_at=row["visible_at"],
        expires_at=row["expires_at"],
        dequeue_count=row["dequeue_count"],
        now_ms=now_ms,
    )


def next_due(conn: Connection, queue_name: str, now_ms: int) -> int | None:
    """When the earliest Delayed or Inactive message becomes Active, if there is one."""
    times: list[int] = []
    for priority in priorities_in_use(conn, queue_name):
        due = conn.execute(_NEXT_DUE, (queue_name, priority, now_ms)).fetchone()["due"]
        if due is not None:
            times.append(due)
    return min(times, default=None)


def peek(conn: Connection, queue_name: str, now_ms: int, count: int) -> list[QueueMessage]:
    rows = ready_rows(conn, queue_name, now_ms, count + 16)
    return [_message(r) for r in rows if _state(r, now_ms) is MessageState.ACTIVE][:count]


def claim(
    conn: Connection,
    queue_name: str,
    count: int,
    *,
    now_ms: int,
    invisible_until: int,
    new_nonce: Callable[[], int],
    mover: Mover | None = None,
) -> tuple[list[Claimed], list[Moved]]:
    """Make up to ``count`` Active messages Inactive until ``invisible_until``, oldest first;
    expired rows met on the way are deleted, and (with a ``mover``) a message this receive
    would take past MaxReceiveCount moves to the dead-letter queue instead. One receive shares
    one nonce: each handle still names its own message, and the MAC keeps one from being turned
    into another."""
    claimed: list[Claimed] = []
    moved: list[Moved] = []
    for _ in range(8):  # each round either fills the batch or removes expired or moved rows
        rows = ready_rows(conn, queue_name, now_ms, count - len(claimed), lock=True)
        expired = [(r["id"],) for r in rows if _state(r, now_ms) is MessageState.EXPIRED]
        conn.executemany("DELETE FROM queue_messages WHERE id = ?", expired)
        live = [r for r in rows if _state(r, now_ms) is MessageState.ACTIVE]
        moved_now = mover.move_due(conn, live) if mover else []
        if moved_now:
            gone = {m.message_id for m in moved_now}
            live = [r for r in live if r["id"] not in gone]
            moved += moved_now
        claimed += take(conn, live, now_ms, invisible_until, new_nonce())
        if not (expired or moved_now) or len(claimed) >= count:
            break
    return claimed, moved


def take(conn: Connection, rows: list[Row], now_ms: int, until: int, nonce: int) -> list[Claimed]:
    """One conditional UPDATE for the whole batch, re-checking that each message is still
    Active; it returns the rows it won (a concurrent claimer may have got some first)."""
    if not rows:
        return []
    ids = [row["id"] for row in rows]
    won = conn.execute(
        "UPDATE queue_messages SET visible_at = ?, dequeue_count = dequeue_count + 1,"
        " first_dequeue_time = COALESCE(first_dequeue_time, ?), receipt_nonce = ?"
        f" WHERE id IN ({placeholders(len(ids))}) AND visible_at <= ? RETURNING id",
        (until, now_ms, nonce, *ids, now_ms),
    ).fetchall()
    if len(won) != len(ids):
        mine = {row["id"] for row in won}
        rows = [row for row in rows if row["id"] in mine]
    return [
        Claimed(
            message_fields(
                row,
                next_visible_time=until,
                dequeue_count=row["dequeue_count"] + 1,
                first_dequeue_time=row["first_dequeue_time"] or now_ms,
            ),
            nonce,
            row["visible_at"],
        )
        for row in rows
    ]


def release(
    conn: Connection, queue_name: str, match: ReceiptMatch, claimed_from: int, nonce: int
) -> bool:
    """Undo the claim ``match`` names, if its handle is still current: the message is visible
    again from ``claimed_from`` (its time before the claim), the claim's dequeue is not counted,
    and a FirstDequeueTime the claim set is cleared. ``nonce`` spends the handle."""
    condition, params = _receipt_condition(queue_name, match)
    return (
        conn.execute(
            "UPDATE queue_messages SET visible_at = ?, dequeue_count = dequeue_count - 1,"
            " first_dequeue_time = CASE WHEN dequeue_count = 1 THEN NULL"
            f" ELSE first_dequeue_time END, receipt_nonce = ? WHERE {condition}",
            (claimed_from, nonce, *params),
        ).rowcount
        == 1
    )


#: The queue, and the message a receipt names deleted if the queue is a standard one.
_DELETE_IN_STANDARD_QUEUE = (
    "WITH queue AS (SELECT * FROM queues WHERE name = ?), gone AS (DELETE FROM queue_messages"
    " WHERE {condition} AND EXISTS (SELECT 1 FROM queue WHERE queue_type = ?)"
    " RETURNING id) SELECT queue.*, (SELECT COUNT(*) FROM gone) AS deleted FROM queue"
)


def delete_in_standard_queue(
    conn: Connection, queue_name: str, match: ReceiptMatch
) -> tuple[Queue, bool]:
    """The queue (QueueNotExist), and whether the message ``match`` names was deleted; in an
    ordered queue nothing is (its groups change with its messages, in a transaction). One
    statement where the database can (``WITH … DELETE``): a round trip less than a look-up
    and a DELETE, and no transaction needed around it."""
    if not conn.dialect.writable_cte:
        queue = require_queue(conn, queue_name)
        standard = not queue.attributes.ordered
        return queue, standard and delete_by_receipt(conn, queue_name, match)
    condition, params = _receipt_condition(queue_name, match)
    statement = _DELETE_IN_STANDARD_QUEUE.format(condition=condition)
    row = conn.execute(statement, (queue_name, *params, QueueType.NORMAL.value)).fetchone()
    if row is None:
        raise MNSError("QueueNotExist")
    return queue_from_row(row), row["deleted"] == 1


def delete_by_receipt(conn: Connection, queue_name: str, match: ReceiptMatch) -> bool:
    condition, params = _receipt_condition(queue_name, match)
    return conn.execute(f"DELETE FROM queue_messages WHERE {condition}", params).rowcount == 1


def change_visibility(conn: Connection, queue_name: str, match: ReceiptMatch, until: int) -> bool:
    """Move the message ``match`` names to ``until``; its receive (nonce) stays the same, so
    the handle ChangeMessageVisibility replaced keeps working (gateway.queues.receipts)."""
    condition, params = _receipt_condition(queue_name, match)
    return (
        conn.execute(
            f"UPDATE queue_messages SET visible_at = ? WHERE {condition}", (until, *params)
        ).rowcount
        == 1
    )


def _receipt_condition(queue_name: str, match: ReceiptMatch) -> tuple[str, tuple[Any, ...]]:
    """``match`` as a WHERE condition and its parameters (the rule is the pure model's)."""
    params = (match.message_id, queue_name, match.nonce, match.now_ms, match.now_ms)
    if match.visible_at is None:
        return _RECEIPT_MATCH, params
    return f"{_RECEIPT_MATCH} AND visible_at = ?", (*params, match.visible_at)


def purge_expired(conn: Connection, now_ms: int, limit: int) -> int:
    return conn.execute(
        "DELETE FROM queue_messages WHERE id IN"
        " (SELECT id FROM queue_messages WHERE expires_at <= ? LIMIT ?)",
        (now_ms, limit),
    ).rowcount


def receipt_secret(conn: Connection, candidate: str) -> str:
    """The shared receipt-signing secret, stored on first use (``candidate``) and kept after."""
    conn.execute(
        "INSERT INTO queue_secrets (name, secret) VALUES ('receipts', ?)"
        " ON CONFLICT (name) DO NOTHING",
        (candidate,),
    )
    row = conn.execute("SELECT secret FROM queue_secrets WHERE name = 'receipts'").fetchone()
    return str(row["secret"])
