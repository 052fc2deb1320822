"""One published message's pushes, for the console's Deliveries page, and "deliver again".

What the database knows of a message: the message while the topic keeps it (a day), each
delivery still pending with its failed attempts so far, each dead letter it became with every
attempt, and each delivery that succeeded in the last day with every attempt
(:mod:`delivered_sql`). A subscription with none of these was not addressed (filter tag, or
subscribed after the publish), or its push is older than the history.

Six statements whatever the topic's size, each on an index: the message and the delivered
history by their primary keys, the dead letters through ``dead_letters_message`` (migration 7),
the pending deliveries through ``deliveries_subscription_due`` (the topic's pending ones only: there
is no index on ``deliveries.message_id``, a publish would pay for it, see the INITIAL migration),
their attempts by primary key, and only the subscriptions that have something to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.delivery.records import Attempt, DeadLetter
from gateway.errors.mns import MNSError
from gateway.store.sql import dead_letter_sql, delivered_sql, delivery_sql, topic_sql
from gateway.store.sql.connection import Connection, placeholders
from gateway.store.sql.delivered_sql import Delivered
from gateway.topics.records import Subscription, TopicMessage


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    delivery_id: str
    subscription_name: str
    next_attempt_at_ms: int
    attempts: list[Attempt]


Push = Delivered | PendingDelivery | DeadLetter


@dataclass(frozen=True, slots=True)
class SubscriptionPushes:
    """One subscription's pushes of the message; ``subscription`` is ``None`` once it is gone."""

    name: str
    subscription: Subscription | None
    delivered: list[Delivered] = field(default_factory=list)
    pending: list[PendingDelivery] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)

    def pushes(self) -> list[tuple[str, Push, Sequence[Attempt]]]:
        """Each push with its kind (``delivered``, ``pending``, ``dead``) and its attempts."""
        return [
            *(("delivered", d, d.attempts) for d in self.delivered),
            *(("pending", p, p.attempts) for p in self.pending),
            *(("dead", letter, letter.attempts) for letter in self.dead_letters),
        ]


@dataclass(frozen=True, slots=True)
class MessageDeliveries:
    message_id: str
    message: TopicMessage | None
    pending: list[PendingDelivery]
    dead_letters: list[DeadLetter]
    delivered: list[Delivered] = field(default_factory=list)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)

    @property
    def topic_name(self) -> str | None:
        if self.message is not None:
            return self.message.topic_name
        if self.dead_letters:
            return self.dead_letters[0].message.topic_name
        return self.delivered[0].topic_name if self.delivered else None

    def known(self) -> bool:
        return bool(self.message or self.pending or self.dead_letters or self.delivered)

    def by_subscription(self) -> list[SubscriptionPushes]:
        """Per subscription that has any push of the message, by name."""
        rows: dict[str, SubscriptionPushes] = {}

        def row(name: str) -> SubscriptionPushes:
            if name not in rows:
                rows[name] = SubscriptionPushes(name, self.subscriptions.get(name))
            return rows[name]

        for delivered in self.delivered:
            row(delivered.subscription_name).delivered.append(delivered)
        for pending in self.pending:
            row(pending.subscription_name).pending.append(pending)
        for letter in self.dead_letters:
            row(letter.subscription.name).dead_letters.append(letter)
        return [rows[name] for name in sorted(rows)]


def _message(conn: Connection, message_id: str) -> TopicMessage | None:
    row = conn.execute(
        "SELECT id AS message_id, topic_name, body, body_md5, publish_time, tag, attributes"
        " FROM topic_messages WHERE id = ?",
        (message_id,),
    ).fetchone()
    return None if row is None else delivery_sql.message_of(row)


def _pending(conn: Connection, message: TopicMessage | None) -> list[PendingDelivery]:
    """A message's pending deliveries: only while the topic keeps it (a claim joins the
    message; the expiry dead-letters what outlived it)."""
    if message is None:
        return []
    rows = conn.execute(
        "SELECT id, subscription_name, next_attempt_at FROM deliveries"
        " WHERE topic_name = ? AND message_id = ? ORDER BY subscription_name",
        (message.topic_name, message.id),
    ).fetchall()
    if not rows:
        return []
    attempts = delivery_sql.attempts_by_delivery(conn, [r["id"] for r in rows])
    return [
        PendingDelivery(
            r["id"],
            r["subscription_name"],
            delivery_sql.due_time(r["next_attempt_at"]),
            attempts.get(r["id"], []),
        )
        for r in rows
    ]


def _subscriptions(
    conn: Connection, topic_name: str | None, names: Sequence[str]
) -> dict[str, Subscription]:
    if topic_name is None or not names:
        return {}
    rows = conn.execute(
        f"SELECT {topic_sql.SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE topic_name = ?"
        f" AND name IN ({placeholders(len(names))})",
        (topic_name, *names),
    ).fetchall()
    return {row["name"]: topic_sql.subscription_of(row) for row in rows}


def message_deliveries(conn: Connection, message_id: str) -> MessageDeliveries:
    message = _message(conn, message_id)
    found = MessageDeliveries(
        message_id,
        message,
        _pending(conn, message),
        dead_letter_sql.of_message(conn, message_id),
        delivered_sql.of_message(conn, message_id),
    )
    names = [row.name for row in found.by_subscription()]
    found.subscriptions.update(_subscriptions(conn, found.topic_name, names))
    return found


def deliver_again(conn: Connection, message_id: str, subscription_name: str, now_ms: int) -> str:
    """A new delivery of a message the topic still keeps, to one of its subscriptions; its id.
    A message already delivered there is pushed once more all the same.

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
