"""A subscription's Standard Webhooks signatures as operators see them
(docs/delivery.md#standard-webhooks-signatures): the document the admin API answers with and the
command line prints; the secret only when the switch just handed one out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.operations.standard_webhooks import WebhookSwitch
from gateway.operator_documents.times import iso_utc


def document(switch: WebhookSwitch) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "TopicName": switch.topic_name,
        "SubscriptionName": switch.subscription_name,
        "StandardWebhooks": "on" if switch.state.enabled else "off",
        "PreviousSecretExpires": switch.state.previous_until_ms,
    }
    if switch.secret is not None:
        answer["Secret"] = switch.secret
    return answer


def describe(entry: Mapping[str, Any]) -> str:
    """For people: the secret alone on its own line (to copy), then the state."""
    name = f"{entry['TopicName']}/{entry['SubscriptionName']}"
    line = f"{name}  standard webhooks {entry['StandardWebhooks']}"
    if entry["PreviousSecretExpires"]:
        line += f"  previous secret signs until {iso_utc(entry['PreviousSecretExpires'])}"
    secret = entry.get("Secret")
    return f"{secret}\n{line}" if secret else line
