"""Subscription operations of the control plane: Subscribe, Unsubscribe,
GetSubscriptionAttributes, SetSubscriptionAttributes, ListSubscriptionByTopic: its parameters
parsed with the XML API's field checks (:func:`gateway.topics.wire.new_subscription`), then the
operations of every front end (:mod:`gateway.operations.subscriptions`, which check the queue
targets once)."""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control import documents, policies
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.endpoint_filters import endpoint_filter
from gateway.api.control.params import Params, page_data
from gateway.errors.control import invalid
from gateway.operations import subscriptions as operations
from gateway.operations import tags
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
    )
    rate_limit = policies.rate_limit(params)
    operations.subscribe(ctx.operations, ctx.caller, subscription, rate_limit=rate_limit)
    return f"{ctx.settings.base_url}/topics/{topic_name}/subscriptions/{name}"


def set_subscription_attributes(params: Params, ctx: ControlContext) -> Any:
    topic_name, name = _names(params)
    strategy = params.optional("NotifyStrategy")
    update = policies.dead_letter_update(params)
    rate_limit = policies.rate_limit(params)
    operations.set_subscription_attributes(
        ctx.operations,
        ctx.caller,
        topic_name,
        name,
        NotifyStrategy.parse(strategy) if strategy is not None else None,
        update,
        rate_limit=rate_limit,
    )
    return documents.DONE


def _documents(subscriptions: list[Subscription], ctx: ControlContext) -> list[dict[str, Any]]:
    resources = [subscription_resource(s.topic_name, s.name) for s in subscriptions]
    limits = tags.extras(ctx.operations, ctx.caller, RESOURCE, resources).rate_limits
    account = ctx.settings.account_id
    return [
        documents.subscription(subscription, account, limits.get(resource))
        for subscription, resource in zip(subscriptions, resources, strict=True)
    ]


def get_subscription_attributes(params: Params, ctx: ControlContext) -> Any:
    found = operations.get_subscription(ctx.operations, ctx.caller, *_names(params))
    return _documents([found], ctx)[0]


def unsubscribe(params: Params, ctx: ControlContext) -> Any:
    operations.unsubscribe(ctx.operations, ctx.caller, *_names(params))
    return documents.DONE


def list_subscription_by_topic(params: Params, ctx: ControlContext) -> Any:
    topic_name = params.name("topic", "TopicName")
    number, size = params.page()
    endpoints = endpoint_filter(params)
    query = ListQuery(params.optional("SubscriptionName") or "", (), (number - 1) * size, size)
    listing = operations.list_subscriptions(
        ctx.operations, ctx.caller, topic_name, query, endpoints=endpoints
    )
    return page_data(_documents(list(listing.items), ctx), listing.total, number, size)


OPERATIONS: Final[dict[str, Operation]] = {
    "Subscribe": subscribe,
    "Unsubscribe": unsubscribe,
    "GetSubscriptionAttributes": get_subscription_attributes,
    "SetSubscriptionAttributes": set_subscription_attributes,
    "ListSubscriptionByTopic": list_subscription_by_topic,
}
