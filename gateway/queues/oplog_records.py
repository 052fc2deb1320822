"""Operation-log records for queue message operations (docs/protocol.md#operation-log-fields).

The views build these only for queues with ``LoggingEnabled`` and hand them to the ``oplog``
service; a batch operation yields one record per message, tagged with the batch action, which is
how :mod:`gateway.observability.oplog` expects them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.observability.operations import Action, Field, RequestFacts
from gateway.queues.records import QueueMessage, SentMessage, VisibilityChange

if TYPE_CHECKING:
    from gateway.queues.dlq_policy import Moved


def sent_records(facts: RequestFacts, action: Action, sent: list[SentMessage]) -> list[dict]:
    return [
        facts.record(
            action,
            MessageId=message.message_id,
            NextVisibleTime=message.visible_at,
            ReceiptHandleInResponse=message.receipt_handle,
        )
        for message in sent
    ]


def received_records(
    facts: RequestFacts, action: Action, messages: list[QueueMessage]
) -> list[dict]:
    return [
        facts.record(
            action,
            MessageId=message.message_id,
            ReceiptHandleInResponse=message.receipt_handle,
            NextVisibleTime=message.next_visible_time,
            DequeueCount=message.dequeue_count,
        )
        for message in messages
    ]


def deleted_records(
    facts: RequestFacts, action: Action, deleted: list[tuple[str, str]]
) -> list[dict]:
    """``deleted``: (message id, receipt handle in the request) of each deleted message."""
    return [
        facts.record(action, MessageId=message_id, ReceiptHandleInRequest=handle)
        for message_id, handle in deleted
    ]


def visibility_record(facts: RequestFacts, handle_in: str, change: VisibilityChange) -> dict:
    return facts.record(
        Action.CHANGE_MESSAGE_VISIBILITY,
        MessageId=change.message_id,
        ReceiptHandleInRequest=handle_in,
        ReceiptHandleInResponse=change.receipt_handle,
        NextVisibleTime=change.next_visible_time,
    )


def dead_lettered_records(facts: RequestFacts, moved: list[Moved]) -> list[dict]:
    """One DeadLetter record per message a receive moved to the dead-letter queue."""
    return [
        facts.record(
            Action.DEAD_LETTER,
            MessageId=m.message_id,
            DequeueCount=m.dequeue_count,
            **{
                Field.DEAD_LETTER_QUEUE.value: m.dead_letter_queue,
                Field.DEAD_LETTER_MESSAGE_ID.value: m.dead_letter_message_id,
            },
        )
        for m in moved
    ]


def redriven_records(
    facts: RequestFacts, dead_letter_queue: str, moved: list[tuple[str, str]]
) -> list[dict]:
    """One Redrive record per message moved back from ``dead_letter_queue`` to the queue of
    ``facts``; ``moved``: (new MessageId, MessageId in the dead-letter queue) of each."""
    return [
        facts.record(
            Action.REDRIVE,
            MessageId=message_id,
            **{
                Field.DEAD_LETTER_QUEUE.value: dead_letter_queue,
                Field.DEAD_LETTER_MESSAGE_ID.value: dead_letter_message_id,
            },
        )
        for message_id, dead_letter_message_id in moved
    ]
