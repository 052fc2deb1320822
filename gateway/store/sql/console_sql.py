"""What the web console reads beyond the API's own operations: counts over many queues and
topics at once, so that a page costs a handful of statements whatever it lists.

Read-only; every action the console takes goes through the same store operations as the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.queues.records import PRIORITY, MessageCounts
from gateway.store.sql.connection import Connection, placeholders
from gateway.store.sql.console_counts_sql import KeptState, kept


@dataclass(frozen=True, slots=True)
class Overview:
    queues: int
    topics: int
    subscriptions: int
    #: Messages and pushes, as last counted (:mod:`gateway.store.sql.console_counts_sql`).
    kept: KeptState


def _count(conn: Connection, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) AS n FROM {table}").fetchone()["n"])


#: Every priority a message may have: spelled out, it lets the database seek the ready index
#: (queue, priority, visible_at) straight to each queue's messages that are not visible.
_PRIORITIES = ", ".join(str(p) for p in range(PRIORITY.low, PRIORITY.high + 1))


def _queue_filter(names: Sequence[str] | None) -> tuple[str, tuple[str, ...]]:
    if names is None:
        return "", ()
    return f" WHERE queue_name IN ({placeholders(len(names))})", tuple(names)


def _visible_counts(
    conn: Connection, names: Sequence[str] | None, now_ms: int
) -> dict[str, tuple[int, int]]:
    """(all messages, visible ones) per queue, from the ready index alone (no table reads).

    Messages past their retention count until the periodic purge removes them (about a
    minute): what makes these counts cheap enough for a page listing many queues.
    """
    where, params = _queue_filter(names)
    rows = conn.execute(
        "SELECT queue_name, COUNT(*) AS total,"
        " SUM(CASE WHEN visible_at <= ? THEN 1 ELSE 0 END) AS visible"
        f" FROM queue_messages{where} GROUP BY queue_name",
        (now_ms, *params),
    ).fetchall()
    return {r["queue_name"]: (int(r["total"]), int(r["visible"] or 0)) for r in rows}


def _hidden_counts(
    conn: Connection, names: Sequence[str], now_ms: int
) -> dict[str, tuple[int, int]]:
    """(in flight, delayed) per queue: the messages not visible, found by seeking the ready
    index per queue and priority, so the cost grows with them, not with the waiting ones."""
    rows = conn.execute(
        "SELECT queue_name,"
        " SUM(CASE WHEN dequeue_count > 0 THEN 1 ELSE 0 END) AS inactive,"
        " SUM(CASE WHEN dequeue_count = 0 THEN 1 ELSE 0 END) AS delayed"
        f" FROM queue_messages WHERE queue_name IN ({placeholders(len(names))})"
        f" AND priority IN ({_PRIORITIES}) AND visible_at > ? AND expires_at > ?"
        " GROUP BY queue_name",
        (*names, now_ms, now_ms),
    ).fetchall()
    return {r["queue_name"]: (int(r["inactive"] or 0), int(r["delayed"] or 0)) for r in rows}


def queue_counts(
    conn: Connection, names: Sequence[str] | None, now_ms: int
) -> dict[str, MessageCounts]:
    """Active / inactive / delayed per queue (``None``: every queue that has messages)."""
    if names is not None and not names:
        return {}
    visible = _visible_counts(conn, names, now_ms)
    hidden = _hidden_counts(conn, list(visible), now_ms) if visible else {}
    counts = {
        name: MessageCounts(active, *hidden.get(name, (0, 0)))
        for name, (_, active) in visible.items()
    }
    return {name: counts.get(name, MessageCounts()) for name in (names or counts)}


def overview(conn: Connection) -> Overview:
    """The overview's counts: resources counted now (their tables are small), messages and
    pushes as kept (counting them reads every message: :class:`gateway.store.console.ConsoleReads`
    counts them in the background)."""
    return Overview(
        queues=_count(conn, "queues"),
        topics=_count(conn, "topics"),
        subscriptions=_count(conn, "subscriptions"),
        kept=kept(conn),
    )


def subscription_counts(conn: Connection, topic_names: Sequence[str]) -> dict[str, int]:
    if not topic_names:
        return {}
    rows = conn.execute(
        "SELECT topic_name, COUNT(*) AS n FROM subscriptions"
        f" WHERE topic_name IN ({placeholders(len(topic_names))}) GROUP BY topic_name",
        tuple(topic_names),
    ).fetchall()
    found = {row["topic_name"]: int(row["n"]) for row in rows}
    return {name: found.get(name, 0) for name in topic_names}


def dead_letter_sources(conn: Connection, queue_name: str) -> list[str]:
    """The queues whose dead-letter policy names ``queue_name`` as its target, by name: what
    makes a queue a dead-letter queue, whose messages redrive can move back."""
    rows = conn.execute(
        "SELECT name FROM queues WHERE dlq_target = ? ORDER BY name", (queue_name,)
    ).fetchall()
    return [str(row["name"]) for row in rows]
