"""Subscription endpoints' health as operators see it (docs/delivery.md#endpoint-health): the
documents the admin API answers with, ``mns-gateway subscriptions health`` prints and the console
shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.operations.endpoint_health import EndpointHealth
from gateway.operator_documents.times import iso_utc


def health_document(health: EndpointHealth) -> dict[str, Any]:
    breaker = health.breaker
    return {
        "TopicName": health.topic_name,
        "SubscriptionName": health.subscription_name,
        "State": breaker.effective().value,
        "Override": breaker.override.value if breaker.override else None,
        "FailureRate": round(breaker.failure_rate(), 4),
        "Attempts": breaker.attempts,
        "Failures": breaker.failures,
        "WindowStart": breaker.window_start_ms or None,
        "AttemptsSkipped": health.waiting,
        # An operator's override decides, not the cool-down: no probe goes out of a circuit
        # held open, and one forced closed has nothing to probe.
        "NextProbeTime": None if breaker.override else breaker.next_probe_ms(),
        "ChangedAt": breaker.changed_ms or None,
    }


def listing(found: Sequence[EndpointHealth]) -> dict[str, Any]:
    return {"Subscriptions": [health_document(health) for health in found]}


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
