"""Subscription operations of the control plane: Subscribe, Unsubscribe,
GetSubscriptionAttributes, SetSubscriptionAttributes, ListSubscriptionByTopic, with the XML API's
checks (:func:`gateway.topics.wire.new_subscription`, :mod:`gateway.topics.queue_targets`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from gateway.api.control import documents, policies
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.endpoint_filters import endpoint_filter
from gateway.api.control.params import Params, page_data
from gateway.errors.control import invalid
from gateway.protocol.endpoints import (
    Endpoint,
    HttpEndpoint,
    MailEndpoint,
    QueueEndpoint,
    SmsEndpoint,
    parse_endpoint,
)
from gateway.protocol.notify import NotifyStrategy
from gateway.store import ListQuery
from gateway.topics import wire
from gateway.topics.queue_targets import check_queue_targets
from gateway.topics.records import Subscription, subscription_resource

RESOURCE: Final = "subscription"
#: PushType -> the endpoint form it names; the service's other push types (mpush, dm, kafka)
#: reach services this gateway does not stand in for (docs/control-plane.md#operations).
PUSH_TYPES: Final[dict[str, type[Endpoint]]] = {
    "http": HttpEndpoint,
    "queue": QueueEndpoint,
    "email": MailEndpoint,
    "alisms": SmsEndpoint,
}


def _names(params: Params) -> tuple[str, str]:
    return params.name("topic", "TopicName"), params.name("subscription", "SubscriptionName")


def _check_push_type(params: Params, endpoint: str | None) -> None:
    push_type = params.optional("PushType")
    if push_type is None:
        return
    expected = PUSH_TYPES.get(push_type.lower())
    if expected is None:
        raise invalid("PushType", f"one of {', '.join(PUSH_TYPES)} here.")
    if endpoint and not isinstance(parse_endpoint(endpoint), expected):
        raise invalid("Endpoint", f"it is not an endpoint of PushType {push_type}.")


def subscribe(params: Params, ctx: ControlContext) -> Any:
    topic_name, name = _names(params)
    endpoint = params.optional("Endpoint")
    _check_push_type(params, endpoint)
    update = policies.dead_letter_update(params)
    subscription = wire.new_subscription(
        topic_name,
        name,
        endpoint=endpoint,
        filter_tag=params.optional("MessageTag"),
        strategy=params.optional("NotifyStrategy"),
        content_format=params.optional("NotifyContentFormat"),
        policy=update.apply(None, receive_count=False) if update else None,
        now=ctx.operations.store.topics.now_seconds(),
    )
    rate_limit = policies.rate_limit(params)
    check_queue_targets(subscription, ctx.settings, ctx.operations.store.queues.queue_exists)
    ctx.operations.store.topics.subscribe(subscription, rate_limit=rate_limit)  # one transaction
    return f"{ctx.settings.base_url}/topics/{topic_name}/subscriptions/{name}"


def set_subscription_attributes(params: Params, ctx: ControlContext) -> Any:
    topic_name, name = _names(params)
    topics = ctx.operations.store.topics
    current = topics.get_subscription(topic_name, name)
    strategy = params.optional("NotifyStrategy")
    update = policies.dead_letter_update(params)
    rate_limit = policies.rate_limit(params)
    policy = current.dead_letter_policy
    if update is not None:
        policy = update.apply(current.dead_letter_policy, receive_count=False)
        check_queue_targets(
            replace(current, dead_letter_policy=policy),
            ctx.settings,
            ctx.operations.store.queues.queue_exists,
        )
    if strategy is not None:
        topics.set_notify_strategy(topic_name, name, NotifyStrategy.parse(strategy))
    if policy != current.dead_letter_policy:
        topics.set_dead_letter_policy(topic_name, name, policy)
    if rate_limit is not None:
        resource = subscription_resource(topic_name, name)
        ctx.operations.store.control.set_rate_limit(RESOURCE, resource, rate_limit)
    return documents.DONE


def _document(subscription: Subscription, ctx: ControlContext) -> dict[str, Any]:
    resource = subscription_resource(subscription.topic_name, subscription.name)
    policy = ctx.operations.store.control.rate_limit(RESOURCE, resource)
    return documents.subscription(subscription, ctx.settings.account_id, policy)


def get_subscription_attributes(params: Params, ctx: ControlContext) -> Any:
    return _document(ctx.operations.store.topics.get_subscription(*_names(params)), ctx)


def unsubscribe(params: Params, ctx: ControlContext) -> Any:
    ctx.operations.store.topics.unsubscribe(*_names(params))
    return documents.DONE


def list_subscription_by_topic(params: Params, ctx: ControlContext) -> Any:
    topic_name = params.name("topic", "TopicName")
    number, size = params.page()
    endpoints = endpoint_filter(params)
    ctx.operations.store.topics.get_topic(topic_name)  # TopicNotExist for a missing topic
    query = ListQuery(params.optional("SubscriptionName") or "", (), (number - 1) * size, size)
    listing = ctx.operations.store.control.list_subscriptions(topic_name, query, endpoints)
    items = [_document(s, ctx) for s in listing.items]
    return page_data(items, listing.total, number, size)


OPERATIONS: Final[dict[str, Operation]] = {
    "Subscribe": subscribe,
    "Unsubscribe": unsubscribe,
    "GetSubscriptionAttributes": get_subscription_attributes,
    "SetSubscriptionAttributes": set_subscription_attributes,
    "ListSubscriptionByTopic": list_subscription_by_topic,
}
