"""Topic, subscription and publish statements, run on a connection the caller provides.

Each function is one unit of work; the store decides whether it runs on the group-commit writer
(anything that writes) or on a reader connection.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from gateway.fanout import matching_subscriptions
from gateway.model import (
    TOPIC_MESSAGE_RETENTION_SECONDS,
    Page,
    Published,
    Subscription,
    Topic,
    TopicMessage,
)
from gateway.protocol.endpoints import route_of
from gateway.protocol.errors import MNSError

Connection = Any  # a DB-API connection whose rows support access by column name


def _topic(row: Any) -> Topic:
    return Topic(
        name=row["name"],
        create_time=row["create_time"],
        last_modify_time=row["last_modify_time"],
        maximum_message_size=row["maximum_message_size"],
        logging_enabled=bool(row["logging_enabled"]),
    )


def _subscription(row: Any) -> Subscription:
    return Subscription(
        topic_name=row["topic_name"],
        name=row["name"],
        endpoint=row["endpoint"],
        filter_tag=row["filter_tag"],
        notify_strategy=row["notify_strategy"],
        notify_content_format=row["notify_content_format"],
        create_time=row["create_time"],
        last_modify_time=row["last_modify_time"],
    )


def get_topic(conn: Connection, name: str) -> Topic | None:
    row = conn.execute("SELECT * FROM topics WHERE name = ?", (name,)).fetchone()
    return _topic(row) if row else None


def require_topic(conn: Connection, name: str) -> Topic:
    topic = get_topic(conn, name)
    if topic is None:
        raise MNSError("TopicNotExist")
    return topic


def create_topic(conn: Connection, topic: Topic) -> bool:
    """Insert ``topic``; ``False`` when an identical one exists, 409 when a different one does."""
    existing = get_topic(conn, topic.name)
    if existing is not None:
        same = (existing.maximum_message_size, existing.logging_enabled) == (
            topic.maximum_message_size,
            topic.logging_enabled,
        )
        if not same:
            raise MNSError("TopicAlreadyExist")
        return False
    conn.execute(
        "INSERT INTO topics (name, create_time, last_modify_time, maximum_message_size,"
        " logging_enabled) VALUES (?, ?, ?, ?, ?)",
        (
            topic.name,
            topic.create_time,
            topic.last_modify_time,
            topic.maximum_message_size,
            int(topic.logging_enabled),
        ),
    )
    return True


def set_topic_attributes(
    conn: Connection, name: str, max_size: int | None, logging: bool | None, now: int
) -> None:
    topic = require_topic(conn, name)
    conn.execute(
        "UPDATE topics SET maximum_message_size = ?, logging_enabled = ?, last_modify_time = ?"
        " WHERE name = ?",
        (
            topic.maximum_message_size if max_size is None else max_size,
            int(topic.logging_enabled if logging is None else logging),
            now,
            name,
        ),
    )


def delete_topic(conn: Connection, name: str) -> None:
    """Delete the topic with its subscriptions, messages and pending deliveries."""
    conn.execute(
        "DELETE FROM delivery_attempts WHERE delivery_id IN"
        " (SELECT id FROM deliveries WHERE topic_name = ?)",
        (name,),
    )
    for table in ("deliveries", "topic_messages", "subscriptions"):
        conn.execute(f"DELETE FROM {table} WHERE topic_name = ?", (name,))
    conn.execute("DELETE FROM topics WHERE name = ?", (name,))


def _page(rows: Sequence[Any], limit: int, key: str) -> tuple[Sequence[Any], str | None]:
    if len(rows) > limit:
        return rows[:limit], rows[limit][key]
    return rows, None


def list_topics(conn: Connection, prefix: str, marker: str, limit: int) -> Page[Topic]:
    rows = conn.execute(
        "SELECT * FROM topics WHERE substr(name, 1, ?) = ? AND name >= ? ORDER BY name LIMIT ?",
        (len(prefix), prefix, marker, limit + 1),
    ).fetchall()
    page, next_marker = _page(rows, limit, "name")
    return Page([_topic(row) for row in page], next_marker)


def message_count(conn: Connection, topic_name: str, now_ms: int) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM topic_messages WHERE topic_name = ? AND expires_at > ?",
        (topic_name, now_ms),
    ).fetchone()
    return int(row[0])


def get_subscription(conn: Connection, topic_name: str, name: str) -> Subscription | None:
    row = conn.execute(
        "SELECT * FROM subscriptions WHERE topic_name = ? AND name = ?", (topic_name, name)
    ).fetchone()
    return _subscription(row) if row else None


def subscribe(conn: Connection, subscription: Subscription) -> bool:
    """Insert ``subscription``; ``False`` for an identical re-subscribe, 409 for a different one."""
    require_topic(conn, subscription.topic_name)
    existing = get_subscription(conn, subscription.topic_name, subscription.name)
    if existing is not None:
        if not existing.same_definition(subscription):
            raise MNSError("SubscriptionAlreadyExist")
        return False
    s = subscription
    conn.execute(
        "INSERT INTO subscriptions (topic_name, name, endpoint, filter_tag, notify_strategy,"
        " notify_content_format, route, create_time, last_modify_time)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            s.topic_name,
            s.name,
            s.endpoint,
            s.filter_tag,
            s.notify_strategy,
            s.notify_content_format,
            route_of(s.endpoint),
            s.create_time,
            s.last_modify_time,
        ),
    )
    return True


def set_notify_strategy(
    conn: Connection, topic_name: str, name: str, strategy: str, now: int
) -> None:
    if get_subscription(conn, topic_name, name) is None:
        raise MNSError("SubscriptionNotExist")
    conn.execute(
        "UPDATE subscriptions SET notify_strategy = ?, last_modify_time = ?"
        " WHERE topic_name = ? AND name = ?",
        (strategy, now, topic_name, name),
    )


def unsubscribe(conn: Connection, topic_name: str, name: str) -> None:
    """Remove the subscription and whatever it still had pending (missing is not an error)."""
    conn.execute(
        "DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries"
        " WHERE topic_name = ? AND subscription_name = ?)",
        (topic_name, name),
    )
    conn.execute(
        "DELETE FROM deliveries WHERE topic_name = ? AND subscription_name = ?", (topic_name, name)
    )
    conn.execute("DELETE FROM subscriptions WHERE topic_name = ? AND name = ?", (topic_name, name))


def list_subscriptions(
    conn: Connection, topic_name: str, prefix: str, marker: str, limit: int
) -> Page[Subscription]:
    require_topic(conn, topic_name)
    rows = conn.execute(
        "SELECT * FROM subscriptions WHERE topic_name = ? AND substr(name, 1, ?) = ?"
        " AND name >= ? ORDER BY name LIMIT ?",
        (topic_name, len(prefix), prefix, marker, limit + 1),
    ).fetchall()
    page, next_marker = _page(rows, limit, "name")
    return Page([_subscription(row) for row in page], next_marker)


def publish(conn: Connection, message: TopicMessage) -> Published:
    """Record ``message`` and one due delivery per matching subscription.

    Runs as one unit on the writer, so the 201 that follows is only sent once both are durable.
    """
    topic = require_topic(conn, message.topic_name)
    if len(message.body.encode("utf-8")) > topic.maximum_message_size:
        raise MNSError(
            "InvalidArgument", "The length of message should not be larger than MaximumMessageSize."
        )
    subscriptions = [
        _subscription(row)
        for row in conn.execute(
            "SELECT * FROM subscriptions WHERE topic_name = ?", (message.topic_name,)
        ).fetchall()
    ]
    targets = matching_subscriptions(subscriptions, message.tag)
    expires = message.publish_time_ms + TOPIC_MESSAGE_RETENTION_SECONDS * 1000
    conn.execute(
        "INSERT INTO topic_messages (id, topic_name, body, body_md5, tag, attributes,"
        " publish_time, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            message.id,
            message.topic_name,
            message.body,
            message.body_md5,
            message.tag,
            json.dumps(message.attributes),
            message.publish_time_ms,
            expires,
        ),
    )
    conn.executemany(
        "INSERT INTO deliveries (id, message_id, topic_name, subscription_name, attempts,"
        " next_attempt_at, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
        [
            (
                uuid.uuid4().hex,
                message.id,
                message.topic_name,
                sub.name,
                message.publish_time_ms,
                message.publish_time_ms,
            )
            for sub in targets
        ],
    )
    return Published(len(targets), topic.logging_enabled)
