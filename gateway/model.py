"""The gateway's records, as plain immutable values passed between the store, API and workers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Messages in a topic live one day (docs/protocol.md#topics).
TOPIC_MESSAGE_RETENTION_SECONDS = 86400


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    create_time: int
    last_modify_time: int
    maximum_message_size: int = 65536
    logging_enabled: bool = False


@dataclass(frozen=True, slots=True)
class Subscription:
    topic_name: str
    name: str
    endpoint: str
    notify_strategy: str = "BACKOFF_RETRY"
    notify_content_format: str = "XML"
    filter_tag: str | None = None
    create_time: int = 0
    last_modify_time: int = 0

    def same_definition(self, other: Subscription) -> bool:
        """Whether re-subscribing with ``other`` is the idempotent 204 rather than a 409."""
        return (
            self.endpoint,
            self.notify_strategy,
            self.notify_content_format,
            self.filter_tag,
        ) == (other.endpoint, other.notify_strategy, other.notify_content_format, other.filter_tag)


@dataclass(frozen=True, slots=True)
class TopicMessage:
    id: str
    topic_name: str
    body: str
    body_md5: str
    publish_time_ms: int
    tag: str | None = None
    #: MessageAttributes (DirectMail/DirectSMS), UserProperties, SystemProperties, MessageGroupId,
    #: kept as the client sent them so every sender can hand them on unchanged.
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Published:
    """What a publish did: how many deliveries it queued, and whether the topic logs operations."""

    deliveries: int
    logging_enabled: bool


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing and the marker of the next, ``None`` on the last page."""

    items: Sequence[T]
    next_marker: str | None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at delivering a message to a subscription, as kept for dead letters."""

    attempt: int
    attempted_at_ms: int
    outcome: str
    status_code: int | None = None
    error: str | None = None
    latency_ms: float | None = None


@dataclass(frozen=True, slots=True)
class DeliveryJob:
    """A claimed delivery: the message, where it goes, and how many attempts came before."""

    delivery_id: str
    attempts: int
    message: TopicMessage
    subscription: Subscription
    route: str
    logging_enabled: bool = False


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message that exhausted its subscription's retry schedule, with every attempt."""

    id: str
    message: TopicMessage
    subscription: Subscription
    attempts: Sequence[Attempt]
    reason: str
    dead_at_ms: int
    replayed_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Settlement:
    """What becomes of a delivery after an attempt: done, tried again later, or dead-lettered."""

    job: DeliveryJob
    attempt: Attempt | None
    retry_at_ms: int | None = None
    dead_reason: str | None = None
