"""Dead-letter statements: moving a delivery and its history aside, listing, replaying; and the
daily expiry of deliveries whose message outlived the topic's retention."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from gateway.delivery.records import Attempt, DeadLetter, DeliveryJob, Filed
from gateway.errors.mns import MNSError
from gateway.protocol.listing import Page
from gateway.store.sql import delivery_sql, topic_sql
from gateway.store.sql.connection import Connection, Row
from gateway.topics.records import TOPIC_MESSAGE_RETENTION_SECONDS, Subscription

_RETENTION_MS = TOPIC_MESSAGE_RETENTION_SECONDS * 1000


#: Puts a dead letter's message into its subscription's dead-letter queue, in the same
#: transaction; the queue and the new MessageId (``None`` when the queue refused it).
Forward = Callable[[Connection, DeliveryJob], tuple[str, str | None]]


def dead_letter(
    conn: Connection,
    job: DeliveryJob,
    attempt: Attempt | None,
    reason: str,
    now_ms: int,
    forward: Forward | None = None,
) -> Filed | None:
    """Move a delivery to the dead letters with its whole history, and (``forward``) its message
    into the subscription's dead-letter queue; ``None`` if the delivery was already gone."""
    if attempt is not None:
        delivery_sql.record_attempt(conn, job.delivery_id, attempt)
    exists = conn.execute("SELECT id FROM deliveries WHERE id = ?", (job.delivery_id,)).fetchone()
    if exists is None:
        return None
    queue, queue_message_id = None, None
    if forward is not None and job.subscription.dead_letter_queue:
        queue, queue_message_id = forward(conn, job)
    history = [a.fields() for a in delivery_sql.attempts_of(conn, job.delivery_id)]
    letter_id = f"{now_ms:013d}-{uuid.uuid4().hex[:12]}"
    m, s = job.message, job.subscription
    conn.execute(
        "INSERT INTO dead_letters (id, message_id, topic_name, subscription_name, endpoint,"
        " notify_strategy, notify_content_format, body, body_md5, tag, attributes, publish_time,"
        " attempts, reason, dead_at, dlq_queue, dlq_message_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            letter_id,
            m.id,
            m.topic_name,
            s.name,
            s.endpoint,
            s.notify_strategy.value,
            s.notify_content_format.value,
            m.body,
            m.body_md5,
            m.tag,
            json.dumps(m.attributes),
            m.publish_time_ms,
            json.dumps(history),
            reason,
            now_ms,
            queue,
            queue_message_id,
        ),
    )
    delivery_sql.complete(conn, [job.delivery_id])
    return Filed(letter_id, queue, queue_message_id)


def _letter(row: Row) -> DeadLetter:
    subscription = Subscription(
        topic_name=row["topic_name"],
        name=row["subscription_name"],
        endpoint=row["endpoint"],
        notify_strategy=topic_sql.STRATEGIES[row["notify_strategy"]],
        notify_content_format=topic_sql.FORMATS[row["notify_content_format"]],
    )
    return DeadLetter(
        id=row["id"],
        message=delivery_sql.message_of(row),
        subscription=subscription,
        attempts=[Attempt(**a) for a in json.loads(row["attempts"])],
        reason=row["reason"],
        dead_at_ms=row["dead_at"],
        replayed_at_ms=row["replayed_at"],
        dead_letter_queue=row["dlq_queue"],
        dead_letter_queue_message_id=row["dlq_message_id"],
    )


def list_dead_letters(
    conn: Connection,
    marker: str,
    limit: int,
    topic_name: str | None = None,
    *,
    subscription_name: str | None = None,
    since_ms: int | None = None,
) -> Page[DeadLetter]:
    """Dead letters oldest first; ids start with the time of death, so paging by id is stable.
    Optionally only a topic's, a subscription's (by name), or those dead since ``since_ms``."""
    filters = ""
    params: list[Any] = [marker]
    for column, value in (
        ("topic_name = ?", topic_name),
        ("subscription_name = ?", subscription_name),
        ("dead_at >= ?", since_ms),
    ):
        if value is not None and value != "":
            filters += f" AND {column}"
            params.append(value)
    rows = conn.execute(
        f"SELECT * FROM dead_letters WHERE id >= ?{filters} ORDER BY id LIMIT ?",
        (*params, limit + 1),
    ).fetchall()
    next_marker = rows[limit]["id"] if len(rows) > limit else None
    return Page([_letter(r) for r in rows[:limit]], next_marker)


def get_dead_letter(conn: Connection, letter_id: str) -> DeadLetter:
    row = conn.execute("SELECT * FROM dead_letters WHERE id = ?", (letter_id,)).fetchone()
    if row is None:
        raise MNSError("DeadLetterNotExist")
    return _letter(row)


def of_message(conn: Connection, message_id: str) -> list[DeadLetter]:
    """The dead letters a message became (index ``dead_letters_message``), oldest first."""
    rows = conn.execute(
        "SELECT * FROM dead_letters WHERE message_id = ? ORDER BY id", (message_id,)
    ).fetchall()
    return [_letter(r) for r in rows]


def replay(
    conn: Connection, letter_id: str, now_ms: int, request_id: str, if_replayed_at: int | None
) -> str:
    """Queue the dead letter's message again for its subscription, with the same MessageId and
    a new day of retention; the delivery keeps ``request_id`` for the worker's ``Replay`` record.

    ``if_replayed_at`` guards against a second delivery chain nobody meant: 0 replays only a
    letter never replayed, a time only a letter whose last replay is still that one (the web
    console's page), ``None`` unconditionally (``--force``). Anything else is
    ``DeadLetterAlreadyReplayed``. The guard is one conditional UPDATE, so two replays racing on
    different replicas start one chain.
    """
    if if_replayed_at is not None:
        claimed = conn.execute(
            "UPDATE dead_letters SET replayed_at = ? WHERE id = ? AND COALESCE(replayed_at, 0) = ?",
            (now_ms, letter_id, if_replayed_at),
        ).rowcount
        if not claimed:
            get_dead_letter(conn, letter_id)  # DeadLetterNotExist when it is gone
            raise MNSError("DeadLetterAlreadyReplayed")
    letter = get_dead_letter(conn, letter_id)
    m = letter.message
    if topic_sql.get_subscription(conn, m.topic_name, letter.subscription.name) is None:
        raise MNSError("SubscriptionNotExist")
    expires = now_ms + _RETENTION_MS
    topic_sql.insert_message(conn, m, expires, if_absent=True)
    conn.execute(
        "UPDATE topic_messages SET expires_at = ? WHERE id = ? AND expires_at < ?",
        (expires, m.id, expires),
    )
    (delivery_id,) = topic_sql.insert_deliveries(
        conn, m.id, m.topic_name, [letter.subscription.name], now_ms
    )
    conn.execute(
        "UPDATE deliveries SET replay_request_id = ? WHERE id = ?", (request_id, delivery_id)
    )
    conn.execute("UPDATE dead_letters SET replayed_at = ? WHERE id = ?", (now_ms, letter_id))
    return delivery_id


def expired_jobs(conn: Connection, now_ms: int, limit: int) -> list[DeliveryJob]:
    """Deliveries whose message outlived the topic's retention (one day) before any success."""
    rows = conn.execute(
        f"SELECT {delivery_sql.JOB_COLUMNS} FROM deliveries d{delivery_sql.JOB_JOINS}"
        " WHERE m.expires_at <= ? LIMIT ?",
        (now_ms, limit),
    ).fetchall()
    return delivery_sql.jobs_of(rows)


def purge_orphans(conn: Connection, now_ms: int) -> int:
    """Drop deliveries past retention whose subscription is gone: a publish that read the
    subscription just before a concurrent Unsubscribe (or DeleteTopic) committed, on a database
    with concurrent writers, can leave one that no claim would ever find."""
    return conn.execute(
        "DELETE FROM deliveries WHERE created_at <= ? AND NOT EXISTS (SELECT 1 FROM"
        " subscriptions s WHERE s.topic_name = deliveries.topic_name"
        " AND s.name = deliveries.subscription_name)",
        (now_ms - _RETENTION_MS,),
    ).rowcount
