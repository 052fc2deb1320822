"""Input and normalised schemas of the report pipeline.

Every input field is read as a string. Exports from the real service's log store carry numbers as
strings, our gateway writes them as JSON numbers, and Spark's JSON reader turns any token into
text for a string field. Reading strings and casting afterwards (``try_cast``, never failing)
accepts both without schema inference, which would cost a full extra pass over the input, and a
wrongly typed value becomes a null in one column instead of a corrupt record.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from gateway.observability.operations import Action, Field

CORRUPT_RECORD: Final = "_corrupt_record"

#: input field -> normalised column, in output order.
COLUMN_FOR_FIELD: Final[dict[Field, str]] = {
    Field.TIME: "time_ms",
    Field.MESSAGE_ID: "message_id",
    Field.ACTION: "action",
    Field.QUEUE_NAME: "queue_name",
    Field.TOPIC_NAME: "topic_name",
    Field.SUBSCRIPTION_NAME: "subscription_name",
    Field.ENDPOINT: "endpoint",
    Field.ATTEMPT: "attempt",
    Field.OUTCOME: "outcome",
    Field.STATUS_CODE: "status_code",
    Field.LATENCY_MS: "latency_ms",
    Field.ERROR: "error",
    Field.DEQUEUE_COUNT: "dequeue_count",
    Field.NEXT_VISIBLE_TIME: "next_visible_time_ms",
    Field.PUBLISH_TIME: "publish_time_ms",
    Field.RECEIPT_HANDLE_IN_REQUEST: "receipt_handle_in_request",
    Field.RECEIPT_HANDLE_IN_RESPONSE: "receipt_handle_in_response",
    Field.PROCESS_TIME: "process_time_ms",
    Field.REQUEST_ID: "request_id",
    Field.ACCOUNT_ID: "account_id",
    Field.REMOTE_ADDRESS: "remote_address",
    #: The gateway's, with tracing on: the OpenTelemetry trace of the request or push attempt.
    Field.TRACE_ID: "trace_id",
    #: On failed PushMessage records to be retried: when the retry is due.
    Field.NEXT_ATTEMPT_TIME: "next_attempt_time_ms",
    #: EndpointCircuit records (docs/delivery.md#endpoint-health): a breaker's transition.
    Field.CIRCUIT_STATE: "circuit_state",
    Field.PREVIOUS_CIRCUIT_STATE: "previous_circuit_state",
    Field.FAILURE_RATE: "failure_rate",
    Field.NEXT_PROBE_TIME: "next_probe_time_ms",
    Field.CIRCUIT_OVERRIDE: "circuit_override",
}

#: Fields holding a point in time (epoch ms, numeric string, or "YYYY-MM-DD HH:MM:SS[.fff]").
TIME_FIELDS: Final = frozenset(
    {
        Field.TIME,
        Field.NEXT_VISIBLE_TIME,
        Field.PUBLISH_TIME,
        Field.NEXT_ATTEMPT_TIME,
        Field.NEXT_PROBE_TIME,
    }
)
#: Fields cast to a 64-bit integer; the remaining non-time fields stay strings.
LONG_FIELDS: Final = frozenset({Field.LATENCY_MS, Field.PROCESS_TIME})
INT_FIELDS: Final = frozenset({Field.ATTEMPT, Field.STATUS_CODE, Field.DEQUEUE_COUNT})

SENT_ACTIONS: Final = (Action.SEND_MESSAGE.value, Action.BATCH_SEND_MESSAGE.value)
RECEIVED_ACTIONS: Final = (Action.RECEIVE_MESSAGE.value, Action.BATCH_RECEIVE_MESSAGE.value)
DELETED_ACTIONS: Final = (Action.DELETE_MESSAGE.value, Action.BATCH_DELETE_MESSAGE.value)
#: Operations whose response hands out a receipt handle (ReceiptHandleInResponse).
HANDLE_ISSUING_ACTIONS: Final = (*RECEIVED_ACTIONS, Action.CHANGE_MESSAGE_VISIBILITY.value)

#: Tie-break for operations logged in the same millisecond: the order they must have happened in.
ACTION_ORDER: Final[dict[str, int]] = {
    Action.SEND_MESSAGE.value: 0,
    Action.BATCH_SEND_MESSAGE.value: 0,
    Action.PUBLISH_MESSAGE.value: 0,
    Action.REDRIVE.value: 0,
    Action.REPLAY.value: 1,
    Action.RECEIVE_MESSAGE.value: 2,
    Action.BATCH_RECEIVE_MESSAGE.value: 2,
    Action.PUSH_MESSAGE.value: 2,
    Action.CHANGE_MESSAGE_VISIBILITY.value: 3,
    Action.DELETE_MESSAGE.value: 4,
    Action.BATCH_DELETE_MESSAGE.value: 4,
    Action.DEAD_LETTER.value: 5,
}


def raw_log_schema() -> StructType:
    """What the reader asks Spark for: every known field as text, plus the corrupt-line column."""
    fields = [StructField(field.value, StringType()) for field in COLUMN_FOR_FIELD]
    return StructType([*fields, StructField(CORRUPT_RECORD, StringType())])


def event_schema() -> StructType:
    """Columns of the normalised event table that every transform starts from."""
    return StructType(
        [StructField(column, _normalised_type(field)) for field, column in COLUMN_FOR_FIELD.items()]
    )


def _normalised_type(field: Field) -> LongType | IntegerType | StringType:
    if field in TIME_FIELDS or field in LONG_FIELDS:
        return LongType()
    if field in INT_FIELDS:
        return IntegerType()
    return StringType()
