"""What an operation-log record holds, with no IO: its field names (those of the real service's
log export: docs/protocol.md#operation-log-fields), actions and outcomes, the facts one request's
records share, and the :class:`OperationLog` protocol with its null log. The writer is
:mod:`gateway.observability.oplog`; the delivery report (:mod:`gateway.pipeline`) reads the same
names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Field(StrEnum):
    """Record field names: the real service's (docs/protocol.md#operation-log-fields) plus what a
    report needs."""

    TIME = "Time"  # epoch milliseconds (int)
    MESSAGE_ID = "MessageId"
    QUEUE_NAME = "QueueName"
    TOPIC_NAME = "TopicName"
    SUBSCRIPTION_NAME = "SubscriptionName"
    ACCOUNT_ID = "AccountId"
    REMOTE_ADDRESS = "RemoteAddress"
    NEXT_VISIBLE_TIME = "NextVisibleTime"  # epoch milliseconds (int)
    RECEIPT_HANDLE_IN_REQUEST = "ReceiptHandleInRequest"
    RECEIPT_HANDLE_IN_RESPONSE = "ReceiptHandleInResponse"
    PROCESS_TIME = "ProcessTime"  # milliseconds the gateway spent on the request
    REQUEST_ID = "RequestId"
    ACTION = "Action"
    ENDPOINT = "Endpoint"
    ATTEMPT = "Attempt"  # 1-based push attempt number
    STATUS_CODE = "StatusCode"
    LATENCY_MS = "LatencyMs"
    OUTCOME = "Outcome"
    ERROR = "Error"
    DEQUEUE_COUNT = "DequeueCount"
    PUBLISH_TIME = "PublishTime"  # on push records: when the message was published, epoch ms
    DEAD_LETTER_QUEUE = "DeadLetterQueue"  # on DeadLetter records: the queue it went to, if any
    DEAD_LETTER_MESSAGE_ID = "DeadLetterMessageId"  # ... and its MessageId there
    #: With tracing on: the trace of the request or push attempt (docs/observability.md#tracing)
    TRACE_ID = "TraceId"
    CIRCUIT_STATE = "CircuitState"  # on EndpointCircuit records: the state entered ...
    PREVIOUS_CIRCUIT_STATE = "PreviousCircuitState"  # ... and the one left
    FAILURE_RATE = "FailureRate"  # ... the window's failed share of attempts (0 to 1)
    NEXT_PROBE_TIME = "NextProbeTime"  # ... when an open breaker lets a probe out, epoch ms
    #: ... and when an operator's override made the transition: closed, open or auto
    CIRCUIT_OVERRIDE = "CircuitOverride"
    #: On a failed PushMessage record to be retried: when the retry is due, epoch ms
    NEXT_ATTEMPT_TIME = "NextAttemptTime"


class Action(StrEnum):
    """``Action`` values. Batch operations write one record per message with the batch action,
    so the report can tell batch and single traffic apart while counting both as sends/receives.
    PushMessage, DeadLetter and Replay records carry TopicName, SubscriptionName, Endpoint and
    MessageId: the report groups deliveries by exactly those. A queue message moved to its
    dead-letter queue gets a DeadLetter record with QueueName and MessageId instead.
    """

    SEND_MESSAGE = "SendMessage"
    BATCH_SEND_MESSAGE = "BatchSendMessage"
    RECEIVE_MESSAGE = "ReceiveMessage"
    BATCH_RECEIVE_MESSAGE = "BatchReceiveMessage"
    DELETE_MESSAGE = "DeleteMessage"
    BATCH_DELETE_MESSAGE = "BatchDeleteMessage"
    CHANGE_MESSAGE_VISIBILITY = "ChangeMessageVisibility"
    PUBLISH_MESSAGE = "PublishMessage"
    PUSH_MESSAGE = "PushMessage"  # one record per push attempt, whatever the endpoint kind
    DEAD_LETTER = "DeadLetter"
    REPLAY = "Replay"
    #: A message a dead-letter queue held, moved back to its source queue by the console's
    #: redrive: QueueName and MessageId are the source queue and the message's new id there,
    #: DeadLetterQueue and DeadLetterMessageId where it came from (the DeadLetter record, undone).
    REDRIVE = "Redrive"
    #: A subscription endpoint's circuit breaker changed state (docs/delivery.md#endpoint-health):
    #: TopicName, SubscriptionName, CircuitState, PreviousCircuitState, FailureRate and, when it
    #: opened, NextProbeTime.
    ENDPOINT_CIRCUIT = "EndpointCircuit"


class Outcome(StrEnum):
    """The closed set of ``Outcome`` values of a ``PushMessage`` record."""

    SUCCESS = "success"  # endpoint accepted (HTTP 2xx, message enqueued, mail accepted)
    HTTP_ERROR = "http_error"  # endpoint answered with a refusal: HTTP non-2xx, SMTP >= 400,
    #                            target queue error; the code, if any, is in StatusCode
    TIMEOUT = "timeout"  # no complete answer within the push timeout
    CONNECTION_ERROR = "connection_error"  # DNS, TCP, TLS failure before an answer
    REFUSED_BY_POLICY = "refused_by_policy"  # the gateway itself refused (e.g. address not allowed)


class DropReason(StrEnum):
    """Label values of ``mns_oplog_dropped_total``."""

    QUEUE_FULL = "queue_full"
    IO_ERROR = "io_error"
    UNSERIALIZABLE = "unserializable"
    CLOSED = "closed"


class OperationLog(Protocol):
    """What the API and the delivery workers call; implementations never raise from ``write``."""

    def write(self, record: Mapping[str, object]) -> None: ...

    def close(self) -> None:
        """Write out what is pending and stop; called once, at shutdown."""


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What every record of one API request shares; ``resource`` is QueueName or TopicName."""

    resource: Field
    name: str
    request_id: str
    remote_address: str
    account_id: str
    process_time_ms: float
    #: The request's trace (with tracing on), so a trace leads to its records and back.
    trace_id: str = ""

    def record(self, action: Action, **fields: object) -> dict[str, object]:
        record: dict[str, object] = {
            Field.ACTION.value: action.value,
            self.resource.value: self.name,
            Field.REQUEST_ID.value: self.request_id,
            Field.REMOTE_ADDRESS.value: self.remote_address,
            Field.ACCOUNT_ID.value: self.account_id,
            Field.PROCESS_TIME.value: round(self.process_time_ms, 3),
        }
        if self.trace_id:
            record[Field.TRACE_ID.value] = self.trace_id
        record.update({name: value for name, value in fields.items() if value is not None})
        return record


class NullOperationLog:
    """The log when ``MNS_GATEWAY_LOG_DIR`` is unset: accepts and forgets every record."""

    def write(self, record: Mapping[str, object]) -> None:
        return None

    def close(self) -> None:
        return None
