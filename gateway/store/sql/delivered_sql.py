"""Successful pushes kept for a while (migration 9), so the console's Deliveries page can say
when a message reached a subscription, on which attempt and how fast, and what failed before.

A delivery and its attempts are deleted when it succeeds (:func:`delivery_sql.complete`); in the
same transaction :func:`record` keeps one ``delivered`` row per success: the attempt that
succeeded in columns, the failed ones before it as JSON. The rows of a settle batch are one
multi-row ``INSERT`` (:func:`~gateway.store.sql.connection.insert_rows`), where an
``executemany`` made PostgreSQL execute a statement per push; the earlier attempts are read
only for deliveries that had any (the claim says how many), so a push that succeeds on its
first try costs one row (docs/benchmarks.md#delivered-history). The table's only index is its
primary key, MessageId first (migration 9).

Rows are kept ``MNS_GATEWAY_HISTORY_RETENTION`` (a day by default): on SQLite
:func:`gateway.store.sql.retention_sql.purge_delivered` deletes older ones in bounded batches,
walking the primary key (MessageId first) from its oldest end (MessageIds start with the publish
time, and a message is delivered after it was published); on PostgreSQL the table is
partitioned by MessageId and old partitions are dropped (:mod:`gateway.store.sql.partitions_sql`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gateway.delivery.records import Attempt, Settlement
from gateway.store.sql.connection import Connection, insert_rows
from gateway.store.sql.delivery_sql import attempts_by_delivery


@dataclass(frozen=True, slots=True)
class Delivered:
    """A delivery that succeeded: every attempt it took, the successful one last."""

    delivery_id: str
    topic_name: str
    subscription_name: str
    attempts: list[Attempt]

    @property
    def success(self) -> Attempt:
        return self.attempts[-1]


#: Where :func:`record` writes, in its rows' order (migration 9).
_INTO: Final = (
    "delivered (message_id, delivery_id, topic_name, subscription_name, delivered_at, attempt,"
    " outcome, status_code, latency_ms, earlier)"
)


def earlier_attempts(
    conn: Connection, settlements: Sequence[Settlement]
) -> dict[str, list[Attempt]]:
    """The failed attempts before the successful ones among ``settlements``, by delivery: for
    :func:`record`, read before :func:`delivery_sql.complete` deletes them (only deliveries
    that had any are asked for: the claim says how many)."""
    retried = [s.job.delivery_id for s in _delivered(settlements) if s.job.attempts]
    return attempts_by_delivery(conn, retried)


def record(
    conn: Connection, settlements: Sequence[Settlement], earlier: dict[str, list[Attempt]]
) -> None:
    """Keep the successful ones among ``settlements``, with their ``earlier`` attempts
    (:func:`earlier_attempts`). Writes only: it may run in
    :func:`~gateway.store.sql.together.together`."""
    succeeded = _delivered(settlements)
    if not succeeded:
        return
    rows = []
    for s in succeeded:
        job, attempt = s.job, s.attempt
        assert attempt is not None
        before = earlier.get(job.delivery_id)
        rows.append(
            (
                job.message.id,
                job.delivery_id,
                job.subscription.topic_name,
                job.subscription.name,
                attempt.attempted_at_ms,
                attempt.attempt,
                attempt.outcome.value,
                attempt.status_code,
                attempt.latency_ms,
                json.dumps([a.fields() for a in before]) if before else None,
            )
        )
    # A lapsed lease can let two workers settle the same delivery: one row is kept.
    insert_rows(conn, _INTO, rows, on_conflict="ON CONFLICT DO NOTHING")


def _delivered(settlements: Sequence[Settlement]) -> list[Settlement]:
    """The settlements the delivered history keeps: a successful attempt."""
    return [s for s in settlements if s.succeeded and s.attempt is not None]


def of_message(conn: Connection, message_id: str) -> list[Delivered]:
    """The message's successful deliveries, by subscription, then in the order they succeeded."""
    rows = conn.execute(
        "SELECT delivery_id, topic_name, subscription_name, delivered_at, attempt, outcome,"
        " status_code,"
        " latency_ms, earlier FROM delivered WHERE message_id = ?"
        " ORDER BY subscription_name, delivered_at",
        (message_id,),
    ).fetchall()
    return [
        Delivered(
            r["delivery_id"],
            r["topic_name"],
            r["subscription_name"],
            [
                *(Attempt(**a) for a in (json.loads(r["earlier"]) if r["earlier"] else ())),
                Attempt(
                    r["attempt"],
                    r["delivered_at"],
                    r["outcome"],
                    r["status_code"],
                    None,
                    r["latency_ms"],
                ),
            ],
        )
        for r in rows
    ]
