"""Ordered (FIFO) queues' statements: message groups, their sequence, and the group lock.

In an ordered queue every message belongs to a group (its MessageGroupId) and has a place in it,
``group_seq``, drawn from the group's row in ``queue_groups`` when it is sent. Only a group's
**head**, its live message with the lowest ``group_seq``, can be received, and only while it is
Active: a received head is Inactive, which locks the group until the head is deleted or its
visibility times out (docs/queues.md#ordered-queues).

The group row also keeps ``head_visible_at``: no earlier than when the group's head can next be
received. A claim looks only at rows whose time has come (one index range), locks them, and then
checks the head itself; so the row is a hint that may be early (a send lowers it, the claim puts
it right) but is never late by more than the head's own times, which it is kept at or below.

Every change to a group's head happens with the group row locked (PostgreSQL: ``FOR UPDATE``,
claims ``SKIP LOCKED``; SQLite has one writer at a time): a send's upsert, a claim, a delete, a
visibility change. Two claimers therefore never take two messages of one group, and a group row
is deleted only when, with it locked, no message of the group is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from gateway.queues.records import Queue, QueueMessage
from gateway.store import queue_sql
from gateway.store.queue_sql import Claimed, StoredMessage
from gateway.store.sql import Connection, Row

if TYPE_CHECKING:
    from gateway.store.dead_letter_queue_sql import DeadLetterMover, Moved

_UPSERT_GROUP: Final = (
    "INSERT INTO queue_groups (queue_name, group_id, next_seq, head_visible_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (queue_name, group_id) DO UPDATE SET"
    " next_seq = queue_groups.next_seq + excluded.next_seq,"
    " head_visible_at = CASE WHEN excluded.head_visible_at < queue_groups.head_visible_at"
    " THEN excluded.head_visible_at ELSE queue_groups.head_visible_at END"
    " RETURNING next_seq"
)
_READY_GROUPS: Final = (
    "SELECT group_id FROM queue_groups g WHERE queue_name = ? AND head_visible_at <= ?"
    " ORDER BY head_visible_at, group_id LIMIT ?"
)
_HEAD: Final = (
    "SELECT * FROM queue_messages WHERE queue_name = ? AND group_id = ?"
    " AND expires_at > ? ORDER BY group_seq LIMIT 1"
)
#: Rounds of one claim: each either fills the batch or moves a head to the dead letters.
_ROUNDS: Final = 8


def group_key(message: StoredMessage) -> str:
    """A message's group in an ordered queue: its MessageGroupId. SendMessage requires one; a
    message arriving without (pushed from a topic, dead-lettered from a standard queue) is a
    group of its own, so it is never held back by, nor holds back, any other."""
    return str(message.properties.get("MessageGroupId") or message.id)


def grouped(
    conn: Connection, queue: Queue, messages: Sequence[StoredMessage]
) -> list[StoredMessage]:
    """``messages`` with their group and place in it when ``queue`` is ordered (unchanged
    otherwise). Call right before inserting them, in the same transaction.

    Groups are upserted in name order, so two concurrent sends touching the same groups lock
    them in the same order and never deadlock; within a group, places follow message order.
    """
    if not queue.attributes.ordered or not messages:
        return list(messages)
    keys = [group_key(m) for m in messages]
    sizes = Counter(keys)
    first_seq: dict[str, int] = {}
    for key in sorted(sizes):
        due = min(
            receivable_at(m.visible_at, m.expires_at)
            for m, k in zip(messages, keys, strict=True)
            if k == key
        )
        last = conn.execute(_UPSERT_GROUP, (queue.name, key, sizes[key], due)).fetchone()
        first_seq[key] = int(last["next_seq"]) - sizes[key] + 1
    placed = []
    for message, key in zip(messages, keys, strict=True):
        placed.append(replace(message, group_id=key, group_seq=first_seq[key]))
        first_seq[key] += 1
    return placed


def receivable_at(visible_at: int, expires_at: int) -> int:
    """When a head can next be received, or is known to have expired: the earlier time."""
    return min(visible_at, expires_at)


def lock_group(conn: Connection, queue_name: str, group_id: str) -> None:
    """Hold the group's row until this transaction ends (PostgreSQL; SQLite writes one at a
    time anyway)."""
    if conn.dialect.lock_row:
        conn.execute(
            "SELECT group_id FROM queue_groups WHERE queue_name = ? AND group_id = ?"
            + conn.dialect.lock_row,
            (queue_name, group_id),
        )


def groups_of(conn: Connection, queue_name: str, message_ids: Iterable[str]) -> list[str]:
    """The groups of these messages, sorted (the order to lock them in)."""
    ids = list(message_ids)
    if not ids:
        return []
    rows = conn.execute(
        f"SELECT DISTINCT group_id FROM queue_messages WHERE queue_name = ?"
        f" AND id IN ({queue_sql.placeholders(len(ids))}) AND group_id IS NOT NULL",
        (queue_name, *ids),
    ).fetchall()
    return sorted(row["group_id"] for row in rows)


def head_of(conn: Connection, queue_name: str, group_id: str, now_ms: int) -> Row | None:
    """The group's live message with the lowest place, Active or not."""
    return conn.execute(_HEAD, (queue_name, group_id, now_ms)).fetchone()


def refresh_group(conn: Connection, queue_name: str, group_id: str, now_ms: int) -> Row | None:
    """Put the group's row right after its head changed; the head, or ``None`` when the group
    has no live message left (its row and any expired remains are then deleted). The caller
    holds the group's row."""
    head = head_of(conn, queue_name, group_id, now_ms)
    if head is None:
        _drop_group(conn, queue_name, group_id)
    else:
        _set_due(conn, queue_name, group_id, receivable_at(head["visible_at"], head["expires_at"]))
    return head


def _drop_group(conn: Connection, queue_name: str, group_id: str) -> None:
    for table, column in (("queue_messages", "group_id"), ("queue_groups", "group_id")):
        conn.execute(
            f"DELETE FROM {table} WHERE queue_name = ? AND {column} = ?", (queue_name, group_id)
        )


def _set_due(conn: Connection, queue_name: str, group_id: str, due: int) -> None:
    conn.execute(
        "UPDATE queue_groups SET head_visible_at = ? WHERE queue_name = ? AND group_id = ?",
        (due, queue_name, group_id),
    )


def claim(
    conn: Connection,
    queue: Queue,
    count: int,
    *,
    now_ms: int,
    invisible_until: int,
    nonce: int,
    mover: DeadLetterMover | None = None,
) -> tuple[list[Claimed], list[Moved]]:
    """Receive the Active heads of up to ``count`` groups, groups whose head became receivable
    earliest first, at most one message per group; a head this receive would take past
    MaxReceiveCount moves to the dead letters and its successor may be taken instead."""
    claimed: list[Claimed] = []
    moved: list[Moved] = []
    for _ in range(_ROUNDS):
        rows = conn.execute(
            _READY_GROUPS + conn.dialect.lock_skipping("g"),
            (queue.name, now_ms, count - len(claimed)),
        ).fetchall()
        moved_now = 0
        for row in rows:
            group = row["group_id"]
            head = head_of(conn, queue.name, group, now_ms)
            if head is None:
                _drop_group(conn, queue.name, group)
            elif head["visible_at"] > now_ms:  # delayed, or the row was early: put it right
                _set_due(
                    conn, queue.name, group, receivable_at(head["visible_at"], head["expires_at"])
                )
            elif mover is not None and (gone := mover.move_due(conn, [head])):
                moved += gone
                moved_now += 1
                refresh_group(conn, queue.name, group, now_ms)
            elif won := queue_sql.take(conn, [head], now_ms, invisible_until, nonce):
                claimed += won
                _set_due(
                    conn, queue.name, group, receivable_at(invisible_until, head["expires_at"])
                )
        if not moved_now or len(claimed) >= count or not rows:
            break
    return claimed, moved


def ready(conn: Connection, queue_name: str, now_ms: int) -> bool:
    """Whether some group's head may be receivable now (a claim decides)."""
    return bool(conn.execute(_READY_GROUPS, (queue_name, now_ms, 1)).fetchall())


def next_due(conn: Connection, queue_name: str, now_ms: int) -> int | None:
    """When the earliest locked or delayed group may next have a receivable head."""
    row = conn.execute(
        "SELECT MIN(head_visible_at) AS due FROM queue_groups"
        " WHERE queue_name = ? AND head_visible_at > ?",
        (queue_name, now_ms),
    ).fetchone()
    return None if row["due"] is None else int(row["due"])


def peek(conn: Connection, queue_name: str, now_ms: int, count: int) -> list[QueueMessage]:
    """The messages a receive would get now: the Active heads of receivable groups."""
    messages: list[QueueMessage] = []
    for row in conn.execute(_READY_GROUPS, (queue_name, now_ms, count + 16)).fetchall():
        head = conn.execute(_HEAD, (queue_name, row["group_id"], now_ms)).fetchone()
        if head is not None and head["visible_at"] <= now_ms:
            messages.append(QueueMessage(**queue_sql.message_fields(head)))
        if len(messages) >= count:
            break
    return messages


def lock_groups_of(conn: Connection, queue: Queue, message_ids: Iterable[str]) -> list[str]:
    """Before changing these messages of an ordered queue (deleting them, changing their
    visibility), hold their groups, in name order; the groups (none for a standard queue)."""
    if not queue.attributes.ordered:
        return []
    groups = groups_of(conn, queue.name, message_ids)
    for group in groups:
        lock_group(conn, queue.name, group)
    return groups


def refresh_groups(conn: Connection, queue_name: str, groups: Iterable[str], now_ms: int) -> None:
    for group in groups:
        refresh_group(conn, queue_name, group, now_ms)
