"""Topic, subscription and publish views: parse the request, call the store, render the answer."""

from __future__ import annotations

from dataclasses import replace
from xml.etree.ElementTree import Element

from flask import Blueprint, Response, request

from gateway.api.context import (
    caller,
    empty_response,
    gateway,
    is_meta_override,
    list_paging,
    operations,
    with_meta,
    xml_response,
)
from gateway.operations import publishing
from gateway.protocol.names import validate_name
from gateway.protocol.xml import XmlNode, parse_document
from gateway.store.topics import TopicStore
from gateway.topics import wire
from gateway.topics.queue_targets import check_queue_targets
from gateway.topics.records import MAX_MESSAGE_SIZE, Subscription

blueprint = Blueprint("topics", __name__)


def _topics() -> TopicStore:
    return gateway().store.topics


def _body_root(expected: str) -> Element:
    return parse_document(request.get_data(cache=True), expected)


def _topic_url(name: str) -> str:
    return f"{gateway().settings.base_url}/topics/{name}"


def _subscription_url(topic: str, name: str) -> str:
    return f"{_topic_url(topic)}/subscriptions/{name}"


@blueprint.put("/topics/<name>")
def put_topic(name: str) -> Response:
    """CreateTopic, or SetTopicAttributes with ``?metaoverride=true``."""
    validate_name("topic", name)
    if is_meta_override():
        size, logging = wire.topic_attributes(_body_root("Topic"), defaults=False)
        _topics().set_topic_attributes(name, size, logging)
        return empty_response(204)
    size, logging = wire.topic_attributes(_body_root("Topic"), defaults=True)
    created = _topics().create_topic(name, size or MAX_MESSAGE_SIZE, bool(logging))
    return empty_response(201 if created else 204, location=_topic_url(name))


@blueprint.get("/topics/<name>")
def get_topic(name: str) -> Response:
    validate_name("topic", name)
    topic, count = _topics().get_topic(name)
    return xml_response("Topic", wire.topic_nodes(topic, count))


@blueprint.delete("/topics/<name>")
def delete_topic(name: str) -> Response:
    validate_name("topic", name)
    _topics().delete_topic(name)
    return empty_response(204)


@blueprint.get("/topics")
def list_topics() -> Response:
    prefix, marker, limit = list_paging()
    page = _topics().list_topics(prefix, marker, limit)
    nodes: list[XmlNode] = []
    for topic in page.items:
        # The name beside the URL: the service's entries carry it, and clients look entries
        # up by it (docs/protocol.md#listing); with meta it is among the attributes.
        entry: list[XmlNode] = [("TopicURL", _topic_url(topic.name))]
        entry += wire.topic_nodes(topic, None) if with_meta() else [("TopicName", topic.name)]
        nodes.append(("Topic", entry))
    if page.next_marker:
        nodes.append(("NextMarker", page.next_marker))
    return xml_response("Topics", nodes)


@blueprint.put("/topics/<topic_name>/subscriptions/<name>")
def put_subscription(topic_name: str, name: str) -> Response:
    """Subscribe, or SetSubscriptionAttributes with ``?metaoverride=true`` (NotifyStrategy only:
    :func:`~gateway.topics.wire.subscription_update`)."""
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    root = _body_root("Subscription")
    if is_meta_override():
        current = _topics().get_subscription(topic_name, name)
        strategy = wire.subscription_update(root, current)
        if strategy is not None:
            _topics().set_notify_strategy(topic_name, name, strategy)
        policy = wire.subscription_policy(root, current.dead_letter_policy)
        if policy != current.dead_letter_policy:
            _check_queue_targets(replace(current, dead_letter_policy=policy))
            _topics().set_dead_letter_policy(topic_name, name, policy)
        return empty_response(204)
    created = subscribe(topic_name, name, root)
    return empty_response(201 if created else 204, _subscription_url(topic_name, name))


def subscribe(topic_name: str, name: str, root: Element) -> bool:
    """Subscribe from a ``<Subscription>`` element (the web console's form builds one): parsed,
    its queue targets checked, stored; whether it is new."""
    subscription = wire.parse_subscription(topic_name, name, root, _topics().now_seconds())
    _check_queue_targets(subscription)
    return _topics().subscribe(subscription)


def _check_queue_targets(subscription: Subscription) -> None:
    """Refuse a QueueEndpoint no queue answers for, and a dead-letter queue that is missing or
    is the subscription's own queue (docs/delivery.md#queue-endpoints-checked-at-subscribe)."""
    check_queue_targets(subscription, gateway().settings, gateway().store.queues.queue_exists)


@blueprint.get("/topics/<topic_name>/subscriptions/<name>")
def get_subscription(topic_name: str, name: str) -> Response:
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    subscription = _topics().get_subscription(topic_name, name)
    nodes = wire.subscription_nodes(subscription, gateway().settings.account_id)
    return xml_response("Subscription", nodes)


@blueprint.delete("/topics/<topic_name>/subscriptions/<name>")
def unsubscribe(topic_name: str, name: str) -> Response:
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    _topics().unsubscribe(topic_name, name)
    return empty_response(204)


@blueprint.get("/topics/<topic_name>/subscriptions")
def list_subscriptions(topic_name: str) -> Response:
    validate_name("topic", topic_name)
    prefix, marker, limit = list_paging()
    page = _topics().list_subscriptions(topic_name, prefix, marker, limit)
    account_id = gateway().settings.account_id
    nodes: list[XmlNode] = []
    for sub in page.items:
        entry: list[XmlNode] = [("SubscriptionURL", _subscription_url(topic_name, sub.name))]
        if with_meta():
            entry += wire.subscription_nodes(sub, account_id)
        nodes.append(("Subscription", entry))
    if page.next_marker:
        nodes.append(("NextMarker", page.next_marker))
    return xml_response("Subscriptions", nodes)


@blueprint.post("/topics/<topic_name>/messages")
def publish_message(topic_name: str) -> Response:
    validate_name("topic", topic_name)
    draft = wire.parse_draft(topic_name, _body_root("Message"))
    message = publishing.publish(operations(), caller(), draft)
    return xml_response("Message", wire.published_nodes(message), status=201)
