"""Subscription endpoints' health, for every front end (the admin API, ``mns-gateway
subscriptions health|circuit``, the console): each endpoint's circuit breaker, and the
operator's override (force it closed, hold it open for maintenance, or let it decide;
docs/delivery.md#endpoint-health)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gateway.breaker.state import Breaker, Override
from gateway.errors.mns import MNSError
from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.topics.records import subscription_names, subscription_resource

#: The overrides an operator may ask for, as every front end spells them.
OVERRIDES: Final[Mapping[str, Override | None]] = {
    "closed": Override.CLOSED,
    "open": Override.OPEN,
    "auto": None,
}


@dataclass(frozen=True)
class EndpointHealth:
    """One subscription's breaker, and how many of its deliveries wait, due."""

    topic_name: str
    subscription_name: str
    breaker: Breaker
    waiting: int


def endpoint_health(
    ops: Operations, caller: Caller, topic: str | None = None
) -> list[EndpointHealth]:
    """Every subscription (of ``topic``) whose breaker is not simply closed and healthy, by
    name; those not listed are closed with no failure in their window."""

    def work(call: Call) -> list[EndpointHealth]:
        kept, waiting = ops.store.deliveries.breakers()
        found = []
        for resource, breaker in sorted(kept.items()):
            topic_name, name = subscription_names(resource)
            if topic is None or topic_name == topic:
                found.append(EndpointHealth(topic_name, name, breaker, waiting.get(resource, 0)))
        return found

    return ops.hooks.run(Call("EndpointHealth", Field.TOPIC_NAME, topic or "", caller), work)


def subscription_health(ops: Operations, caller: Caller, topic: str, name: str) -> EndpointHealth:
    """One subscription's (``SubscriptionNotExist`` if there is none)."""
    return ops.hooks.run(
        Call("EndpointHealth", Field.TOPIC_NAME, topic, caller),
        lambda call: _health(ops, topic, name),
    )


def override_circuit(
    ops: Operations, caller: Caller, topic: str, name: str, mode: str
) -> EndpointHealth:
    """Set the override ``mode`` (closed, open or auto) on a subscription's breaker."""
    if mode not in OVERRIDES:
        raise MNSError("InvalidArgument", "The value of override should be closed, open or auto.")

    def work(call: Call) -> EndpointHealth:
        ops.store.topics.get_subscription(topic, name)
        ops.store.deliveries.override_breaker(topic, name, OVERRIDES[mode])
        return _health(ops, topic, name)

    return ops.hooks.run(Call("OverrideCircuit", Field.TOPIC_NAME, topic, caller), work)


def _health(ops: Operations, topic: str, name: str) -> EndpointHealth:
    ops.store.topics.get_subscription(topic, name)
    resource = subscription_resource(topic, name)
    kept, waiting = ops.store.deliveries.breakers()
    return EndpointHealth(topic, name, kept.get(resource, Breaker()), waiting.get(resource, 0))
