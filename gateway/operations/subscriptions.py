"""Subscription operations: Subscribe, SetSubscriptionAttributes, GetSubscriptionAttributes,
Unsubscribe and ListSubscriptionByTopic, for every front end (the XML API, the control plane,
the console, the command line).

The queues a subscription sends to are checked here, once, whoever asks: a QueueEndpoint's queue
must exist (or a bridge reach it), the dead-letter queue must exist and not be the endpoint's
own queue (:mod:`gateway.topics.queue_targets`,
docs/delivery.md#queue-endpoints-checked-at-subscribe).
"""

from __future__ import annotations

from dataclasses import replace
from typing import overload

from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.listing import Page, PageQuery
from gateway.protocol.names import validate_name
from gateway.protocol.notify import NotifyStrategy
from gateway.queues.dlq_policy import PolicyUpdate
from gateway.store import EndpointFilter, Listing, ListQuery
from gateway.store.control import RateLimitPolicy
from gateway.topics.queue_targets import check_queue_targets
from gateway.topics.records import PolicyChange, Subscription


def _call(action: str, topic_name: str, name: str | None, caller: Caller) -> Call:
    validate_name("topic", topic_name)
    if name is not None:
        validate_name("subscription", name)
    return Call(action, Field.TOPIC_NAME, topic_name, caller)


def _check_queue_targets(ops: Operations, subscription: Subscription) -> None:
    check_queue_targets(subscription, ops.settings, ops.store.queues.queue_exists)


def subscribe(
    ops: Operations,
    caller: Caller,
    subscription: Subscription,
    *,
    rate_limit: RateLimitPolicy | None = None,
) -> bool:
    """Subscribe: whether the subscription is new (``False``: an identical one exists; a
    different one is 409 ``SubscriptionAlreadyExist``). It is created now, on the store's clock,
    whatever times it carried; its TenantRateLimitPolicy (the control plane's) is stored in the
    same transaction."""
    topic_name, name = subscription.topic_name, subscription.name

    def work(call: Call) -> bool:
        now = ops.store.topics.now_seconds()
        new = replace(subscription, create_time=now, last_modify_time=now)
        _check_queue_targets(ops, new)
        return ops.store.topics.subscribe(new, rate_limit=rate_limit)

    return ops.hooks.run(_call("Subscribe", topic_name, name, caller), work)


def set_subscription_attributes(
    ops: Operations,
    caller: Caller,
    topic_name: str,
    name: str,
    strategy: NotifyStrategy | None,
    policy: PolicyUpdate | None,
    *,
    rate_limit: RateLimitPolicy | None = None,
) -> None:
    """SetSubscriptionAttributes: the NotifyStrategy, the dead-letter policy's fields sent
    (applied to the current policy; MaxReceiveCount does not apply to pushes) and the
    TenantRateLimitPolicy change in one transaction; ``None``: unchanged. A policy that changes
    is checked as at Subscribe."""

    def work(call: Call) -> None:
        current = ops.store.topics.get_subscription(topic_name, name)
        change = None
        if policy is not None:
            updated = policy.apply(current.dead_letter_policy, receive_count=False)
            if updated != current.dead_letter_policy:
                _check_queue_targets(ops, replace(current, dead_letter_policy=updated))
                change = PolicyChange(updated)
        if strategy is None and change is None and rate_limit is None:
            return
        ops.store.topics.set_subscription_attributes(
            topic_name, name, strategy=strategy, policy=change, rate_limit=rate_limit
        )

    ops.hooks.run(_call("SetSubscriptionAttributes", topic_name, name, caller), work)


def get_subscription(ops: Operations, caller: Caller, topic_name: str, name: str) -> Subscription:
    """GetSubscriptionAttributes (404 ``SubscriptionNotExist``)."""
    return ops.hooks.run(
        _call("GetSubscriptionAttributes", topic_name, name, caller),
        lambda call: ops.store.topics.get_subscription(topic_name, name),
    )


def unsubscribe(ops: Operations, caller: Caller, topic_name: str, name: str) -> None:
    """Unsubscribe; a missing subscription is not an error."""
    ops.hooks.run(
        _call("Unsubscribe", topic_name, name, caller),
        lambda call: ops.store.topics.unsubscribe(topic_name, name),
    )


@overload
def list_subscriptions(
    ops: Operations, caller: Caller, topic_name: str, query: PageQuery
) -> Page[Subscription]: ...


@overload
def list_subscriptions(
    ops: Operations,
    caller: Caller,
    topic_name: str,
    query: ListQuery,
    *,
    endpoints: EndpointFilter | None = None,
) -> Listing[Subscription]: ...


def list_subscriptions(
    ops: Operations,
    caller: Caller,
    topic_name: str,
    query: PageQuery | ListQuery,
    *,
    endpoints: EndpointFilter | None = None,
) -> Page[Subscription] | Listing[Subscription]:
    """ListSubscriptionByTopic of an existing topic (404 ``TopicNotExist``): a page by marker
    (:class:`PageQuery`: the XML API, the console), or a numbered page filtered by endpoint
    (:class:`ListQuery`: the control plane)."""

    def work(call: Call) -> Page[Subscription] | Listing[Subscription]:
        topics = ops.store.topics
        if isinstance(query, PageQuery):
            return topics.list_subscriptions(topic_name, query.prefix, query.marker, query.limit)
        topics.get_topic(topic_name)  # the numbered listing's query does not look
        return ops.store.control.list_subscriptions(topic_name, query, endpoints)

    return ops.hooks.run(_call("ListSubscriptionByTopic", topic_name, None, caller), work)
