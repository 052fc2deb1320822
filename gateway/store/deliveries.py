"""Delivery statements: claiming due work under a lease, recording attempts, dead letters.

A claim sets ``lease_owner`` and ``lease_expires_at``; a worker that dies simply lets the lease
lapse and the delivery becomes claimable again, so a push is made at least once, never zero times.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Sequence
from typing import Any

from gateway.model import (
    Attempt,
    DeadLetter,
    DeliveryJob,
    Page,
    Settlement,
    Subscription,
    TopicMessage,
)
from gateway.protocol.errors import MNSError
from gateway.store.topics import _subscription, get_subscription

Connection = Any

_JOB_COLUMNS = (
    "d.id AS delivery_id, d.attempts, s.route, m.id AS message_id, m.body, m.body_md5, m.tag,"
    " m.attributes, m.publish_time, t.logging_enabled, s.*"
)
_JOB_JOINS = (
    " JOIN subscriptions s ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
    " JOIN topic_messages m ON m.id = d.message_id JOIN topics t ON t.name = d.topic_name"
)


def _placeholders(count: int) -> str:
    return ", ".join("?" * count)


def _message(row: Any, prefix: str = "") -> TopicMessage:
    return TopicMessage(
        id=row[f"{prefix}message_id"],
        topic_name=row["topic_name"],
        body=row["body"],
        body_md5=row["body_md5"],
        publish_time_ms=row["publish_time"],
        tag=row["tag"],
        attributes=json.loads(row["attributes"]),
    )


def claim(
    conn: Connection,
    owner: str,
    now_ms: int,
    lease_ms: int,
    limit: int,
    skip_routes: Collection[str] = (),
) -> list[DeliveryJob]:
    """Lease up to ``limit`` due deliveries, oldest first, none on a route in ``skip_routes``."""
    if limit <= 0:
        return []
    skip = list(skip_routes)
    route_filter = f" AND s.route NOT IN ({_placeholders(len(skip))})" if skip else ""
    ids = [
        row[0]
        for row in conn.execute(
            "SELECT d.id FROM deliveries d JOIN subscriptions s"
            " ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
            " WHERE d.next_attempt_at <= ? AND (d.lease_expires_at IS NULL"
            f" OR d.lease_expires_at <= ?){route_filter} ORDER BY d.next_attempt_at LIMIT ?",
            (now_ms, now_ms, *skip, limit),
        ).fetchall()
    ]
    if not ids:
        return []
    marks = _placeholders(len(ids))
    conn.execute(
        f"UPDATE deliveries SET lease_owner = ?, lease_expires_at = ? WHERE id IN ({marks})",
        (owner, now_ms + lease_ms, *ids),
    )
    rows = conn.execute(
        f"SELECT {_JOB_COLUMNS} FROM deliveries d{_JOB_JOINS} WHERE d.id IN ({marks})"
        " ORDER BY d.next_attempt_at",
        ids,
    ).fetchall()
    return [_job(row) for row in rows]


def _job(row: Any) -> DeliveryJob:
    return DeliveryJob(
        delivery_id=row["delivery_id"],
        attempts=row["attempts"],
        message=_message(row),
        subscription=_subscription(row),
        route=row["route"],
        logging_enabled=bool(row["logging_enabled"]),
    )


def release(conn: Connection, owner: str, delivery_ids: Sequence[str]) -> None:
    """Give back claimed deliveries untouched (their route had no free slot after all)."""
    if delivery_ids:
        conn.execute(
            "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL"
            f" WHERE lease_owner = ? AND id IN ({_placeholders(len(delivery_ids))})",
            (owner, *delivery_ids),
        )


def next_due_ms(conn: Connection) -> int | None:
    """When the earliest delivery falls due (leases aside), to sleep exactly until then."""
    row = conn.execute("SELECT MIN(next_attempt_at) FROM deliveries").fetchone()
    return None if row[0] is None else int(row[0])


def due_count(conn: Connection, now_ms: int) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM deliveries WHERE next_attempt_at <= ?", (now_ms,)
    ).fetchone()
    return int(row[0])


def complete(conn: Connection, delivery_ids: Sequence[str]) -> None:
    """The pushes succeeded: forget the deliveries and their failed attempts.

    Done whoever holds the lease: if it lapsed and another worker re-sent, the endpoint got the
    message twice, which at-least-once allows; it must not get it a third time.
    """
    if delivery_ids:
        marks = _placeholders(len(delivery_ids))
        conn.execute(f"DELETE FROM delivery_attempts WHERE delivery_id IN ({marks})", delivery_ids)
        conn.execute(f"DELETE FROM deliveries WHERE id IN ({marks})", delivery_ids)


def _record_attempt(conn: Connection, delivery_id: str, attempt: Attempt) -> None:
    conn.execute(
        "INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, outcome,"
        " error, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            delivery_id,
            attempt.attempt,
            attempt.attempted_at_ms,
            attempt.status_code,
            attempt.outcome,
            attempt.error,
            attempt.latency_ms,
        ),
    )


def retry_later(
    conn: Connection, delivery_id: str, owner: str, attempt: Attempt, next_attempt_at: int
) -> bool:
    """Record a failed attempt and schedule the next; ``False`` if the lease was lost meanwhile."""
    updated = conn.execute(
        "UPDATE deliveries SET attempts = ?, next_attempt_at = ?, lease_owner = NULL,"
        " lease_expires_at = NULL WHERE id = ? AND lease_owner = ?",
        (attempt.attempt, next_attempt_at, delivery_id, owner),
    ).rowcount
    if updated:
        _record_attempt(conn, delivery_id, attempt)
    return bool(updated)


def _succeeded(settlement: Settlement) -> bool:
    return settlement.dead_reason is None and (
        settlement.retry_at_ms is None or settlement.attempt is None
    )


def settle(
    conn: Connection, owner: str, settlements: Sequence[Settlement], now_ms: int
) -> list[str | None]:
    """Apply attempts' outcomes; the dead letter id for each one that made one.

    Successes, the common case, are removed together: two statements for the whole batch.
    """
    complete(conn, [s.job.delivery_id for s in settlements if _succeeded(s)])
    return [None if _succeeded(s) else _settle_failure(conn, owner, s, now_ms) for s in settlements]


def _settle_failure(
    conn: Connection, owner: str, settlement: Settlement, now_ms: int
) -> str | None:
    job = settlement.job
    if settlement.dead_reason is not None:
        return dead_letter(conn, job, settlement.attempt, settlement.dead_reason, now_ms)
    assert settlement.retry_at_ms is not None and settlement.attempt is not None
    retry_later(conn, job.delivery_id, owner, settlement.attempt, settlement.retry_at_ms)
    return None


def _attempts(conn: Connection, delivery_id: str) -> list[Attempt]:
    rows = conn.execute(
        "SELECT * FROM delivery_attempts WHERE delivery_id = ? ORDER BY attempt", (delivery_id,)
    ).fetchall()
    return [
        Attempt(
            r["attempt"],
            r["attempted_at"],
            r["outcome"],
            r["status_code"],
            r["error"],
            r["latency_ms"],
        )
        for r in rows
    ]


def dead_letter(
    conn: Connection, job: DeliveryJob, attempt: Attempt | None, reason: str, now_ms: int
) -> str | None:
    """Move a delivery to the dead letters with its whole history; ``None`` if already gone."""
    if attempt is not None:
        _record_attempt(conn, job.delivery_id, attempt)
    exists = conn.execute("SELECT 1 FROM deliveries WHERE id = ?", (job.delivery_id,)).fetchone()
    if exists is None:
        return None
    history = [attempt_fields(a) for a in _attempts(conn, job.delivery_id)]
    letter_id = f"{now_ms:013d}-{uuid.uuid4().hex[:12]}"
    m, s = job.message, job.subscription
    conn.execute(
        "INSERT INTO dead_letters (id, message_id, topic_name, subscription_name, endpoint,"
        " notify_strategy, notify_content_format, body, body_md5, tag, attributes, publish_time,"
        " attempts, reason, dead_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            letter_id,
            m.id,
            m.topic_name,
            s.name,
            s.endpoint,
            s.notify_strategy,
            s.notify_content_format,
            m.body,
            m.body_md5,
            m.tag,
            json.dumps(m.attributes),
            m.publish_time_ms,
            json.dumps(history),
            reason,
            now_ms,
        ),
    )
    complete(conn, [job.delivery_id])
    return letter_id


def attempt_fields(attempt: Attempt) -> dict[str, Any]:
    return {
        "attempt": attempt.attempt,
        "attempted_at_ms": attempt.attempted_at_ms,
        "outcome": attempt.outcome,
        "status_code": attempt.status_code,
        "error": attempt.error,
        "latency_ms": attempt.latency_ms,
    }


def _dead_letter(row: Any) -> DeadLetter:
    subscription = _subscription_from_letter(row)
    return DeadLetter(
        id=row["id"],
        message=_message(row),
        subscription=subscription,
        attempts=[Attempt(**a) for a in json.loads(row["attempts"])],
        reason=row["reason"],
        dead_at_ms=row["dead_at"],
        replayed_at_ms=row["replayed_at"],
    )


def _subscription_from_letter(row: Any) -> Subscription:
    return Subscription(
        topic_name=row["topic_name"],
        name=row["subscription_name"],
        endpoint=row["endpoint"],
        notify_strategy=row["notify_strategy"],
        notify_content_format=row["notify_content_format"],
    )


def list_dead_letters(
    conn: Connection, marker: str, limit: int, topic_name: str | None = None
) -> Page[DeadLetter]:
    """Dead letters oldest first; ids start with the time of death, so paging by id is stable."""
    topic_filter = " AND topic_name = ?" if topic_name else ""
    params: Sequence[Any] = (marker, topic_name, limit + 1) if topic_name else (marker, limit + 1)
    rows = conn.execute(
        f"SELECT * FROM dead_letters WHERE id >= ?{topic_filter} ORDER BY id LIMIT ?",
        params,
    ).fetchall()
    next_marker = rows[limit]["id"] if len(rows) > limit else None
    return Page([_dead_letter(r) for r in rows[:limit]], next_marker)


def get_dead_letter(conn: Connection, letter_id: str) -> DeadLetter:
    row = conn.execute("SELECT * FROM dead_letters WHERE id = ?", (letter_id,)).fetchone()
    if row is None:
        raise MNSError("DeadLetterNotExist")
    return _dead_letter(row)


def replay(conn: Connection, letter_id: str, now_ms: int) -> str:
    """Queue the dead letter's message again for its subscription, with the same MessageId."""
    letter = get_dead_letter(conn, letter_id)
    m = letter.message
    if get_subscription(conn, m.topic_name, letter.subscription.name) is None:
        raise MNSError("SubscriptionNotExist")
    conn.execute(
        "INSERT INTO topic_messages (id, topic_name, body, body_md5, tag, attributes, publish_time,"
        " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            m.id,
            m.topic_name,
            m.body,
            m.body_md5,
            m.tag,
            json.dumps(m.attributes),
            m.publish_time_ms,
            now_ms + 86_400_000,
        ),
    )
    conn.execute(
        "UPDATE topic_messages SET expires_at = ? WHERE id = ? AND expires_at < ?",
        (now_ms + 86_400_000, m.id, now_ms + 86_400_000),
    )
    delivery_id = uuid.uuid4().hex
    conn.execute(
        "INSERT INTO deliveries (id, message_id, topic_name, subscription_name, attempts,"
        " next_attempt_at, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
        (delivery_id, m.id, m.topic_name, letter.subscription.name, now_ms, now_ms),
    )
    conn.execute("UPDATE dead_letters SET replayed_at = ? WHERE id = ?", (now_ms, letter_id))
    return delivery_id


def expired_jobs(conn: Connection, now_ms: int, limit: int) -> list[DeliveryJob]:
    """Deliveries whose message outlived the topic's retention (one day) before any success."""
    rows = conn.execute(
        f"SELECT {_JOB_COLUMNS} FROM deliveries d{_JOB_JOINS} WHERE m.expires_at <= ? LIMIT ?",
        (now_ms, limit),
    ).fetchall()
    return [_job(row) for row in rows]


def purge_expired_messages(conn: Connection, now_ms: int) -> int:
    """Drop messages past retention that no delivery still needs."""
    # NOT IN over the subquery reads the deliveries once (there is no index on message_id).
    return conn.execute(
        "DELETE FROM topic_messages WHERE expires_at <= ?"
        " AND id NOT IN (SELECT message_id FROM deliveries)",
        (now_ms,),
    ).rowcount
