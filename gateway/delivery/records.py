"""The delivery side's values: a claimed delivery, one attempt, its outcome, a dead letter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from gateway.delivery.standard_webhooks import WebhookSecrets
from gateway.topics.records import Subscription, TopicMessage


class PushOutcome(StrEnum):
    """How one attempt went, one typed value from the sender to the breaker, the settle, the
    operation log and the metrics (the strings are what the store, the operation log's
    ``Outcome`` and the metrics' labels keep)."""

    SUCCESS = "success"  # the endpoint took it (HTTP 2xx, message enqueued, mail accepted)
    HTTP_ERROR = "http_error"  # the endpoint answered with a refusal (non-2xx, SMTP >= 400)
    TIMEOUT = "timeout"  # no complete answer within the push timeout
    CONNECTION_ERROR = "connection_error"  # DNS, TCP, TLS failure before an answer
    REFUSED_BY_POLICY = "refused_by_policy"  # the gateway refused the address (egress)
    #: Never sent: the message cannot be rendered or the endpoint kind cannot be reached
    #: (a :class:`~gateway.errors.PermanentDeliveryError`); dead-lettered at once.
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at delivering a message to a subscription, as kept for dead letters."""

    attempt: int
    attempted_at_ms: int
    outcome: PushOutcome
    status_code: int | None = None
    error: str | None = None
    latency_ms: float | None = None

    def __post_init__(self) -> None:
        # Read back from the store or a dead letter's JSON as text: typed here, once, so that
        # every reader compares values (``is PushOutcome.TIMEOUT``), never strings.
        if type(self.outcome) is not PushOutcome:
            object.__setattr__(self, "outcome", PushOutcome(self.outcome))

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
    #: Whether its subscription had a TenantRateLimitPolicy on its pushes when it was claimed:
    #: the claim reads the limit's count only for those.
    rate_limited: bool = False


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
