"""Topic, subscription and publish statements, each run on a connection the caller provides.

Creates are one ``INSERT … ON CONFLICT DO NOTHING``: whichever of two concurrent creators inserts
first wins, and the other compares what it finds (204 for the same definition, 409 otherwise).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Final

from gateway.delivery.delivery_ids import new_delivery_id
from gateway.errors.mns import MNSError
from gateway.protocol.endpoints import route_of
from gateway.protocol.listing import Page
from gateway.protocol.notify import ContentFormat, NotifyStrategy
from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.store.sql import control_sql
from gateway.store.sql.connection import (
    Connection,
    Row,
    SelfContained,
    insert_rows,
)
from gateway.store.sql.together import together
from gateway.topics.fanout import check_size, matching_subscriptions
from gateway.topics.records import (
    Published,
    Subscription,
    Topic,
    TopicMessage,
    subscription_resource,
)

#: Stored values back to enums by a dict lookup: calling the enum costs a microsecond per row.
STRATEGIES: Final = {member.value: member for member in NotifyStrategy}
FORMATS: Final = {member.value: member for member in ContentFormat}
SUBSCRIPTION_COLUMNS: Final = (
    "topic_name, name, endpoint, filter_tag, notify_strategy, notify_content_format,"
    " create_time, last_modify_time, dlq_target, dlq_enabled"
)


def topic_of(row: Row) -> Topic:
    return Topic(
        name=row["name"],
        create_time=row["create_time"],
        last_modify_time=row["last_modify_time"],
        maximum_message_size=row["maximum_message_size"],
        logging_enabled=bool(row["logging_enabled"]),
    )


def subscription_of(row: Row, name_column: str = "name") -> Subscription:
    return Subscription(
        topic_name=row["topic_name"],
        name=row[name_column],
        endpoint=row["endpoint"],
        filter_tag=row["filter_tag"],
        notify_strategy=STRATEGIES[row["notify_strategy"]],
        notify_content_format=FORMATS[row["notify_content_format"]],
        create_time=row["create_time"],
        last_modify_time=row["last_modify_time"],
        dead_letter_policy=(
            DeadLetterPolicy(row["dlq_target"], None, bool(row["dlq_enabled"]))
            if row["dlq_target"]
            else None
        ),
    )


def _policy_columns(policy: DeadLetterPolicy | None) -> tuple[str | None, int]:
    return (policy.target_queue, int(policy.enabled)) if policy else (None, 0)


def get_topic(conn: Connection, name: str) -> Topic | None:
    row = conn.execute("SELECT * FROM topics WHERE name = ?", (name,)).fetchone()
    return topic_of(row) if row else None


def require_topic(conn: Connection, name: str) -> Topic:
    topic = get_topic(conn, name)
    if topic is None:
        raise MNSError("TopicNotExist")
    return topic


def create_topic(conn: Connection, topic: Topic) -> bool:
    """Insert ``topic``; ``False`` when an identical one exists, 409 when a different one does."""
    inserted = conn.execute(
        "INSERT INTO topics (name, create_time, last_modify_time, maximum_message_size,"
        " logging_enabled) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING name",
        (
            topic.name,
            topic.create_time,
            topic.last_modify_time,
            topic.maximum_message_size,
            int(topic.logging_enabled),
        ),
    ).fetchall()
    if inserted:
        return True
    if not require_topic(conn, topic.name).same_attributes(topic):
        raise MNSError("TopicAlreadyExist")
    return False


def set_topic_attributes(
    conn: Connection, name: str, max_size: int | None, logging: bool | None, now: int
) -> None:
    """Change the attributes given (``None``: unchanged); 404 for a missing topic."""
    updated = conn.execute(
        "UPDATE topics SET maximum_message_size = COALESCE(?, maximum_message_size),"
        " logging_enabled = COALESCE(?, logging_enabled), last_modify_time = ? WHERE name = ?",
        (max_size, None if logging is None else int(logging), now, name),
    ).rowcount
    if not updated:
        raise MNSError("TopicNotExist")


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
    control_sql.forget_topic(conn, name)


def list_topics(conn: Connection, prefix: str, marker: str, limit: int) -> Page[Topic]:
    rows = conn.execute(
        "SELECT * FROM topics WHERE substr(name, 1, ?) = ? AND name >= ? ORDER BY name LIMIT ?",
        (len(prefix), prefix, marker, limit + 1),
    ).fetchall()
    next_marker = rows[limit]["name"] if len(rows) > limit else None
    return Page([topic_of(row) for row in rows[:limit]], next_marker)


def message_count(conn: Connection, topic_name: str, now_ms: int) -> int:
    row = conn.execute(
        "SELECT COUNT(*) AS n FROM topic_messages WHERE topic_name = ? AND expires_at > ?",
        (topic_name, now_ms),
    ).fetchone()
    return int(row["n"])


def get_subscription(conn: Connection, topic_name: str, name: str) -> Subscription | None:
    row = conn.execute(
        f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE topic_name = ? AND name = ?",
        (topic_name, name),
    ).fetchone()
    return subscription_of(row) if row else None


def subscribe(conn: Connection, subscription: Subscription) -> bool:
    """Insert ``subscription``; ``False`` for an identical re-subscribe, 409 for a different one."""
    require_topic(conn, subscription.topic_name)
    s = subscription
    inserted = conn.execute(
        "INSERT INTO subscriptions (topic_name, name, endpoint, filter_tag, notify_strategy,"
        " notify_content_format, route, create_time, last_modify_time, dlq_target, dlq_enabled)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (topic_name, name) DO NOTHING"
        " RETURNING name",
        (
            s.topic_name,
            s.name,
            s.endpoint,
            s.filter_tag,
            s.notify_strategy.value,
            s.notify_content_format.value,
            route_of(s.endpoint),
            s.create_time,
            s.last_modify_time,
            *_policy_columns(s.dead_letter_policy),
        ),
    ).fetchall()
    if inserted:
        return True
    existing = get_subscription(conn, s.topic_name, s.name)
    if existing is None or not existing.same_definition(s):
        raise MNSError("SubscriptionAlreadyExist")
    return False


def set_notify_strategy(
    conn: Connection, topic_name: str, name: str, strategy: NotifyStrategy, now: int
) -> None:
    updated = conn.execute(
        "UPDATE subscriptions SET notify_strategy = ?, last_modify_time = ?"
        " WHERE topic_name = ? AND name = ?",
        (strategy.value, now, topic_name, name),
    ).rowcount
    if not updated:
        raise MNSError("SubscriptionNotExist")


def set_dead_letter_policy(
    conn: Connection,
    topic_name: str,
    name: str,
    policy: DeadLetterPolicy | None,
    now: int,
) -> None:
    updated = conn.execute(
        "UPDATE subscriptions SET dlq_target = ?, dlq_enabled = ?, last_modify_time = ?"
        " WHERE topic_name = ? AND name = ?",
        (*_policy_columns(policy), now, topic_name, name),
    ).rowcount
    if not updated:
        raise MNSError("SubscriptionNotExist")


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
    subscription = subscription_resource(topic_name, name)
    control_sql.forget_resource(conn, "subscription", subscription)


def list_subscriptions(
    conn: Connection, topic_name: str, prefix: str, marker: str, limit: int
) -> Page[Subscription]:
    require_topic(conn, topic_name)
    rows = conn.execute(
        f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE topic_name = ?"
        " AND substr(name, 1, ?) = ? AND name >= ? ORDER BY name LIMIT ?",
        (topic_name, len(prefix), prefix, marker, limit + 1),
    ).fetchall()
    next_marker = rows[limit]["name"] if len(rows) > limit else None
    return Page([subscription_of(row) for row in rows[:limit]], next_marker)


_WITH_SUBSCRIPTIONS = (
    "SELECT t.create_time AS topic_create_time, t.last_modify_time AS topic_modify_time,"
    " t.maximum_message_size, t.logging_enabled, "
    + ", ".join(f"s.{column}" for column in SUBSCRIPTION_COLUMNS.split(", "))
    + " FROM topics t LEFT JOIN subscriptions s ON s.topic_name = t.name WHERE t.name = ?"
)


def topic_with_subscriptions(conn: Connection, name: str) -> tuple[Topic, list[Subscription]]:
    """The topic and all its subscriptions, in one statement (404 for a missing topic)."""
    rows = conn.execute(_WITH_SUBSCRIPTIONS, (name,)).fetchall()
    if not rows:
        raise MNSError("TopicNotExist")
    first = rows[0]
    topic = Topic(
        name=name,
        create_time=first["topic_create_time"],
        last_modify_time=first["topic_modify_time"],
        maximum_message_size=first["maximum_message_size"],
        logging_enabled=bool(first["logging_enabled"]),
    )
    return topic, [subscription_of(row) for row in rows if row["name"] is not None]


_INSERT_MESSAGE = (
    "INSERT INTO topic_messages (id, topic_name, body, body_md5, tag, attributes, publish_time,"
    " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _message_params(message: TopicMessage, expires_at: int) -> tuple[object, ...]:
    return (
        message.id,
        message.topic_name,
        message.body,
        message.body_md5,
        message.tag,
        json.dumps(message.attributes),
        message.publish_time_ms,
        expires_at,
    )


def insert_message(
    conn: Connection, message: TopicMessage, expires_at: int, *, if_absent: bool = False
) -> None:
    """Keep ``message``; with ``if_absent`` (a replay) a message still kept is left as it is."""
    statement = _INSERT_MESSAGE + (" ON CONFLICT DO NOTHING" if if_absent else "")
    conn.execute(statement, _message_params(message, expires_at))


_DELIVERY_COLUMNS = (
    "deliveries (id, message_id, topic_name, subscription_name, attempts, next_attempt_at,"
    " created_at)"
)


def _delivery_rows(
    message_id: str, topic_name: str, subscriptions: list[str], due_ms: int
) -> list[tuple[object, ...]]:
    return [
        (new_delivery_id(due_ms), message_id, topic_name, name, 0, due_ms, due_ms)
        for name in subscriptions
    ]


def insert_deliveries(
    conn: Connection, message_id: str, topic_name: str, subscriptions: list[str], due_ms: int
) -> list[str]:
    """One due delivery of the message per subscription name; their ids."""
    rows = _delivery_rows(message_id, topic_name, subscriptions, due_ms)
    if rows:
        insert_rows(conn, _DELIVERY_COLUMNS, rows)
    return [str(row[0]) for row in rows]


def insert_published(conn: Connection, message: TopicMessage, subscriptions: list[str]) -> None:
    """The message and its deliveries, all or nothing whatever the fan-out: independent writes
    (:func:`~gateway.store.sql.together.together`), on PostgreSQL one statement up to thousands
    of subscriptions, so that a publish needs no transaction around it."""
    with together(conn) as writes:
        insert_message(writes, message, message.expires_at_ms)
        insert_deliveries(
            writes, message.id, message.topic_name, subscriptions, message.publish_time_ms
        )


def publishing(message: TopicMessage) -> SelfContained[Published]:
    """:func:`publish` as a write: it needs no transaction around it, as it reads, then writes
    all or nothing (:func:`insert_published`)."""
    return SelfContained(partial(publish, message=message))


def publish(conn: Connection, message: TopicMessage) -> Published:
    """Record ``message`` and one due delivery per matching subscription, all or nothing: the
    201 that follows is only sent once both are committed."""
    topic, subscriptions = topic_with_subscriptions(conn, message.topic_name)
    check_size(topic, message)
    targets = matching_subscriptions(subscriptions, message)
    insert_published(conn, message, [s.name for s in targets])
    return Published(len(targets), topic.logging_enabled)
