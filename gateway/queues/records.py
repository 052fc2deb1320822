"""The queue model's values: queue attributes with their ranges, stored and received messages.

Plain frozen dataclasses passed between the API views, the store and the pure rules, so each
layer can be tested without the others. Times follow MNS: queue times in epoch seconds, message
times in epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from gateway.errors.mns import MNSError, invalid_argument
from gateway.protocol.integers import integer_in_range
from gateway.protocol.names import validate_name
from gateway.queues.dlq_policy import DeadLetterPolicy, PolicyUpdate


@dataclass(frozen=True, slots=True)
class AttributeRange:
    """One settable queue attribute: its XML element, inclusive range and default."""

    element: str
    low: int
    high: int
    default: int
    unit: str = "seconds"

    def parse(self, value: str | None, default: int | None) -> int | None:
        """``value`` as an integer in range; ``default`` when absent; else MNS's 400
        ``InvalidArgument`` "The value of {element} should between {low} and {high} {unit}"."""
        if value is None:
            return default
        number = integer_in_range(value, self.low, self.high)
        if number is None:
            raise invalid_argument(self.element, self.low, self.high, self.unit)
        return number

    def check(self, value: int | None, default: int | None) -> int | None:
        """:meth:`parse` for a value that arrived as a number (the JSON API): the same range
        and the same error."""
        if value is None:
            return default
        if not self.low <= value <= self.high:
            raise invalid_argument(self.element, self.low, self.high, self.unit)
        return value


#: CreateQueue's table in the API reference (docs/protocol.md#queue-attributes).
DELAY_SECONDS: Final = AttributeRange("DelaySeconds", 0, 604800, 0)
MAXIMUM_MESSAGE_SIZE: Final = AttributeRange("MaximumMessageSize", 1024, 65536, 65536, "bytes")
MESSAGE_RETENTION_PERIOD: Final = AttributeRange("MessageRetentionPeriod", 60, 604800, 259200)
VISIBILITY_TIMEOUT: Final = AttributeRange("VisibilityTimeout", 1, 43200, 30)
POLLING_WAIT_SECONDS: Final = AttributeRange("PollingWaitSeconds", 0, 30, 0)
QUEUE_RANGES: Final = (
    DELAY_SECONDS,
    MAXIMUM_MESSAGE_SIZE,
    MESSAGE_RETENTION_PERIOD,
    VISIBILITY_TIMEOUT,
    POLLING_WAIT_SECONDS,
)
#: The :class:`QueueAttributes` field each of :data:`QUEUE_RANGES` sets, by element name.
QUEUE_FIELDS: Final = {
    "DelaySeconds": "delay_seconds",
    "MaximumMessageSize": "maximum_message_size",
    "MessageRetentionPeriod": "message_retention_period",
    "VisibilityTimeout": "visibility_timeout",
    "PollingWaitSeconds": "polling_wait_seconds",
}

#: Per-message and per-request parameters.
PRIORITY: Final = AttributeRange("Priority", 1, 16, 8, "")
WAIT_SECONDS: Final = AttributeRange("waitseconds", 0, 30, 0)
BATCH_SIZE: Final = AttributeRange("numOfMessages", 1, 16, 16, "")
#: The SDK lets ChangeMessageVisibility pass 0 ("visible again now"); the queue attribute can't.
CHANGE_VISIBILITY_TIMEOUT: Final = AttributeRange("VisibilityTimeout", 0, 43200, 30)
#: Messages or receipt handles in one batch operation.
MAX_BATCH: Final = 16
MAX_BATCH_BODY_BYTES: Final = 65536


class QueueType(StrEnum):
    """A standard queue, or an ordered one: at most one message of each MessageGroupId in
    flight, in send order (docs/queues.md#ordered-queues). Spelled as the control-plane API
    spells it; parsed in any case."""

    NORMAL = "normal"
    FIFO = "fifo"

    @classmethod
    def parse(cls, text: str) -> QueueType:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise MNSError(
                "InvalidArgument", "The value of QueueType should be normal or fifo."
            ) from None


@dataclass(frozen=True, slots=True)
class QueueAttributes:
    """The attributes a client sets; the defaults are the service's."""

    delay_seconds: int = DELAY_SECONDS.default
    maximum_message_size: int = MAXIMUM_MESSAGE_SIZE.default
    message_retention_period: int = MESSAGE_RETENTION_PERIOD.default
    visibility_timeout: int = VISIBILITY_TIMEOUT.default
    polling_wait_seconds: int = POLLING_WAIT_SECONDS.default
    logging_enabled: bool = False
    #: Set at creation only (docs/queues.md#ordered-queues).
    queue_type: QueueType = QueueType.NORMAL
    dead_letter_policy: DeadLetterPolicy | None = None

    @property
    def ordered(self) -> bool:
        return self.queue_type is QueueType.FIFO

    def values(self) -> dict[str, int | bool]:
        """The numeric attributes and LoggingEnabled by field name (what
        :func:`check_ranges` checks and SetQueueAttributes changes)."""
        values: dict[str, int | bool] = {f: getattr(self, f) for f in QUEUE_FIELDS.values()}
        return values | {"logging_enabled": self.logging_enabled}


@dataclass(frozen=True, slots=True)
class QueueChanges:
    """What a SetQueueAttributes sent: attribute values by :class:`QueueAttributes` field, and
    QueueType and the dead-letter policy's fields when present."""

    values: dict[str, int | bool] = field(default_factory=dict)
    queue_type: QueueType | None = None
    dead_letter_policy: PolicyUpdate | None = None


def check_ranges(values: Mapping[str, int | bool]) -> None:
    """Each numeric attribute among ``values`` (by :class:`QueueAttributes` field) within its
    range, whoever built the values (a wire parser, the console, the command line): else the
    service's 400 ``InvalidArgument`` naming the element."""
    for attribute in QUEUE_RANGES:
        value = values.get(QUEUE_FIELDS[attribute.element])
        if value is not None:
            attribute.check(int(value), None)


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    create_time: int
    last_modify_time: int
    attributes: QueueAttributes

    @classmethod
    def new(cls, name: str, now: int, attributes: QueueAttributes) -> Queue:
        """A queue being created, its name checked by the API's rule whichever front end or
        command asked (a stored name every client can open)."""
        return cls(validate_name("queue", name), now, now, attributes)


@dataclass(frozen=True, slots=True)
class MessageCounts:
    """GetQueueAttributes' ActiveMessages, InactiveMessages and DelayMessages."""

    active: int = 0
    inactive: int = 0
    delayed: int = 0


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message as a producer sent it; ``delay_seconds`` ``None`` means the queue's default."""

    body: str
    priority: int = PRIORITY.default
    delay_seconds: int | None = None
    #: UserProperties, SystemProperties and MessageGroupId exactly as sent, returned unchanged.
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SentMessage:
    message_id: str
    body_md5: str
    visible_at: int
    #: Only for a message sent Delayed: SendMessage returns a handle for it
    #: (docs/protocol.md#message-states).
    receipt_handle: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """A stored message as receive and peek report it."""

    message_id: str
    body: str
    body_md5: str
    priority: int
    enqueue_time: int
    next_visible_time: int
    dequeue_count: int
    #: EnqueueTime while the message was never received (docs/protocol.md#message-states).
    first_dequeue_time: int
    properties: dict[str, Any] = field(default_factory=dict)
    receipt_handle: str | None = None
    #: For a received message, its NextVisibleTime before this receive: what undoing the
    #: receive restores (:meth:`gateway.store.queues.QueueStore.release`). Not on the wire.
    claimed_from: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class VisibilityChange:
    """ChangeMessageVisibility's answer: the message's next handle and NextVisibleTime."""

    message_id: str
    receipt_handle: str
    next_visible_time: int
