"""Ordered (FIFO) queues' statements: message groups, their sequence, and the group lock.

In an ordered queue every message belongs to a group (its MessageGroupId) and has a place in it,
``group_seq``, drawn from the group's row in ``queue_groups`` when it is sent. Only a group's
**head**, its live message with the lowest ``group_seq``, can be received, and only while it is
Active: a received head is Inactive, which locks the group until the head is deleted or its
visibility times out (docs/queues.md#ordered-queues).

The group row also keeps ``head_visible_at``: no earlier than when the group's head can next be
received. A claim looks only at rows whose time has come (one index range), locks them, and then
checks the heads themselves; so the row is a hint that may be early (a send lowers it, the claim
puts it right) but is never late by more than the head's own times, which it is kept at or below.
A group left without messages keeps its row, due at once, until the next claim drops it.

Statements work on all the groups of a claim or a batch delete at once (one query finds every
head, one UPDATE moves every group's time): on PostgreSQL each statement is a round trip, and a
statement per group made a batch of 16 cost a hundred.

Every change to a group's head happens with the group row locked (PostgreSQL: ``FOR UPDATE``,
claims ``SKIP LOCKED``; SQLite has one writer at a time): a send's upsert, a claim, a delete, a
visibility change. Two claimers therefore never take two messages of one group, and a group row
is deleted only when, with it locked, no message of the group is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

from gateway.queues.dlq_policy import Moved
from gateway.queues.records import Queue, QueueMessage
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql import queue_sql
from gateway.store.sql.connection import Connection, Row
from gateway.store.sql.queue_message_sql import Claimed, Mover, StoredMessage

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


def lock_groups(conn: Connection, queue_name: str, groups: Sequence[str]) -> None:
    """Hold these groups' rows until this transaction ends, in name order so that two
    transactions never wait for each other (PostgreSQL; SQLite writes one at a time anyway)."""
    if conn.dialect.lock_row and groups:
        conn.execute(
            f"SELECT group_id FROM queue_groups WHERE queue_name = ?"
            f" AND group_id IN ({queue_sql.placeholders(len(groups))}) ORDER BY group_id"
            + conn.dialect.lock_row,
            (queue_name, *groups),
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


def heads_of(
    conn: Connection, queue_name: str, groups: Sequence[str], now_ms: int
) -> dict[str, Row]:
    """Each group's head, its live message with the lowest place (Active or not), by group; a
    group without live messages has none. One statement for all the groups."""
    if not groups:
        return {}
    rows = conn.execute(
        "SELECT m.* FROM queue_groups g JOIN queue_messages m ON m.id = ("
        " SELECT h.id FROM queue_messages h WHERE h.queue_name = g.queue_name"
        " AND h.group_id = g.group_id AND h.expires_at > ? ORDER BY h.group_seq LIMIT 1)"
        f" WHERE g.queue_name = ? AND g.group_id IN ({queue_sql.placeholders(len(groups))})",
        (now_ms, queue_name, *groups),
    ).fetchall()
    return {row["group_id"]: row for row in rows}


def refresh_groups(conn: Connection, queue_name: str, groups: Sequence[str], now_ms: int) -> None:
    """Put the groups' rows right after their heads changed (deleted, received, visible at
    another time, moved), in one statement; a group left without live messages becomes due at
    once, and the next claim drops it. The caller holds the groups' rows."""
    if groups:
        conn.execute(
            "UPDATE queue_groups SET head_visible_at = COALESCE(("
            " SELECT CASE WHEN h.visible_at < h.expires_at THEN h.visible_at ELSE h.expires_at END"
            " FROM queue_messages h WHERE h.queue_name = queue_groups.queue_name"
            " AND h.group_id = queue_groups.group_id AND h.expires_at > ?"
            " ORDER BY h.group_seq LIMIT 1), 0)"
            f" WHERE queue_name = ? AND group_id IN ({queue_sql.placeholders(len(groups))})",
            (now_ms, queue_name, *groups),
        )


def _drop_groups(conn: Connection, queue_name: str, groups: Sequence[str], now_ms: int) -> None:
    """Forget groups found without live messages, their expired remains with them."""
    if groups:
        marks = queue_sql.placeholders(len(groups))
        conn.execute(
            f"DELETE FROM queue_messages WHERE queue_name = ? AND group_id IN ({marks})"
            " AND expires_at <= ?",
            (queue_name, *groups, now_ms),
        )
        conn.execute(
            f"DELETE FROM queue_groups WHERE queue_name = ? AND group_id IN ({marks})",
            (queue_name, *groups),
        )


def _set_due(conn: Connection, queue_name: str, groups: Sequence[str], due: int) -> None:
    if groups:
        conn.execute(
            "UPDATE queue_groups SET head_visible_at = ?"
            f" WHERE queue_name = ? AND group_id IN ({queue_sql.placeholders(len(groups))})",
            (due, queue_name, *groups),
        )


def claim(
    conn: Connection,
    queue: Queue,
    count: int,
    *,
    now_ms: int,
    invisible_until: int,
    nonce: int,
    mover: Mover | None = None,
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
        groups = [row["group_id"] for row in rows]
        heads = heads_of(conn, queue.name, groups, now_ms)
        _drop_groups(conn, queue.name, [g for g in groups if g not in heads], now_ms)
        waiting = [g for g, head in heads.items() if head["visible_at"] > now_ms]
        refresh_groups(conn, queue.name, waiting, now_ms)  # delayed, or the row was early
        ready = [heads[g] for g in groups if g in heads and heads[g]["visible_at"] <= now_ms]
        moved_now = mover.move_due(conn, ready) if mover is not None else []
        if moved_now:
            gone = {m.message_id for m in moved_now}
            refresh_groups(
                conn, queue.name, [h["group_id"] for h in ready if h["id"] in gone], now_ms
            )
            ready = [head for head in ready if head["id"] not in gone]
            moved += moved_now
        won = message_sql.take(conn, ready, now_ms, invisible_until, nonce)
        claimed += won
        _set_in_flight(conn, queue.name, ready, won, invisible_until)
        if not moved_now or len(claimed) >= count or not rows:
            break
    return claimed, moved


def _set_in_flight(
    conn: Connection, queue_name: str, heads: list[Row], won: list[Claimed], until: int
) -> None:
    """The claimed heads' groups are locked until their heads are visible again, or expire."""
    taken = {c.message_id for c in won}
    heads = [h for h in heads if h["id"] in taken]
    _set_due(conn, queue_name, [h["group_id"] for h in heads if h["expires_at"] >= until], until)
    for head in heads:
        if head["expires_at"] < until:
            _set_due(conn, queue_name, [head["group_id"]], head["expires_at"])


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
    rows = conn.execute(_READY_GROUPS, (queue_name, now_ms, count + 16)).fetchall()
    groups = [row["group_id"] for row in rows]
    heads = heads_of(conn, queue_name, groups, now_ms)
    ready = [heads[g] for g in groups if g in heads and heads[g]["visible_at"] <= now_ms]
    return [QueueMessage(**message_sql.message_fields(head)) for head in ready[:count]]


def lock_groups_of(conn: Connection, queue: Queue, message_ids: Iterable[str]) -> list[str]:
    """Before changing these messages of an ordered queue (deleting them, changing their
    visibility), hold their groups; the groups (none for a standard queue)."""
    if not queue.attributes.ordered:
        return []
    groups = groups_of(conn, queue.name, message_ids)
    lock_groups(conn, queue.name, groups)
    return groups
