"""Redrive: messages a dead-letter queue holds go back to the queues they were dead-lettered
from (docs/console.md#redrive), as RabbitMQ's shovel and SQS's redrive do.

A queue's dead-lettered message names its source in the ``DLQSourceArn`` system property
(:func:`gateway.queues.dlq_policy.dead_lettered_properties`). Each message moved is enqueued
into its source queue with its original properties (the DLQ markers removed) and deleted from
the dead-letter queue in the same transaction: never lost, never in both. Messages in flight (a
receiver holds them) are left alone, as are those dead-lettered from a subscription (replay
their dead letter instead) or from a queue that no longer exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.errors.mns import MNSError
from gateway.queues import dlq_policy as dead_letters
from gateway.store.queues import QueueStore
from gateway.store.sql import queue_sql
from gateway.store.sql.connection import Connection

_MARKERS = (
    dead_letters.DLQ_MESSAGE_TYPE,
    dead_letters.DLQ_SOURCE_ARN,
    dead_letters.DLQ_ORIGIN_MESSAGE_ID,
)


@dataclass(frozen=True, slots=True)
class RedrivenMessage:
    """One message moved back: its source queue, its new MessageId there, and the MessageId it
    had in the dead-letter queue (what the ``Redrive`` operation-log record names)."""

    queue_name: str
    message_id: str
    dead_letter_message_id: str


@dataclass(frozen=True, slots=True)
class Redriven:
    #: Source queue name -> how many messages went back to it.
    moved: dict[str, int] = field(default_factory=dict)
    #: Messages left where they were, with why.
    skipped: dict[str, str] = field(default_factory=dict)
    #: Every message moved, in the order they were moved.
    messages: list[RedrivenMessage] = field(default_factory=list)


def source_queue(properties: Mapping[str, Any], arn_prefix: str) -> str | None:
    """The queue a message was dead-lettered from, when it came from one of this account's
    queues; ``None`` otherwise."""
    system = {e.get("Name"): e.get("Value") for e in properties.get("SystemProperties") or []}
    if system.get(dead_letters.DLQ_MESSAGE_TYPE) != dead_letters.FROM_QUEUE:
        return None
    arn = str(system.get(dead_letters.DLQ_SOURCE_ARN) or "")
    return arn[len(arn_prefix) :] if arn.startswith(arn_prefix) else None


def original_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The properties without the dead-letter markers, as the message had them before."""
    system = [e for e in properties.get("SystemProperties") or [] if e.get("Name") not in _MARKERS]
    restored = {k: v for k, v in properties.items() if k != "SystemProperties"}
    if system:
        restored["SystemProperties"] = system
    return restored


def redrive(
    conn: Connection, queues: QueueStore, name: str, limit: int, now_ms: int, arn_prefix: str
) -> Redriven:
    dlq = queue_sql.require_queue(conn, name)
    if dlq.attributes.ordered:
        raise MNSError("InvalidArgument", "Redrive takes messages from standard queues only.")
    rows = conn.execute(
        "SELECT id, body, priority, properties FROM queue_messages WHERE queue_name = ?"
        " AND visible_at <= ? AND expires_at > ? ORDER BY enqueue_time, id LIMIT ?",
        (name, now_ms, now_ms, limit),
    ).fetchall()
    result = Redriven()
    for row in rows:
        properties = json.loads(row["properties"]) if row["properties"] else {}
        source = source_queue(properties, arn_prefix)
        if source is None or source == name:
            result.skipped[row["id"]] = "not dead-lettered from one of this account's queues"
            continue
        if queue_sql.get_queue(conn, source) is None:
            result.skipped[row["id"]] = f"its source queue {source} no longer exists"
            continue
        message_id = queues.enqueue_in(
            conn,
            source,
            row["body"],
            priority=row["priority"],
            delay_seconds=0,
            now_ms=now_ms,
            properties=original_properties(properties),
        )
        conn.execute(
            "DELETE FROM queue_messages WHERE id = ? AND queue_name = ?", (row["id"], name)
        )
        result.moved[source] = result.moved.get(source, 0) + 1
        result.messages.append(RedrivenMessage(source, message_id, row["id"]))
    return result


def redrive_queue(queues: QueueStore, name: str, limit: int) -> Redriven:
    """Redrive up to ``limit`` messages of dead-letter queue ``name``, in one transaction, and
    wake the receivers of the queues they went back to."""
    now = queues.now_ms()
    prefix = dead_letters.queue_arn(queues.region, queues.account_id, "")
    result = queues.database.write(lambda c: redrive(c, queues, name, limit, now, prefix))
    for source, count in result.moved.items():
        queues.notify(source, count)
    return result
