"""A subscription's Standard Webhooks signatures as operators switch them
(docs/delivery.md#standard-webhooks-signatures): the one switch the admin API, the CLI and the
console run, and the document they answer with.

The secret is in the answer only to ``on`` and ``rotate``, the moment it is made (or, for
``on`` when it was on already, asked for again); never in a listing or the operation log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gateway.admin.text import iso_utc
from gateway.errors.mns import MNSError
from gateway.store.standard_webhooks import StandardWebhookStore, WebhookState

ACTIONS: Final = ("on", "off", "rotate")


def document(
    topic: str, name: str, state: WebhookState, secret: str | None = None
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "TopicName": topic,
        "SubscriptionName": name,
        "StandardWebhooks": "on" if state.enabled else "off",
        "PreviousSecretExpires": state.previous_until_ms,
    }
    if secret is not None:
        answer["Secret"] = secret
    return answer


def status(store: StandardWebhookStore, topic: str, name: str) -> dict[str, Any]:
    """Whether they are on, and when a rotated-out secret stops signing; no secret."""
    return document(topic, name, store.state(topic, name))


def switch(store: StandardWebhookStore, topic: str, name: str, action: str) -> dict[str, Any]:
    """``on`` (the secret: a new one, or the one in use), ``off`` (every secret forgotten) or
    ``rotate`` (a new secret; the old one signs beside it for 24 hours)."""
    if action == "on":
        return document(topic, name, *_flipped(store.turn_on(topic, name)))
    if action == "off":
        return document(topic, name, store.turn_off(topic, name))
    if action == "rotate":
        return document(topic, name, *_flipped(store.rotate(topic, name)))
    raise MNSError("InvalidArgument", "The value of action should be on, off or rotate.")


def _flipped(made: tuple[str, WebhookState]) -> tuple[WebhookState, str]:
    secret, state = made
    return state, secret


def describe(entry: Mapping[str, Any]) -> str:
    """For people: the secret alone on its own line (to copy), then the state."""
    name = f"{entry['TopicName']}/{entry['SubscriptionName']}"
    line = f"{name}  standard webhooks {entry['StandardWebhooks']}"
    if entry["PreviousSecretExpires"]:
        line += f"  previous secret signs until {iso_utc(entry['PreviousSecretExpires'])}"
    secret = entry.get("Secret")
    return f"{secret}\n{line}" if secret else line
