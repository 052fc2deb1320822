"""One published message's pushes, for the console's Deliveries page, and "deliver again".

What the database still knows of a message: the message while the topic keeps it (a day), each
delivery still pending with its failed attempts so far, and each dead letter it became with every
attempt. A push that succeeded is forgotten with its attempts (:func:`delivery_sql.complete`), so
a subscription with neither a pending delivery nor a dead letter was delivered (or filtered
out by its tag); the page says so.

There is no index on ``deliveries.message_id`` (a publish would pay for it, see the INITIAL
migration): finding a message's pending deliveries reads the pending deliveries, which is small
while pushes keep up. Dead letters are found through ``dead_letters_message`` (migration 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.delivery.records import Attempt, DeadLetter
from gateway.protocol.errors import MNSError
from gateway.store.sql import dead_letter_sql, delivery_sql, topic_sql
from gateway.store.sql.connection import Connection
from gateway.topics.records import TopicMessage


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    delivery_id: str
    subscription_name: str
    next_attempt_at_ms: int
    attempts: list[Attempt]


@dataclass(frozen=True, slots=True)
class MessageDeliveries:
    message_id: str
    message: TopicMessage | None
    pending: list[PendingDelivery]
    dead_letters: list[DeadLetter]

    @property
    def topic_name(self) -> str | None:
        if self.message is not None:
            return self.message.topic_name
        return self.dead_letters[0].message.topic_name if self.dead_letters else None


def _message(conn: Connection, message_id: str) -> TopicMessage | None:
    row = conn.execute(
        "SELECT id AS message_id, topic_name, body, body_md5, publish_time, tag, attributes"
        " FROM topic_messages WHERE id = ?",
        (message_id,),
    ).fetchone()
    return None if row is None else delivery_sql.message_of(row)


def message_deliveries(conn: Connection, message_id: str) -> MessageDeliveries:
    rows = conn.execute(
        "SELECT id, subscription_name, next_attempt_at FROM deliveries WHERE message_id = ?"
        " ORDER BY subscription_name",
        (message_id,),
    ).fetchall()
    pending = [
        PendingDelivery(
            r["id"],
            r["subscription_name"],
            r["next_attempt_at"],
            delivery_sql.attempts_of(conn, r["id"]),
        )
        for r in rows
    ]
    letter_ids = conn.execute(
        "SELECT id FROM dead_letters WHERE message_id = ? ORDER BY id", (message_id,)
    ).fetchall()
    letters = [dead_letter_sql.get_dead_letter(conn, r["id"]) for r in letter_ids]
    return MessageDeliveries(message_id, _message(conn, message_id), pending, letters)


def deliver_again(conn: Connection, message_id: str, subscription_name: str, now_ms: int) -> str:
    """A new delivery of a message the topic still keeps, to one of its subscriptions; its id.

    ``MessageNotExist`` once the topic no longer keeps the message (a dead letter keeps its own
    copy: replay it instead).
    """
    message = _message(conn, message_id)
    if message is None:
        raise MNSError(
            "MessageNotExist",
            "The topic no longer keeps this message; replay its dead letter instead.",
        )
    if topic_sql.get_subscription(conn, message.topic_name, subscription_name) is None:
        raise MNSError("SubscriptionNotExist")
    (delivery_id,) = topic_sql.insert_deliveries(
        conn, message.id, message.topic_name, [subscription_name], now_ms
    )
    return delivery_id
