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
from collections.abc import Collection, Mapping, Sequence
from typing import Final

from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from gateway.store.sql.connection import Connection, Row, placeholders
from gateway.store.sql.control_sql import resource_column
from gateway.store.sql.topic_sql import SUBSCRIPTION_COLUMNS, subscription_of
from gateway.topics.records import TopicMessage, subscription_names, subscription_resource

JOB_COLUMNS: Final = (
    "d.id AS delivery_id, d.attempts, d.replay_request_id, m.id AS message_id, m.body,"
    " m.body_md5, m.tag, m.attributes, m.publish_time, t.logging_enabled, s.route, "
    + ", ".join(f"s.{column}" for column in SUBSCRIPTION_COLUMNS.split(", "))
)
JOB_JOINS: Final = (
    " JOIN subscriptions s ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
    " JOIN topic_messages m ON m.id = d.message_id JOIN topics t ON t.name = d.topic_name"
)
#: Not leased, or the lease lapsed.
_UNLEASED: Final = "(lease_expires_at IS NULL OR lease_expires_at <= ?)"
#: Claimable: due, and not leased or the lease lapsed.
_CLAIMABLE: Final = f"next_attempt_at <= ? AND {_UNLEASED}"
#: Added to a held delivery's ``next_attempt_at`` (its endpoint's circuit is open,
#: docs/delivery.md#endpoint-health): out of the due range, behind every due time, so that a
#: claim's walk of ``deliveries_due`` from the front never reads it. The claim walked past a held
#: backlog on every claim before (bench/claim_behind_held.py: a claim of 64 cost 2.7 times the CPU
#: behind 10,000 held deliveries on SQLite). Every held delivery moves by the same amount, so
#: their order stays, and taking it off gives each its due time back exactly. 2**52 ms is
#: 142,000 years past any due time, and the sum is far below BIGINT's limit.
HELD_OFFSET_MS: Final = 1 << 52


def due_time(stored: int) -> int:
    """A delivery's due time, held or not."""
    return stored - HELD_OFFSET_MS if stored >= HELD_OFFSET_MS else stored


#: Deliveries one statement of a hold reads and moves.
HOLD_BATCH: Final = 500
#: Batches one claim's hold moves at most per subscription (what publishes add faster than
#: that waits for the next claim; the claim leaves it out all the same).
_HOLD_BATCHES: Final = 100


def hold(conn: Connection, resources: Collection[str], now_ms: int) -> int:
    """Move the due, unleased deliveries of the subscriptions ``resources`` (``topic/name``)
    out of the due range (:data:`HELD_OFFSET_MS`); how many. A delivery leased now (a probe, a
    push in flight) is left to its outcome.

    Each batch is found by an ordered read of the subscription's own range of
    ``deliveries_subscription_due`` (:func:`_first_of`), then moved by id, so a subscription
    with nothing new to hold (every claim while its circuit stays open) costs one short index
    read. A claim holds before it takes any breaker's lock, so it never waits for a row while
    holding one (a settle locks its rows, then the breaker, then gives back held rows)."""
    moved = 0
    for resource in sorted(resources):
        names = subscription_names(resource)
        where = f"topic_name = ? AND subscription_name = ? AND next_attempt_at <= ? AND {_UNLEASED}"
        for _ in range(_HOLD_BATCHES):
            ids = _first_of(conn, where, (*names, now_ms, now_ms), HOLD_BATCH)
            if ids:
                moved += _move(conn, ids, now_ms)
            if len(ids) < HOLD_BATCH:
                break
    return moved


def _move(conn: Connection, delivery_ids: Sequence[str], now_ms: int) -> int:
    """Hold the deliveries ``delivery_ids`` just read, each still due and unleased: on
    PostgreSQL another replica's claim may have leased one since, and the ``WHERE`` is checked
    again on the row it waited for."""
    return conn.execute(
        "UPDATE deliveries SET next_attempt_at = next_attempt_at + ?"
        f" WHERE id IN ({placeholders(len(delivery_ids))}) AND next_attempt_at <= ?"
        f" AND {_UNLEASED}",
        (HELD_OFFSET_MS, *delivery_ids, now_ms, now_ms),
    ).rowcount


def unhold(conn: Connection, resources: Collection[str]) -> int:
    """Give the held deliveries of ``resources`` their due times back (in their order, due as
    early as they were, ahead of what was published since); how many. Called with the breaker
    of each locked (:func:`gateway.store.sql.breaker_sql.breakers`), so that a claim and a
    settle giving back the same subscription's rows take their locks in one order. One
    ``UPDATE`` per subscription: it is called when a breaker lets probes out or closes, not on
    every claim, and then it moves a whole backlog."""
    moved = 0
    for resource in sorted(resources):
        moved += conn.execute(
            "UPDATE deliveries SET next_attempt_at = next_attempt_at - ?"
            " WHERE topic_name = ? AND subscription_name = ? AND next_attempt_at >= ?",
            (HELD_OFFSET_MS, *subscription_names(resource), HELD_OFFSET_MS),
        ).rowcount
    return moved


def give_back(conn: Connection, counts: Mapping[str, int | None]) -> int:
    """Give back the earliest ``counts[resource]`` held deliveries of each subscription (what
    its breaker lets out: :func:`gateway.delivery.breaker.admissible`; ``None``: all of them,
    :func:`unhold`), their due times as they were; how many. The rest stay held: giving back
    the whole backlog for a probe's turn moved every held delivery out and, once the probe was
    out, in again (20,000 rows a turn behind 10,000 held, bench/endpoint_health.py). Called,
    like :func:`unhold`, with each breaker locked."""
    moved = unhold(conn, [r for r, count in counts.items() if count is None])
    where = "topic_name = ? AND subscription_name = ? AND next_attempt_at >= ?"
    for resource, count in sorted(counts.items()):
        names = subscription_names(resource)
        if count and (ids := _first_of(conn, where, (*names, HELD_OFFSET_MS), count)):
            moved += conn.execute(
                "UPDATE deliveries SET next_attempt_at = next_attempt_at - ?"
                f" WHERE id IN ({placeholders(len(ids))}) AND next_attempt_at >= ?",
                (HELD_OFFSET_MS, *ids, HELD_OFFSET_MS),
            ).rowcount
    return moved


def _first_of(
    conn: Connection, where: str, parameters: tuple[object, ...], limit: int
) -> list[str]:
    """The ids of the first ``limit`` deliveries of one subscription meeting ``where``, read in
    order from its range of ``deliveries_subscription_due``.

    The order and the ``LIMIT`` make PostgreSQL start that read where the range starts and stop
    it where the range ends. A hold's single ``UPDATE … WHERE`` did neither: with a plain
    bound its generic plan read every due delivery through ``deliveries_due``
    (docs/benchmarks.md#endpoint-health); with a row comparison
    ``(topic_name, subscription_name, next_attempt_at) <= (…)``, which bounds a scan by its
    first column only, it read on through every held delivery of the subscription. That was
    0.7-1 ms behind 10,000 held on every claim while a circuit stayed open, the largest part of
    the database's extra work beside it (bench/endpoint_health.py with pg_stat_statements); this
    read finds nothing in 0.03 ms. ``limit`` goes into the text, not a parameter: a generic
    plan costs ``LIMIT $n`` as a tenth of the rows it may read."""
    rows = conn.execute(
        f"SELECT id FROM deliveries WHERE {where}"
        f" ORDER BY topic_name, subscription_name, next_attempt_at LIMIT {int(limit)}",
        parameters,
    ).fetchall()
    return [row["id"] for row in rows]


def holding(conn: Connection) -> set[str]:
    """The subscriptions (``topic/name``) with held deliveries (reads every held delivery: for
    the expiry's check once a minute, not for claims)."""
    rows = conn.execute(
        "SELECT DISTINCT topic_name, subscription_name FROM deliveries WHERE next_attempt_at >= ?",
        (HELD_OFFSET_MS,),
    ).fetchall()
    return {subscription_resource(row["topic_name"], row["subscription_name"]) for row in rows}


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
    held: Collection[str] = (),
) -> list[DeliveryJob]:
    """Lease up to ``limit`` due deliveries, oldest first, none on a route in ``skip_routes``
    nor of a subscription (``topic/name``) in ``skip_subscriptions`` or ``held``.

    ``held``: subscriptions whose due deliveries this transaction has just held (:func:`hold`),
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
    claimed = conn.execute(
        "UPDATE deliveries SET lease_owner = ?, lease_expires_at = ?"
        f" WHERE id IN ({candidates}) AND {_CLAIMABLE} RETURNING id",
        (owner, now_ms + lease_ms, *parameters, now_ms, now_ms),
    ).fetchall()
    return jobs(conn, [row["id"] for row in claimed]) if claimed else []


#: The earliest due deliveries, from the front of ``deliveries_due`` (``{held}``: a filter).
_DUE: Final = (
    "SELECT d.id FROM deliveries d JOIN subscriptions s"
    " ON s.topic_name = d.topic_name AND s.name = d.subscription_name"
    " WHERE d.next_attempt_at <= ? AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ?)"
    "{held} ORDER BY d.next_attempt_at LIMIT ?"
)
#: A subscription's (``s``) earliest due deliveries (their ``{columns}``), from its range of
#: ``deliveries_subscription_due``.
_DUE_OF_SUBSCRIPTION: Final = (
    "SELECT {columns} FROM deliveries x WHERE x.topic_name = s.topic_name"
    " AND x.subscription_name = s.name AND x.next_attempt_at <= ? AND (x.lease_expires_at IS NULL"
    " OR x.lease_expires_at <= ?) ORDER BY x.next_attempt_at LIMIT ?"
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
    backlog is never read. Read in due order from ``deliveries_due`` instead, a claim walked past
    all of it: the backlog of a full route (or of a failing one, until its breaker holds it) sits
    at the front of the due order, as everything due after it is taken (bench/claim_behind_held.py
    --skipped: a claim that found nothing behind a full route's 90,000 due cost 42-50 ms on
    SQLite, now 0.14-0.16). The price is an index probe per subscription not skipped, and up to
    ``limit`` rows from each, so a claim that skips nothing reads the due order."""
    conditions = []
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
    parameters = (now_ms, now_ms, limit, *skip_routes, *skip_subscriptions, limit)
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
