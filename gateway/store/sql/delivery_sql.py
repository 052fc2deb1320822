"""Delivery statements: claiming due work under a lease, releasing it, recording outcomes.

A claim sets ``lease_owner`` and ``lease_expires_at``; a worker that dies simply lets the lease
lapse and the delivery becomes claimable again, so a push is made at least once, never zero times.
A claim is one statement: its candidates, read once, then an ``UPDATE … RETURNING`` of those (on
PostgreSQL the same statement reads their messages and subscriptions; on SQLite a second). On a
database with concurrent writers (PostgreSQL, READ COMMITTED) the candidates are locked as they
are read, rows being claimed right now skipped outright (``FOR UPDATE SKIP LOCKED``) so that
claimers do not queue behind each other; a row another claimer leased in the meantime is read
again in its newest version as it is locked, and dropped, since the conditions that make it
claimable are on the locked row itself. So none is taken twice.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Final

from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from gateway.store.sql.connection import Connection, Row, placeholders
from gateway.store.sql.control_sql import resource_column
from gateway.store.sql.push_limit_sql import LIMITED
from gateway.store.sql.topic_sql import SUBSCRIPTION_COLUMNS, subscription_of
from gateway.store.sql.webhook_secret_sql import SECRET_COLUMNS, secrets_of
from gateway.topics.records import Subscription, TopicMessage

JOB_COLUMNS: Final = (
    "d.id AS delivery_id, d.attempts, d.replay_request_id, m.id AS message_id, m.body,"
    " m.body_md5, m.tag, m.attributes, m.publish_time, t.logging_enabled, s.route, "
    + ", ".join(f"s.{column}" for column in SUBSCRIPTION_COLUMNS.split(", "))
    + f", {SECRET_COLUMNS}, {LIMITED}"
)
JOB_JOINS: Final = (
    " JOIN subscriptions s ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
    " JOIN topic_messages m ON m.id = d.message_id JOIN topics t ON t.name = d.topic_name"
)


def _claimable(alias: str = "") -> str:
    """Claimable: due, and not leased or the lease lapsed (of the row ``alias`` names, if any).
    Its two parameters are the time now, twice."""
    column = f"{alias}." if alias else ""
    return (
        f"{column}next_attempt_at <= ? AND ({column}lease_expires_at IS NULL"
        f" OR {column}lease_expires_at <= ?)"
    )


#: A delivery is claimable (columns unqualified).
CLAIMABLE: Final = _claimable()
#: Added to a held delivery's ``next_attempt_at`` (its endpoint's circuit is open,
#: docs/delivery.md#endpoint-health): out of the due range, behind every due time, so that a
#: claim's walk of ``deliveries_due`` from the front never reads it, rather than walking past
#: the held backlog on every claim (docs/benchmarks.md#endpoint-health). Every held delivery
#: moves by the same amount, so their order stays, and taking it off gives each its due time
#: back exactly. 2**52 ms is 142,000 years past any due time, and the sum is far below BIGINT's
#: limit.
HELD_OFFSET_MS: Final = 1 << 52


def due_time(stored: int) -> int:
    """A delivery's due time, held or not."""
    return stored - HELD_OFFSET_MS if stored >= HELD_OFFSET_MS else stored


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


def jobs_of(rows: Sequence[Row]) -> list[DeliveryJob]:
    """The jobs of ``rows`` read in one statement: rows of one message share one
    ``TopicMessage`` and rows of one subscription one ``Subscription`` (both immutable), since
    at fan-out 10 a claim carries each message ten times."""
    messages: dict[str, TopicMessage] = {}
    subscriptions: dict[tuple[str, str], Subscription] = {}
    made = []
    for row in rows:
        message = messages.get(row["message_id"])
        if message is None:
            message = messages[row["message_id"]] = message_of(row)
        key = (row["topic_name"], row["name"])
        subscription = subscriptions.get(key)
        if subscription is None:
            subscription = subscriptions[key] = subscription_of(row)
        made.append(_job(row, message, subscription))
    return made


def _job(row: Row, message: TopicMessage, subscription: Subscription) -> DeliveryJob:
    return DeliveryJob(
        delivery_id=row["delivery_id"],
        attempts=row["attempts"],
        message=message,
        subscription=subscription,
        route=row["route"],
        logging_enabled=bool(row["logging_enabled"]),
        replay_request_id=row["replay_request_id"],
        standard_webhooks=secrets_of(row),
        rate_limited=bool(row["rate_limited"]),
    )


def jobs(conn: Connection, delivery_ids: Sequence[str]) -> list[DeliveryJob]:
    """The deliveries with their messages and subscriptions, earliest due first."""
    rows = conn.execute(
        f"SELECT {JOB_COLUMNS} FROM deliveries d{JOB_JOINS}"
        f" WHERE d.id IN ({placeholders(len(delivery_ids))}) ORDER BY d.next_attempt_at",
        delivery_ids,
    ).fetchall()
    return jobs_of(rows)


def claim(
    conn: Connection,
    owner: str,
    now_ms: int,
    lease_ms: int,
    limit: int,
    skip_routes: Collection[str] = (),
    skip_subscriptions: Collection[str] = (),
    held: Collection[str] = (),
) -> list[DeliveryJob]:
    """Lease up to ``limit`` due deliveries, oldest first, none on a route in ``skip_routes``
    nor of a subscription (``topic/name``) in ``skip_subscriptions`` or ``held``.

    ``held``: subscriptions whose due deliveries this transaction has just held
    (:func:`gateway.store.sql.held_sql.hold`),
    so that none is in the due range for a claim to walk past; left out all the same, in case
    one fell due since. Those of the others are, and a claim that leaves them out reads the
    other subscriptions one by one (:func:`_due_per_subscription`)."""
    if limit <= 0:
        return []
    if skip_routes or skip_subscriptions:
        candidates, parameters = _due_per_subscription(
            conn, now_ms, limit, list(skip_routes), [*skip_subscriptions, *held]
        )
    else:
        candidates, parameters = _due_in_order(conn, now_ms, limit, list(held))
    # The candidates are read once (a materialized CTE is, whatever the plan), and the update
    # takes what they locked by id. Written ``id IN (candidates) AND <claimable>``, PostgreSQL
    # may drive the update from the due range and read the candidates again for each due
    # delivery, when its statistics say almost nothing is due (gathered while a backlog was
    # held, its due times past 2**52): each reading skips what the earlier ones leased, so one
    # claim leases a whole backlog, past ``limit`` (docs/benchmarks.md#endpoint-health).
    picked = f"WITH picked AS MATERIALIZED ({candidates})"
    lease = (
        "UPDATE deliveries SET lease_owner = ?, lease_expires_at = ?"
        " WHERE id IN (SELECT id FROM picked) RETURNING"
    )
    parameters = (*parameters, owner, now_ms + lease_ms)
    if conn.dialect.writable_cte:
        # The leased rows come back with their messages and subscriptions in the same
        # statement: one wait for the server per claim, not two.
        rows = conn.execute(
            f"{picked}, claimed AS ({lease} *)"
            f" SELECT {JOB_COLUMNS} FROM claimed d{JOB_JOINS} ORDER BY d.next_attempt_at",
            parameters,
        ).fetchall()
        return jobs_of(rows)
    claimed = conn.execute(f"{picked} {lease} id", parameters).fetchall()
    return jobs(conn, [row["id"] for row in claimed]) if claimed else []


#: A delivery ``d`` is claimable.
_CLAIMABLE_D: Final = _claimable("d")
#: The earliest due deliveries, from the front of ``deliveries_due`` (``{held}``: a filter).
_DUE: Final = (
    "SELECT d.id FROM deliveries d JOIN subscriptions s"
    " ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
    f" WHERE {_CLAIMABLE_D}{{held}} ORDER BY d.next_attempt_at LIMIT ?"
)
#: A subscription's (``s``) earliest due deliveries (their ``{columns}``), from its range of
#: ``deliveries_subscription_due``.
_DUE_OF_SUBSCRIPTION: Final = (
    "SELECT {columns} FROM deliveries x WHERE x.topic_name = s.topic_name"
    f" AND x.subscription_name = s.name AND {_claimable('x')} ORDER BY x.next_attempt_at LIMIT ?"
)


def _due_in_order(
    conn: Connection, now_ms: int, limit: int, held: list[str]
) -> tuple[str, tuple[object, ...]]:
    """The earliest ``limit`` due deliveries, none of ``held``, read in due order."""
    names = f"{resource_column('d.topic_name', 'd.subscription_name')} NOT IN"
    names += f" ({placeholders(len(held))})"
    picked = _DUE.format(held=f" AND {names}" if held else "")
    return picked + conn.dialect.lock_skipping("d"), (now_ms, now_ms, *held, limit)


def _due_per_subscription(
    conn: Connection,
    now_ms: int,
    limit: int,
    skip_routes: list[str],
    skip_subscriptions: list[str],
) -> tuple[str, tuple[object, ...]]:
    """The earliest ``limit`` due deliveries of the subscriptions not skipped: each one's first
    ``limit`` from its own index range, then the earliest of those. A skipped route's due
    backlog is never read. Read in due order from ``deliveries_due`` instead, a claim would walk
    past all of it: the backlog of a full route (or of a failing one, until its breaker holds
    it) sits at the front of the due order, as everything due after it is taken
    (docs/benchmarks.md#endpoint-health, ``bench/claim_behind_held.py --skipped``). The price is
    an index probe per subscription not skipped, and up to ``limit`` rows from each, so a claim
    that skips nothing reads the due order."""
    # Claimable on ``d``, the row locked, too: its newest version is what the lock reads again
    # (the lateral read of ``x`` is not locked, and saw the row as the statement began).
    conditions = [_CLAIMABLE_D]
    if skip_routes:
        conditions.append(f"s.route NOT IN ({placeholders(len(skip_routes))})")
    if skip_subscriptions:
        names = placeholders(len(skip_subscriptions))
        conditions.append(f"{resource_column('s.topic_name', 's.name')} NOT IN ({names})")
    where = " WHERE " + " AND ".join(conditions)
    if conn.dialect.lateral_join:
        picked = (
            "SELECT d.id FROM subscriptions s CROSS JOIN LATERAL"
            f" ({_DUE_OF_SUBSCRIPTION.format(columns='x.id, x.next_attempt_at')}) c"
            f" JOIN deliveries d ON d.id = c.id{where} ORDER BY c.next_attempt_at LIMIT ?"
        )
    else:  # a correlated subquery, re-run per subscription, stands in for the lateral join
        picked = (
            "SELECT d.id FROM subscriptions s JOIN deliveries d"
            f" ON d.id IN ({_DUE_OF_SUBSCRIPTION.format(columns='x.id')})"
            f"{where} ORDER BY d.next_attempt_at LIMIT ?"
        )
    parameters = (now_ms, now_ms, limit, now_ms, now_ms, *skip_routes, *skip_subscriptions, limit)
    return picked + conn.dialect.lock_skipping("d"), parameters


def release(conn: Connection, owner: str, delivery_ids: Sequence[str]) -> None:
    """Give back claimed deliveries untouched (their route had no free slot after all)."""
    if delivery_ids:
        conn.execute(
            "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL"
            f" WHERE lease_owner = ? AND id IN ({placeholders(len(delivery_ids))})",
            (owner, *delivery_ids),
        )


def next_due_ms(conn: Connection) -> int | None:
    """When the earliest delivery falls due (leases aside; a held one at its own due time), to
    sleep exactly until then. Two probes of ``deliveries_due``: either end of the held range."""
    row = conn.execute(
        "SELECT (SELECT MIN(next_attempt_at) FROM deliveries WHERE next_attempt_at < ?) AS due,"
        " (SELECT MIN(next_attempt_at) FROM deliveries WHERE next_attempt_at >= ?) AS held",
        (HELD_OFFSET_MS, HELD_OFFSET_MS),
    ).fetchone()
    times = [int(row["due"])] if row["due"] is not None else []
    times += [due_time(int(row["held"]))] if row["held"] is not None else []
    return min(times, default=None)


def due_count(conn: Connection, now_ms: int) -> int:
    """Deliveries due now, held ones (their circuit open) included."""
    row = conn.execute(
        "SELECT COUNT(*) AS n FROM deliveries WHERE next_attempt_at <= ? OR next_attempt_at >= ?",
        (now_ms, HELD_OFFSET_MS),
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
            attempt.outcome.value,
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


#: A batch's failed attempts on PostgreSQL, in one statement: the deliveries whose lease
#: ``owner`` still holds rescheduled, and only their attempts recorded. The batch comes as one
#: array a column, so the statement is the same whatever the batch's size.
_RETRY_ALL: Final = (
    "WITH batch AS (SELECT * FROM unnest(?::text[], ?::integer[], ?::bigint[], ?::bigint[],"
    " ?::integer[], ?::text[], ?::text[], ?::double precision[]) AS v (id, attempt,"
    " next_attempt_at, attempted_at, status_code, outcome, error, latency_ms)),"
    " retried AS (UPDATE deliveries d SET attempts = batch.attempt,"
    " next_attempt_at = batch.next_attempt_at, lease_owner = NULL, lease_expires_at = NULL"
    " FROM batch WHERE d.id = batch.id AND d.lease_owner = ? RETURNING d.id),"
    " recorded AS (INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at,"
    " status_code, outcome, error, latency_ms) SELECT id, attempt, attempted_at, status_code,"
    " outcome, error, latency_ms FROM batch WHERE id IN (SELECT id FROM retried)"
    " ON CONFLICT DO NOTHING)"
    " SELECT id FROM retried"
)


def retry_all_later(
    conn: Connection, owner: str, retries: Sequence[tuple[str, Attempt, int]]
) -> set[str]:
    """Record failed attempts and schedule the next: each of ``retries`` is a delivery, its
    attempt and when to try again. Only deliveries whose lease ``owner`` still holds; those
    done, the ids. On PostgreSQL one statement for the batch (a failed push cost two and a
    wait for the server each: docs/benchmarks.md#a-settles-failures-in-one-statement)."""
    if not retries:
        return set()
    if not conn.dialect.writable_cte:
        return {d for d, attempt, at in retries if _retry_later(conn, d, owner, attempt, at)}
    attempts = [attempt for _, attempt, _ in retries]
    columns = (
        [delivery_id for delivery_id, _, _ in retries],
        [a.attempt for a in attempts],
        [next_attempt_at for _, _, next_attempt_at in retries],
        [a.attempted_at_ms for a in attempts],
        [a.status_code for a in attempts],
        [a.outcome.value for a in attempts],
        [a.error for a in attempts],
        [a.latency_ms for a in attempts],
    )
    rows = conn.execute(_RETRY_ALL, (*columns, owner)).fetchall()
    return {row["id"] for row in rows}


def _retry_later(
    conn: Connection, delivery_id: str, owner: str, attempt: Attempt, next_attempt_at: int
) -> bool:
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
