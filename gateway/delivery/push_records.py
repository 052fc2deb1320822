"""The operation-log record of a push, a replay or a dead letter, pure: what the delivery worker
writes for each (docs/protocol.md#operation-log-fields; the delivery report reads the same
fields, docs/pipeline.md)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.delivery.records import Attempt, DeliveryJob, Filed
from gateway.observability.operations import Action, Field


@dataclass(frozen=True, slots=True)
class PushFacts:
    """What a record says besides its job and attempt: ``error`` for a record with no attempt
    (a dead letter's reason), the replay's ``request_id``, when a failed attempt is due again
    (``next_attempt_ms``: the report tells a retry waiting behind an open circuit from one
    waiting for its own schedule), the dead-letter queue it was ``filed`` in, the ``trace_id``."""

    action: Action = Action.PUSH_MESSAGE
    error: str | None = None
    filed: Filed | None = None
    request_id: str | None = None
    next_attempt_ms: int | None = None
    trace_id: str | None = None


def push_record(
    job: DeliveryJob,
    attempt: Attempt | None,
    facts: PushFacts,
    *,
    now_ms: int,
    account_id: str,
) -> dict[str, object]:
    record: dict[str, object] = {
        "Time": now_ms,
        "Action": facts.action.value,
        "AccountId": account_id,
        "TopicName": job.message.topic_name,
        "SubscriptionName": job.subscription.name,
        "MessageId": job.message.id,
        "Endpoint": job.subscription.endpoint,
        "PublishTime": job.message.publish_time_ms,
    }
    if attempt is not None:
        record.update(
            Attempt=attempt.attempt,
            Outcome=attempt.outcome,
            StatusCode=attempt.status_code,
            LatencyMs=attempt.latency_ms,
            Error=attempt.error,
        )
    elif facts.error:
        record["Error"] = facts.error
    if facts.next_attempt_ms is not None:
        record[Field.NEXT_ATTEMPT_TIME.value] = facts.next_attempt_ms
    if facts.request_id:
        record[Field.REQUEST_ID.value] = facts.request_id
    if facts.trace_id:
        record[Field.TRACE_ID.value] = facts.trace_id
    filed = facts.filed
    if filed is not None and filed.dead_letter_queue_message_id:
        record[Field.DEAD_LETTER_QUEUE.value] = filed.dead_letter_queue
        record[Field.DEAD_LETTER_MESSAGE_ID.value] = filed.dead_letter_queue_message_id
    return record
