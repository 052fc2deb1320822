"""The topic model's values: topics, subscriptions, published messages.

Plain frozen dataclasses passed between the API views, the store and the delivery worker. Times
follow MNS: topic and subscription times in epoch seconds, message times in epoch milliseconds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Final

from gateway.protocol.names import validate_name
from gateway.protocol.notify import ContentFormat, NotifyStrategy
from gateway.queues.dlq_policy import DeadLetterPolicy

#: Messages in a topic live one day: docs/protocol.md#topics (kept and expired as in
#: docs/delivery.md#topic-message-retention).
TOPIC_MESSAGE_RETENTION_SECONDS: Final = 86400
#: MaximumMessageSize's range and default (the same as a queue's).
MIN_MESSAGE_SIZE: Final = 1024
MAX_MESSAGE_SIZE: Final = 65536
#: FilterTag and MessageTag: 1 to 16 characters.
MAX_TAG_LENGTH: Final = 16


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    create_time: int
    last_modify_time: int
    maximum_message_size: int = MAX_MESSAGE_SIZE
    logging_enabled: bool = False

    @classmethod
    def new(cls, name: str, now: int, maximum_message_size: int, logging_enabled: bool) -> Topic:
        """A topic being created, its name checked by the API's rule whoever asked."""
        return cls(validate_name("topic", name), now, now, maximum_message_size, logging_enabled)

    def same_attributes(self, other: Topic) -> bool:
        """Whether creating ``other`` over this one is the idempotent 204 rather than a 409."""
        return (self.maximum_message_size, self.logging_enabled) == (
            other.maximum_message_size,
            other.logging_enabled,
        )


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """A subscription's dead-letter policy as SetSubscriptionAttributes sets it: ``policy``
    ``None`` removes it (a request that leaves it as it is makes no change at all)."""

    policy: DeadLetterPolicy | None


@dataclass(frozen=True, slots=True)
class Subscription:
    topic_name: str
    name: str
    endpoint: str
    notify_strategy: NotifyStrategy = NotifyStrategy.BACKOFF_RETRY
    notify_content_format: ContentFormat = ContentFormat.XML
    filter_tag: str | None = None
    create_time: int = 0
    last_modify_time: int = 0
    #: The queue that receives the pushes whose retries ran out
    #: (docs/delivery.md#subscription-dead-letter-queues).
    dead_letter_policy: DeadLetterPolicy | None = None

    def same_definition(self, other: Subscription) -> bool:
        """Whether re-subscribing with ``other`` is the idempotent 204 rather than a 409."""
        return self._definition() == other._definition()

    def _definition(self) -> tuple[object, ...]:
        return (
            self.endpoint,
            self.notify_strategy,
            self.notify_content_format,
            self.filter_tag,
            self.dead_letter_policy,
        )

    @property
    def dead_letter_queue(self) -> str | None:
        """The queue its dead letters go to, when its policy is enabled."""
        policy = self.dead_letter_policy
        return policy.target_queue if policy is not None and policy.enabled else None


@dataclass(frozen=True, slots=True)
class TopicMessage:
    id: str
    topic_name: str
    body: str
    body_md5: str
    publish_time_ms: int
    tag: str | None = None
    #: MessageAttributes (DirectMail/DirectSMS), UserProperties, SystemProperties, MessageGroupId,
    #: kept as the client sent them so later issues can hand them on unchanged.
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def expires_at_ms(self) -> int:
        return self.publish_time_ms + TOPIC_MESSAGE_RETENTION_SECONDS * 1000


@dataclass(frozen=True, slots=True)
class PublishDraft:
    """A message to publish as its client sent it, checked, before the store gives it its
    MessageId and publish time (:meth:`stamped`): one draft whatever the front end, so trace
    context is added to it once, before it is stored."""

    topic_name: str
    body: str
    tag: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def stamped(self, message_id: str, now_ms: int) -> TopicMessage:
        return TopicMessage(
            id=message_id,
            topic_name=self.topic_name,
            body=self.body,
            body_md5=hashlib.md5(self.body.encode("utf-8")).hexdigest().upper(),
            publish_time_ms=now_ms,
            tag=self.tag or None,
            attributes=self.attributes,
        )


@dataclass(frozen=True, slots=True)
class Published:
    """What a publish did: how many deliveries it queued, and whether the topic logs operations."""

    deliveries: int
    logging_enabled: bool


def subscription_resource(topic_name: str, name: str) -> str:
    """A subscription's ``resource_name`` (``topic/name``), as the control plane, the breakers
    and rate limits name it: names hold no ``/``, so this is unambiguous."""
    return f"{topic_name}/{name}"


def subscription_names(resource: str) -> tuple[str, str]:
    """The topic's and the subscription's names in a :func:`subscription_resource`."""
    topic_name, _, name = resource.partition("/")
    return topic_name, name
