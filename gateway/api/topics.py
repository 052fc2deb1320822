"""Topic, subscription and publish views: parse the request, call the operation
(:mod:`gateway.operations.topics`, :mod:`~gateway.operations.subscriptions`,
:mod:`~gateway.operations.publishing`), render the answer."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from flask import Blueprint, Response

from gateway.api.context import (
    caller,
    current_request,
    empty_response,
    gateway,
    is_meta_override,
    list_paging,
    operations,
    with_meta,
    xml_response,
)
from gateway.operations import publishing, subscriptions, topics
from gateway.protocol.listing import PageQuery
from gateway.protocol.names import validate_name
from gateway.protocol.xml import XmlNode, parse_document
from gateway.queues.dlq_policy import parse_policy
from gateway.topics import wire
from gateway.topics.records import MAX_MESSAGE_SIZE

blueprint = Blueprint("topics", __name__)


def _body_root(expected: str) -> Element:
    return parse_document(current_request().get_data(cache=True), expected)


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
        topics.set_topic_attributes(operations(), caller(), name, size, logging)
        return empty_response(204)
    size, logging = wire.topic_attributes(_body_root("Topic"), defaults=True)
    created = topics.create_topic(
        operations(), caller(), name, size or MAX_MESSAGE_SIZE, bool(logging)
    )
    return empty_response(201 if created else 204, location=_topic_url(name))


@blueprint.get("/topics/<name>")
def get_topic(name: str) -> Response:
    topic, count = topics.get_topic(operations(), caller(), name)
    return xml_response("Topic", wire.topic_nodes(topic, count))


@blueprint.delete("/topics/<name>")
def delete_topic(name: str) -> Response:
    topics.delete_topic(operations(), caller(), name)
    return empty_response(204)


@blueprint.get("/topics")
def list_topics() -> Response:
    page = topics.list_topics(operations(), caller(), PageQuery(*list_paging()))
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
    """Subscribe, or SetSubscriptionAttributes with ``?metaoverride=true`` (NotifyStrategy and
    the DlqPolicy only: :func:`~gateway.topics.wire.subscription_update`)."""
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    root = _body_root("Subscription")
    ops, who = operations(), caller()
    if is_meta_override():
        current = subscriptions.get_subscription(ops, who, topic_name, name)
        strategy = wire.subscription_update(root, current)
        subscriptions.set_subscription_attributes(
            ops, who, topic_name, name, strategy, parse_policy(root)
        )
        return empty_response(204)
    created = subscriptions.subscribe(ops, who, wire.parse_subscription(topic_name, name, root))
    return empty_response(201 if created else 204, _subscription_url(topic_name, name))


@blueprint.get("/topics/<topic_name>/subscriptions/<name>")
def get_subscription(topic_name: str, name: str) -> Response:
    subscription = subscriptions.get_subscription(operations(), caller(), topic_name, name)
    nodes = wire.subscription_nodes(subscription, gateway().settings.account_id)
    return xml_response("Subscription", nodes)


@blueprint.delete("/topics/<topic_name>/subscriptions/<name>")
def unsubscribe(topic_name: str, name: str) -> Response:
    subscriptions.unsubscribe(operations(), caller(), topic_name, name)
    return empty_response(204)


@blueprint.get("/topics/<topic_name>/subscriptions")
def list_subscriptions(topic_name: str) -> Response:
    query = PageQuery(*list_paging())
    page = subscriptions.list_subscriptions(operations(), caller(), topic_name, query)
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
