"""The breaker's events: the operation-log record of a transition (``EndpointCircuit``), the
operator event published for it (docs/delivery.md#operator-events), and the guard that keeps
clients from forging one. Pure."""

from __future__ import annotations

import json

from gateway.breaker.state import Transition
from gateway.errors.mns import MNSError
from gateway.observability.operations import Action, Field
from gateway.topics.records import subscription_names


def circuit_record(transition: Transition, account_id: str) -> dict[str, object]:
    """The operation-log record of a transition (``Action`` EndpointCircuit)."""
    topic, subscription = subscription_names(transition.resource)
    record: dict[str, object] = {
        Field.TIME.value: transition.at_ms,
        Field.ACTION.value: Action.ENDPOINT_CIRCUIT.value,
        Field.ACCOUNT_ID.value: account_id,
        Field.TOPIC_NAME.value: topic,
        Field.SUBSCRIPTION_NAME.value: subscription,
        Field.CIRCUIT_STATE.value: transition.after.value,
        Field.PREVIOUS_CIRCUIT_STATE.value: transition.before.value,
        Field.FAILURE_RATE.value: round(transition.breaker.failure_rate(), 4),
    }
    next_probe = transition.breaker.next_probe_ms()
    if next_probe is not None:
        record[Field.NEXT_PROBE_TIME.value] = next_probe
    if transition.operator is not None:
        record[Field.CIRCUIT_OVERRIDE.value] = transition.operator
    return record


#: The tag of an operator event's message (docs/delivery.md#operator-events).
EVENT_TAG = "EndpointCircuit"


def refuse_forged_event(topic_name: str, tag: str | None, events_topic: str) -> None:
    """A client's message to the events topic may not carry :data:`EVENT_TAG`: on that topic
    the tag marks the gateway's own events (docs/delivery.md#operator-events), and a push's
    ``x-mns-message-tag`` and ``x-mns-topic-name`` are signed, so a receiver tells a genuine
    event from one any key published in its shape (issue 47)."""
    if events_topic and topic_name == events_topic and tag == EVENT_TAG:
        raise MNSError(
            "InvalidArgument",
            f"The MessageTag {EVENT_TAG} is reserved for the gateway's operator events on "
            f"topic {events_topic}.",
        )


def event_body(transition: Transition) -> str:
    """An operator event: the JSON body published for a transition
    (docs/delivery.md#operator-events)."""
    topic, subscription = subscription_names(transition.resource)
    breaker = transition.breaker
    return json.dumps(
        {
            "Event": EVENT_TAG,
            "TopicName": topic,
            "SubscriptionName": subscription,
            "State": transition.after.value,
            "PreviousState": transition.before.value,
            "Time": transition.at_ms,
            "FailureRate": round(breaker.failure_rate(), 4),
            "Attempts": breaker.attempts,
            "Failures": breaker.failures,
            "NextProbeTime": breaker.next_probe_ms(),
            "Override": breaker.override.value if breaker.override else None,
        }
    )
