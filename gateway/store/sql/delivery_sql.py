"""Delivery statements: claiming due work under a lease, releasing it, recording outcomes.

A claim sets ``lease_owner`` and ``lease_expires_at``; a worker that dies simply lets the lease
lapse and the delivery becomes claimable again, so a push is made at least once, never zero times.
A claim is one ``UPDATE … RETURNING`` whose own ``WHERE`` re-checks the lease: on a database with
concurrent writers (PostgreSQL, READ COMMITTED) a row another claimer leased in the meantime is
re-read and skipped, never taken twice, and rows being claimed right now are skipped outright
(``FOR UPDATE SKIP LOCKED``), so claimers do not queue behind each other.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Final

from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from gateway.store.sql.connection import Connection, Row, placeholders
from gateway.store.sql.topic_sql import SUBSCRIPTION_COLUMNS, subscription_of
from gateway.topics.records import TopicMessage

JOB_COLUMNS: Final = (
    "d.id AS delivery_id, d.attempts, d.replay_request_id, m.id AS message_id, m.body,"
    " m.body_md5, m.tag, m.attributes, m.publish_time, t.logging_enabled, s.route, "
    + ", ".join(f"s.{column}" for column in SUBSCRIPTION_COLUMNS.split(", "))
)
JOB_JOINS: Final = (
    " JOIN subscriptions s ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
    " JOIN topic_messages m ON m.id = d.message_id JOIN topics t ON t.name = d.topic_name"
)
#: Claimable: due, and not leased or the lease lapsed.
_CLAIMABLE: Final = "next_attempt_at <= ? AND (lease_expires_at IS NULL OR lease_expires_at <= ?)"


def message_of(row: Row) -> TopicMessage:
    return TopicMessage(
        id=row["message_id"],
        topic_name=row["topic_name"],
        body=row["body"],
        body_md5=row["body_md5"],
        publish_time_ms=row["publish_time"],
        tag=row["tag"],
        attributes=json.loads(row["attributes"]),
    )


def job_of(row: Row) -> DeliveryJob:
    return DeliveryJob(
        delivery_id=row["delivery_id"],
        attempts=row["attempts"],
        message=message_of(row),
        subscription=subscription_of(row),
        route=row["route"],
        logging_enabled=bool(row["logging_enabled"]),
        replay_request_id=row["replay_request_id"],
    )


def jobs(conn: Connection, delivery_ids: Sequence[str]) -> list[DeliveryJob]:
    """The deliveries with their messages and subscriptions, earliest due first."""
    rows = conn.execute(
        f"SELECT {JOB_COLUMNS} FROM deliveries d{JOB_JOINS}"
        f" WHERE d.id IN ({placeholders(len(delivery_ids))}) ORDER BY d.next_attempt_at",
        delivery_ids,
    ).fetchall()
    return [job_of(row) for row in rows]


def claim(
    conn: Connection,
    owner: str,
    now_ms: int,
    lease_ms: int,
    limit: int,
    skip_routes: Collection[str] = (),
    skip_subscriptions: Collection[str] = (),
) -> list[DeliveryJob]:
    """Lease up to ``limit`` due deliveries, oldest first, none on a route in ``skip_routes``
    nor of a subscription (``topic/name``) in ``skip_subscriptions``."""
    if limit <= 0:
        return []
    skip, skipped = list(skip_routes), list(skip_subscriptions)
    route_filter = f" AND s.route NOT IN ({placeholders(len(skip))})" if skip else ""
    if skipped:
        route_filter += (
            " AND (d.topic_name || '/' || d.subscription_name)"
            f" NOT IN ({placeholders(len(skipped))})"
        )
    candidates = (
        "SELECT d.id FROM deliveries d JOIN subscriptions s"
        " ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
        " WHERE d.next_attempt_at <= ? AND (d.lease_expires_at IS NULL"
        f" OR d.lease_expires_at <= ?){route_filter} ORDER BY d.next_attempt_at LIMIT ?"
        + conn.dialect.lock_skipping("d")
    )
    claimed = conn.execute(
        "UPDATE deliveries SET lease_owner = ?, lease_expires_at = ?"
        f" WHERE id IN ({candidates}) AND {_CLAIMABLE} RETURNING id",
        (owner, now_ms + lease_ms, now_ms, now_ms, *skip, *skipped, limit, now_ms, now_ms),
    ).fetchall()
    return jobs(conn, [row["id"] for row in claimed]) if claimed else []


def release(conn: Connection, owner: str, delivery_ids: Sequence[str]) -> None:
    """Give back claimed deliveries untouched (their route had no free slot after all)."""
    if delivery_ids:
        conn.execute(
            "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL"
            f" WHERE lease_owner = ? AND id IN ({placeholders(len(delivery_ids))})",
            (owner, *delivery_ids),
        )


def next_due_ms(conn: Connection) -> int | None:
    """When the earliest delivery falls due (leases aside), to sleep exactly until then."""
    row = conn.execute("SELECT MIN(next_attempt_at) AS due FROM deliveries").fetchone()
    return None if row["due"] is None else int(row["due"])


def due_count(conn: Connection, now_ms: int) -> int:
    row = conn.execute(
        "SELECT COUNT(*) AS n FROM deliveries WHERE next_attempt_at <= ?", (now_ms,)
    ).fetchone()
    return int(row["n"])


def complete(conn: Connection, delivery_ids: Sequence[str]) -> None:
    """The pushes succeeded: forget the deliveries and their failed attempts.

    Done whoever holds the lease: if it lapsed and another worker re-sent, the endpoint got the
    message twice, which at-least-once allows; it must not get it a third time.
    """
    if delivery_ids:
        marks = placeholders(len(delivery_ids))
        conn.execute(f"DELETE FROM delivery_attempts WHERE delivery_id IN ({marks})", delivery_ids)
        conn.execute(f"DELETE FROM deliveries WHERE id IN ({marks})", delivery_ids)


def record_attempt(conn: Connection, delivery_id: str, attempt: Attempt) -> None:
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


def attempt_of(row: Row) -> Attempt:
    """A ``delivery_attempts`` row."""
    return Attempt(
        row["attempt"],
        row["attempted_at"],
        row["outcome"],
        row["status_code"],
        row["error"],
        row["latency_ms"],
    )


def attempts_by_delivery(conn: Connection, delivery_ids: Sequence[str]) -> dict[str, list[Attempt]]:
    """The recorded attempts of each of ``delivery_ids`` that has any, in attempt order."""
    if not delivery_ids:
        return {}
    found: dict[str, list[Attempt]] = {}
    for row in conn.execute(
        "SELECT * FROM delivery_attempts"
        f" WHERE delivery_id IN ({placeholders(len(delivery_ids))}) ORDER BY attempt",
        delivery_ids,
    ).fetchall():
        found.setdefault(row["delivery_id"], []).append(attempt_of(row))
    return found


def attempts_of(conn: Connection, delivery_id: str) -> list[Attempt]:
    return attempts_by_delivery(conn, [delivery_id]).get(delivery_id, [])


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
        record_attempt(conn, delivery_id, attempt)
    return bool(updated)


def completed_ids(settlements: Sequence[Settlement]) -> list[str]:
    return [s.job.delivery_id for s in settlements if s.succeeded]
