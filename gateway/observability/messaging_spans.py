"""Span names and attributes, per OpenTelemetry's messaging semantic conventions
(``docs/messaging/messaging-spans.md``) and the ``messaging.smq.*`` attributes of Alibaba
Cloud's SMQ end-to-end tracing; pure, so every front end names things alike
(docs/observability.md#tracing lists them).

Operation types: ``send`` (SendMessage, PublishMessage, a batch's request), ``create`` (each
entry of a batch send), ``receive`` (ReceiveMessage, and the peeks), ``settle``
(DeleteMessage, ChangeMessageVisibility), ``process`` (a receiver's handler); a push attempt
is the gateway sending, ``send`` with operation name ``push``.
"""

from __future__ import annotations

from typing import Final

SYSTEM: Final = "smq"

MESSAGING_SYSTEM: Final = "messaging.system"
OPERATION_TYPE: Final = "messaging.operation.type"
OPERATION_NAME: Final = "messaging.operation.name"
DESTINATION: Final = "messaging.destination.name"
SUBSCRIPTION: Final = "messaging.destination.subscription.name"
MESSAGE_ID: Final = "messaging.message.id"
BATCH_COUNT: Final = "messaging.batch.message_count"
BODY_SIZE: Final = "messaging.message.body.size"
ERROR_TYPE: Final = "error.type"
#: Alibaba Cloud SMQ's own attributes.
SMQ_OPERATION: Final = "messaging.smq.operation"
SMQ_REQUEST_ID: Final = "messaging.smq.request_id"
SMQ_MESSAGE_TAG: Final = "messaging.smq.message.tag"
SMQ_NEXT_VISIBLE_TIME: Final = "messaging.smq.message.next_visible_time"
SMQ_RECEIPT_HANDLES: Final = "messaging.smq.receipt_handles"
SMQ_DEQUEUE_COUNT: Final = "messaging.smq.message.dequeue_count"
#: The push attempt's (this gateway's; SMQ documents none for pushes).
PUSH_ATTEMPT: Final = "messaging.smq.push.attempt"
PUSH_ENDPOINT: Final = "messaging.smq.push.endpoint"
PUSH_OUTCOME: Final = "messaging.smq.push.outcome"
PUSH_RETRY_AT: Final = "messaging.smq.push.retry_at"
HTTP_STATUS: Final = "http.response.status_code"


def span_name(operation: str, destination: str) -> str:
    """``{operation} {destination}``, the conventions' span name."""
    return f"{operation} {destination}" if destination else operation


def operation_attributes(
    operation_type: str, action: str, destination: str, request_id: str
) -> dict[str, str]:
    """What every messaging span of the gateway's API carries."""
    return {
        MESSAGING_SYSTEM: SYSTEM,
        OPERATION_TYPE: operation_type,
        OPERATION_NAME: action,
        SMQ_OPERATION: action,
        DESTINATION: destination,
        SMQ_REQUEST_ID: request_id,
    }
