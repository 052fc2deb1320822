"""The delivery side's values: a claimed delivery, one attempt, its outcome, a dead letter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gateway.delivery.standard_webhooks import WebhookSecrets
from gateway.topics.records import Subscription, TopicMessage


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at delivering a message to a subscription, as kept for dead letters."""

    attempt: int
    attempted_at_ms: int
    outcome: str
    status_code: int | None = None
    error: str | None = None
    latency_ms: float | None = None

    def fields(self) -> dict[str, Any]:
        """As a dead letter's JSON history keeps it (and ``Attempt(**fields)`` reads it back)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DeliveryJob:
    """A claimed delivery: the message, where it goes, and how many attempts came before."""

    delivery_id: str
    attempts: int
    message: TopicMessage
    subscription: Subscription
    route: str
    logging_enabled: bool = False
    #: Set on a replayed dead letter's delivery: the replay's request id (its ``Replay`` record).
    replay_request_id: str | None = None
    #: Set when its subscription has a TenantRateLimitPolicy: the second whose count granted
    #: this push when it was claimed (:func:`gateway.delivery.push_limits.grant_holds`).
    granted_second: int | None = None
    #: Its subscription's Standard Webhooks secrets, when they are on (their repr shows none).
    standard_webhooks: WebhookSecrets | None = None


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
    #: The subscription's dead-letter queue it was also put into, and its MessageId there
    #: (``None`` when the queue did not take it): docs/delivery.md#subscription-dead-letter-queues.
    dead_letter_queue: str | None = None
    dead_letter_queue_message_id: str | None = None


@dataclass(frozen=True, slots=True)
class Filed:
    """A delivery just moved to the dead letters: the letter's id, and where its message went."""

    letter_id: str
    dead_letter_queue: str | None = None
    dead_letter_queue_message_id: str | None = None


@dataclass(frozen=True, slots=True)
class Settlement:
    """What becomes of a delivery after an attempt: done, tried again later, or dead-lettered."""

    job: DeliveryJob
    attempt: Attempt | None
    retry_at_ms: int | None = None
    dead_reason: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.dead_reason is None and (self.retry_at_ms is None or self.attempt is None)
