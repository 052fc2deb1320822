"""Rate limits of queues and subscriptions (TenantRateLimitPolicy: Enabled,
MaxReceivesPerSecond), set from the queue's page and the topic's page.

A form is read by the control plane's own parser (:func:`gateway.api.control.policies.rate_limit`,
given the JSON a control-plane client sends) and set by the control plane's operations,
SetQueueAttributes and SetSubscriptionAttributes with the policy alone
(:mod:`gateway.operations.queues`, :mod:`gateway.operations.subscriptions`), so the bounds,
the refusal's text and a missing queue's or subscription's error are the control plane's. Like
them it writes no operation-log record: the operation log holds message operations
(docs/protocol.md#operation-log-fields), not changes of attributes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from flask import Response, request

from gateway.api.console.refused import refused_page
from gateway.api.console.web import back_to, blueprint, done
from gateway.api.context import caller, operations
from gateway.api.control import policies
from gateway.api.control.params import Params
from gateway.errors.control import ControlError
from gateway.operations import queues, subscriptions
from gateway.protocol.names import validate_name
from gateway.queues.records import QueueChanges
from gateway.store import RateLimitPolicy


def policy_of(form: Mapping[str, str]) -> RateLimitPolicy:
    """The form as the TenantRateLimitPolicy a control-plane client would send: Enabled from
    the checkbox, MaxReceivesPerSecond as typed (left out when empty)."""
    fields: dict[str, object] = {"Enabled": form.get("rate_enabled") == "true"}
    rate = form.get("max_receives_per_second", "").strip()
    if rate:
        fields["MaxReceivesPerSecond"] = rate
    policy = policies.rate_limit(Params({policies.RATE_LIMIT: json.dumps(fields)}))
    assert policy is not None  # a policy with Enabled is never the empty one
    return policy


def described(policy: RateLimitPolicy | None) -> str:
    if policy is None:
        return "none"
    rate = f"{policy.max_per_second}/s" if policy.max_per_second else "no rate"
    return f"{rate}, {'enabled' if policy.enabled else 'disabled'}"


@blueprint.errorhandler(ControlError)
def control_error(error: ControlError) -> Response:
    """A refused policy shows its page again with the control plane's code and message and
    what was typed."""
    return refused_page(back_to(), error.code, error.message, error.status)


@blueprint.post("/queues/<name>/rate-limit")
def queue_rate_limit(name: str) -> Response:
    validate_name("queue", name)
    policy = policy_of(request.form)
    queues.set_queue_attributes(operations(), caller(), name, QueueChanges(), rate_limit=policy)
    return done(f"Rate limit of {name}: {described(policy)}.")


@blueprint.post("/topics/<name>/rate-limit")
def subscription_rate_limit(name: str) -> Response:
    validate_name("topic", name)
    subscription = request.form.get("subscription", "").strip()
    validate_name("subscription", subscription)
    policy = policy_of(request.form)
    subscriptions.set_subscription_attributes(
        operations(), caller(), name, subscription, None, None, rate_limit=policy
    )
    return done(f"Rate limit of {subscription}: {described(policy)}.")
