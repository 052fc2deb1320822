"""The queues a subscription sends to, and what Subscribe checks of them (pure).

A QueueEndpoint names a queue of this gateway's own region and account, which must exist, or of
another one, which only a configured bridge reaches; a subscription's dead-letter queue is a
local queue that must exist and, for a queue subscription, must not be the queue it pushes to.
The service refuses such subscriptions at Subscribe
(docs/delivery.md#queue-endpoints-checked-at-subscribe).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from gateway.errors.mns import MNSError
from gateway.protocol.endpoints import QueueEndpoint, parse_endpoint
from gateway.queues.dlq_policy import check_not_own
from gateway.topics.records import Subscription


@dataclass(frozen=True, slots=True)
class QueueTargets:
    """Local queues that must exist for the subscription, with the error each one's absence is."""

    endpoint_queue: str | None = None
    dead_letter_queue: str | None = None

    def missing(self, exists: Collection[str]) -> MNSError | None:
        """The error for the first required queue not in ``exists``, if any."""
        if self.endpoint_queue and self.endpoint_queue not in exists:
            return MNSError(
                "EndpointInvalid",
                f"The queue {self.endpoint_queue} of the endpoint does not exist.",
            )
        if self.dead_letter_queue and self.dead_letter_queue not in exists:
            return MNSError(
                "InvalidArgument",
                f"The DeadLetterTargetQueue {self.dead_letter_queue} does not exist.",
            )
        return None

    @property
    def names(self) -> list[str]:
        return [name for name in (self.endpoint_queue, self.dead_letter_queue) if name]


def queue_targets(
    subscription: Subscription, *, region: str, account_id: str, bridges: Collection[str]
) -> QueueTargets:
    """The local queues ``subscription`` needs; a QueueEndpoint of another region or account
    without a bridge (``bridges``: ``region:account`` keys) is 400 ``EndpointInvalid``, a queue
    subscription whose dead-letter queue is its own queue 400 ``InvalidArgument``."""
    endpoint = parse_endpoint(subscription.endpoint)
    local = None
    if isinstance(endpoint, QueueEndpoint):
        owner = (endpoint.region, endpoint.account_id)
        if owner == (region, account_id):
            local = endpoint.queue_name
        elif f"{endpoint.region}:{endpoint.account_id}" not in bridges:
            raise MNSError(
                "EndpointInvalid",
                f"No queue service is reachable for {endpoint.region}:{endpoint.account_id}.",
            )
    policy = subscription.dead_letter_policy
    if local is not None:
        check_not_own(local, policy)
    return QueueTargets(local, policy.target_queue if policy else None)


class QueueHome(Protocol):
    """Where this gateway's own queues are, and which others it reaches (the settings: this
    model does not import them)."""

    @property
    def region(self) -> str: ...

    @property
    def account_id(self) -> str: ...

    @property
    def queue_bridges(self) -> Mapping[str, Mapping[str, str]]: ...


def check_queue_targets(
    subscription: Subscription, settings: QueueHome, queue_exists: Callable[[str], bool]
) -> None:
    """Raise what Subscribe answers when ``subscription`` needs a queue that is not there (or
    one :func:`queue_targets` refuses); the API and ``mns-gateway subscriptions`` both ask."""
    targets = queue_targets(
        subscription,
        region=settings.region,
        account_id=settings.account_id,
        bridges=settings.queue_bridges.keys(),
    )
    if (error := targets.missing({n for n in targets.names if queue_exists(n)})) is not None:
        raise error
