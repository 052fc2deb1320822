"""Redrive writes a ``Redrive`` operation-log record per message moved back (docs/console.md,
docs/protocol.md#operation-log-fields): in the source queue's log when it or the dead-letter
queue has LoggingEnabled, naming both ids; on each backend."""

from __future__ import annotations

import json

from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.queues.records import NewMessage, QueueAttributes
from tests.gateway.api.console.conftest import Console


def _dead_lettered(
    console: Console, source: str, dlq: str, *, source_logs: bool, dlq_logs: bool
) -> str:
    """``source`` with one message moved to ``dlq``: that message's id in ``dlq``."""
    queues = console.store.queues
    queues.create_queue(dlq, QueueAttributes(logging_enabled=dlq_logs))
    policy = DeadLetterPolicy(dlq, 1, True)
    attributes = QueueAttributes(
        visibility_timeout=1, dead_letter_policy=policy, logging_enabled=source_logs
    )
    queues.create_queue(source, attributes)
    queues.send(source, [NewMessage(f"from {source}")])
    queues.receive(source, 1, 0)
    console.clock.now += 2
    queues.receive(source, 1, 0)  # the second receive moves it
    (moved,) = queues.peek(dlq, 16)[1]
    return moved.message_id


def test_redrive_is_in_the_operation_log(signed_in: Console) -> None:
    ids = {
        "logged": _dead_lettered(signed_in, "logged", "dlq-a", source_logs=True, dlq_logs=False),
        "quiet": _dead_lettered(signed_in, "quiet", "dlq-b", source_logs=False, dlq_logs=True),
        "silent": _dead_lettered(signed_in, "silent", "dlq-c", source_logs=False, dlq_logs=False),
    }
    for dlq in ("dlq-a", "dlq-b", "dlq-c"):
        signed_in.post(f"/console/queues/{dlq}/redrive", limit="10")
    queues = signed_in.store.queues
    back = {name: queues.peek(name, 16)[1][0].message_id for name in ids}
    records = [json.loads(line) for line in signed_in.oplog_records()]
    assert sorted(r["QueueName"] for r in records) == ["logged", "quiet"]
    for record in records:
        source = record["QueueName"]
        assert record["Action"] == "Redrive"
        assert record["MessageId"] == back[source]  # its new id in the source queue
        assert record["DeadLetterMessageId"] == ids[source]  # the id it had in the DLQ
        assert record["DeadLetterQueue"] == {"logged": "dlq-a", "quiet": "dlq-b"}[source]
        assert record["RequestId"] and record["RemoteAddress"] and "Time" in record
        assert record["AccountId"] == signed_in.app.extensions["mns"].settings.account_id


def test_nothing_redriven_is_nothing_logged(signed_in: Console) -> None:
    queues = signed_in.store.queues
    queues.create_queue("dlq", QueueAttributes(logging_enabled=True))
    queues.send("dlq", [NewMessage("sent to the dlq directly")])  # not from a queue: stays
    signed_in.post("/console/queues/dlq/redrive", limit="10")
    assert "Nothing to redrive" in signed_in.flashes("/console/")
    assert signed_in.oplog_records() == []
