"""Subscription endpoints' health as operators see it (docs/delivery.md#endpoint-health): the
documents both the admin API and ``mns-gateway subscriptions health`` answer with, and the
override both set (force a breaker closed, hold it open for maintenance, or let it decide)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.admin.text import iso_utc
from gateway.breaker.state import Breaker, Override
from gateway.errors.mns import MNSError
from gateway.store.deliveries import DeliveryStore
from gateway.store.topics import TopicStore
from gateway.topics.records import subscription_names

#: The overrides an operator may ask for, as the API and the CLI spell them.
OVERRIDES: Mapping[str, Override | None] = {
    "closed": Override.CLOSED,
    "open": Override.OPEN,
    "auto": None,
}


def health_document(resource: str, breaker: Breaker, waiting: int) -> dict[str, Any]:
    topic, name = subscription_names(resource)
    return {
        "TopicName": topic,
        "SubscriptionName": name,
        "State": breaker.effective().value,
        "Override": breaker.override.value if breaker.override else None,
        "FailureRate": round(breaker.failure_rate(), 4),
        "Attempts": breaker.attempts,
        "Failures": breaker.failures,
        "WindowStart": breaker.window_start_ms or None,
        "AttemptsSkipped": waiting,
        # An operator's override decides, not the cool-down: no probe goes out of a circuit
        # held open, and one forced closed has nothing to probe.
        "NextProbeTime": None if breaker.override else breaker.next_probe_ms(),
        "ChangedAt": breaker.changed_ms or None,
    }


def health(deliveries: DeliveryStore, topic: str | None = None) -> dict[str, Any]:
    """Every subscription whose breaker is not simply closed and healthy (of ``topic``); those
    not listed are closed with no failure in their window."""
    kept, waiting = deliveries.breakers()
    documents = [
        health_document(resource, breaker, waiting.get(resource, 0))
        for resource, breaker in sorted(kept.items())
        if topic is None or subscription_names(resource)[0] == topic
    ]
    return {"Subscriptions": documents}


def subscription_health(
    topics: TopicStore, deliveries: DeliveryStore, topic: str, name: str
) -> dict[str, Any]:
    """One subscription's (``SubscriptionNotExist`` if there is none)."""
    topics.get_subscription(topic, name)
    resource = f"{topic}/{name}"
    kept, waiting = deliveries.breakers()
    return health_document(resource, kept.get(resource, Breaker()), waiting.get(resource, 0))


def override(
    topics: TopicStore, deliveries: DeliveryStore, topic: str, name: str, mode: str
) -> dict[str, Any]:
    """Set the override ``mode`` (closed, open or auto) on a subscription's breaker."""
    if mode not in OVERRIDES:
        raise MNSError("InvalidArgument", "The value of override should be closed, open or auto.")
    topics.get_subscription(topic, name)
    deliveries.override_breaker(topic, name, OVERRIDES[mode])
    return subscription_health(topics, deliveries, topic, name)


def describe(document: Mapping[str, Any]) -> str:
    """A listing (or one subscription) for people, times in ISO-8601 UTC."""
    entries = document.get("Subscriptions", [document])
    lines = [_line(entry) for entry in entries]
    return "\n".join(lines) if lines else "every subscription's endpoint circuit is closed"


def _line(entry: Mapping[str, Any]) -> str:
    line = (
        f"{entry['TopicName']}/{entry['SubscriptionName']}  {entry['State']}"
        f"  failure rate {entry['FailureRate']:.0%} of {entry['Attempts']}"
        f"  {entry['AttemptsSkipped']} waiting"
    )
    if entry["Override"]:
        line += f"  (override: {entry['Override']})"
    if entry["NextProbeTime"]:
        line += f"  next probe {iso_utc(entry['NextProbeTime'])}"
    return line
