"""Subscription endpoints' circuit breakers on the topic's page: each subscription's state,
failure rate over the window, attempts skipped and next probe, and a form to force one closed,
hold it open for maintenance, or let it decide (docs/delivery.md#endpoint-health). The documents
and the override are those of the admin API and the CLI (:mod:`gateway.operations.endpoint_health`).
"""

from __future__ import annotations

from typing import Any

from flask import Response, request

from gateway.api.console.web import blueprint, done
from gateway.api.context import caller, operations
from gateway.operations import endpoint_health
from gateway.operator_documents.endpoint_health import health_document
from gateway.protocol.names import validate_name


def circuits(topic: str) -> dict[str, dict[str, Any]]:
    """The topic's subscriptions whose breaker is not simply closed and healthy, by name."""
    listed = endpoint_health.endpoint_health(operations(), caller(), topic)
    return {health.subscription_name: health_document(health) for health in listed}


def open_circuits() -> list[dict[str, Any]]:
    """Every subscription whose breaker is not closed (open, half-open, held open): what the
    overview flags and the topic list marks."""
    listed = endpoint_health.endpoint_health(operations(), caller())
    return [health_document(h) for h in listed if h.breaker.effective().value != "closed"]


def topics_with_open_circuits() -> set[str]:
    """The topics one of whose subscriptions' breakers is not closed (the topic list flags
    them)."""
    return {entry["TopicName"] for entry in open_circuits()}


@blueprint.post("/topics/<name>/circuit")
def topic_circuit(name: str) -> Response:
    validate_name("topic", name)
    subscription = request.form.get("subscription", "")
    validate_name("subscription", subscription)
    mode = request.form.get("override", "")
    health = endpoint_health.override_circuit(operations(), caller(), name, subscription, mode)
    entry = health_document(health)
    override = f" (override: {entry['Override']})" if entry["Override"] else ""
    return done(f"The circuit of {subscription} is {entry['State']}{override}.")
