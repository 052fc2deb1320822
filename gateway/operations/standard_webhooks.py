"""A subscription's Standard Webhooks signatures, for every front end (the admin API, ``mns-gateway
subscriptions standard-webhooks``, the console): whether they are on, and the switch (on, off,
rotate; docs/delivery.md#standard-webhooks-signatures).

The secret is in the result only of ``on`` and ``rotate``, the moment it is made (or, for ``on``
when it was on already, asked for again); never in a status or the operation log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gateway.errors.mns import MNSError
from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.store.standard_webhooks import WebhookState

ACTIONS: Final = ("on", "off", "rotate")


@dataclass(frozen=True)
class WebhookSwitch:
    """A subscription's Standard Webhooks state, and the secret when one was just handed out."""

    topic_name: str
    subscription_name: str
    state: WebhookState
    secret: str | None = None


def webhook_status(ops: Operations, caller: Caller, topic: str, name: str) -> WebhookSwitch:
    """Whether they are on, and when a rotated-out secret stops signing; no secret."""

    def work(call: Call) -> WebhookSwitch:
        return WebhookSwitch(topic, name, ops.store.standard_webhooks.state(topic, name))

    return ops.hooks.run(Call("GetStandardWebhooks", Field.TOPIC_NAME, topic, caller), work)


def switch_webhooks(
    ops: Operations, caller: Caller, topic: str, name: str, action: str
) -> WebhookSwitch:
    """``on`` (the secret: a new one, or the one in use), ``off`` (every secret forgotten) or
    ``rotate`` (a new secret; the old one signs beside it for 24 hours)."""
    if action not in ACTIONS:
        raise MNSError("InvalidArgument", "The value of action should be on, off or rotate.")

    def work(call: Call) -> WebhookSwitch:
        secrets = ops.store.standard_webhooks
        if action == "off":
            return WebhookSwitch(topic, name, secrets.turn_off(topic, name))
        made = secrets.turn_on(topic, name) if action == "on" else secrets.rotate(topic, name)
        secret, state = made
        return WebhookSwitch(topic, name, state, secret)

    return ops.hooks.run(Call("SetStandardWebhooks", Field.TOPIC_NAME, topic, caller), work)
