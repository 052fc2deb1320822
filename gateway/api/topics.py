"""Topic, subscription and publish views: parse the request, call the store, render the answer."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from xml.etree.ElementTree import Element

from flask import Blueprint, Response, request

from gateway.api.context import (
    empty_response,
    gateway,
    is_meta_override,
    list_paging,
    log_operations,
    xml_response,
)
from gateway.delivery.formats import ContentFormat
from gateway.delivery.retry import NotifyStrategy
from gateway.model import TOPIC_MESSAGE_RETENTION_SECONDS, Subscription, Topic, TopicMessage
from gateway.oplog import Action, Field
from gateway.protocol.endpoints import parse_endpoint
from gateway.protocol.errors import MNSError
from gateway.protocol.names import bool_attribute, int_attribute, render_bool, validate_name
from gateway.protocol.xml import XmlNode, child, child_text, children, local_name, parse_document

blueprint = Blueprint("topics", __name__)

MAX_TAG_LENGTH = 16


def _body_root(expected: str) -> Element:
    return parse_document(request.get_data(cache=True), expected)


def _topic_url(name: str) -> str:
    return f"{gateway().settings.base_url}/topics/{name}"


def _subscription_url(topic: str, name: str) -> str:
    return f"{_topic_url(topic)}/subscriptions/{name}"


def _topic_attributes(root: Element, *, defaults: bool) -> tuple[int | None, bool | None]:
    size = child_text(root, "MaximumMessageSize")
    logging = child_text(root, "LoggingEnabled")
    return (
        int_attribute(size, "MaximumMessageSize", 1024, 65536, 65536 if defaults else None),
        bool_attribute(logging, "LoggingEnabled", False if defaults else None),
    )


@blueprint.put("/topics/<name>")
def put_topic(name: str) -> Response:
    """CreateTopic, or SetTopicAttributes with ``?metaoverride=true``."""
    validate_name("topic", name)
    store = gateway().store
    if is_meta_override():
        size, logging = _topic_attributes(_body_root("Topic"), defaults=False)
        store.set_topic_attributes(name, size, logging)
        return empty_response(204)
    size, logging = _topic_attributes(_body_root("Topic"), defaults=True)
    created = store.create_topic(name, size or 65536, bool(logging))
    return empty_response(201 if created else 204, location=_topic_url(name))


def _topic_nodes(topic: Topic, message_count: int) -> list[XmlNode]:
    return [
        ("TopicName", topic.name),
        ("CreateTime", str(topic.create_time)),
        ("LastModifyTime", str(topic.last_modify_time)),
        ("MaximumMessageSize", str(topic.maximum_message_size)),
        ("MessageRetentionPeriod", str(TOPIC_MESSAGE_RETENTION_SECONDS)),
        ("MessageCount", str(message_count)),
        ("LoggingEnabled", render_bool(topic.logging_enabled)),
    ]


@blueprint.get("/topics/<name>")
def get_topic(name: str) -> Response:
    validate_name("topic", name)
    topic, count = gateway().store.get_topic(name)
    return xml_response("Topic", _topic_nodes(topic, count))


@blueprint.delete("/topics/<name>")
def delete_topic(name: str) -> Response:
    validate_name("topic", name)
    gateway().store.delete_topic(name)
    return empty_response(204)


@blueprint.get("/topics")
def list_topics() -> Response:
    prefix, marker, limit = list_paging()
    with_meta = request.headers.get("x-mns-with-meta", "").lower() == "true"
    page = gateway().store.list_topics(prefix, marker, limit)
    nodes: list[XmlNode] = []
    for topic in page.items:
        entry: list[XmlNode] = [("TopicURL", _topic_url(topic.name))]
        if with_meta:
            entry += [(k, v) for k, v in _topic_nodes(topic, 0) if k != "MessageCount"]
        nodes.append(("Topic", entry))
    if page.next_marker:
        nodes.append(("NextMarker", page.next_marker))
    return xml_response("Topics", nodes)


def _parse_subscription(topic_name: str, name: str, root: Element, now: int) -> Subscription:
    endpoint = (child_text(root, "Endpoint") or "").strip()
    if not endpoint:
        raise MNSError("EndpointInvalid", "The Endpoint of a subscription is required.")
    parse_endpoint(endpoint)
    filter_tag = child_text(root, "FilterTag")
    if filter_tag is not None and not 1 <= len(filter_tag) <= MAX_TAG_LENGTH:
        raise MNSError("InvalidArgument", "The length of filter tag should be between 1 and 16.")
    return Subscription(
        topic_name=topic_name,
        name=name,
        endpoint=endpoint,
        filter_tag=filter_tag,
        notify_strategy=_strategy(child_text(root, "NotifyStrategy")),
        notify_content_format=_content_format(child_text(root, "NotifyContentFormat")),
        create_time=now,
        last_modify_time=now,
    )


def _strategy(value: str | None) -> str:
    try:
        return NotifyStrategy.parse(value).value if value else NotifyStrategy.BACKOFF_RETRY.value
    except ValueError as exc:
        raise MNSError("InvalidArgument", f"Unknown NotifyStrategy {value!r}.") from exc


def _content_format(value: str | None) -> str:
    try:
        return ContentFormat.parse(value).value if value else ContentFormat.XML.value
    except ValueError as exc:
        raise MNSError("InvalidArgument", f"Unknown NotifyContentFormat {value!r}.") from exc


@blueprint.put("/topics/<topic_name>/subscriptions/<name>")
def put_subscription(topic_name: str, name: str) -> Response:
    """Subscribe, or SetSubscriptionAttributes (NotifyStrategy only) with ``?metaoverride=true``."""
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    store = gateway().store
    root = _body_root("Subscription")
    if is_meta_override():
        strategy = child_text(root, "NotifyStrategy")
        if strategy is not None:
            store.set_notify_strategy(topic_name, name, _strategy(strategy))
        else:
            store.get_subscription(topic_name, name)
        return empty_response(204)
    subscription = _parse_subscription(topic_name, name, root, store.now_seconds())
    created = store.subscribe(subscription)
    return empty_response(201 if created else 204, _subscription_url(topic_name, name))


@blueprint.get("/topics/<topic_name>/subscriptions/<name>")
def get_subscription(topic_name: str, name: str) -> Response:
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    sub = gateway().store.get_subscription(topic_name, name)
    account = gateway().settings.account_id
    nodes: list[XmlNode] = [
        ("SubscriptionName", sub.name),
        ("Subscriber", account),
        ("TopicOwner", account),
        ("TopicName", sub.topic_name),
        ("Endpoint", sub.endpoint),
        ("NotifyStrategy", sub.notify_strategy),
        ("NotifyContentFormat", sub.notify_content_format),
        ("CreateTime", str(sub.create_time)),
        ("LastModifyTime", str(sub.last_modify_time)),
    ]
    if sub.filter_tag is not None:
        nodes.insert(5, ("FilterTag", sub.filter_tag))
    return xml_response("Subscription", nodes)


@blueprint.delete("/topics/<topic_name>/subscriptions/<name>")
def unsubscribe(topic_name: str, name: str) -> Response:
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    gateway().store.unsubscribe(topic_name, name)
    return empty_response(204)


@blueprint.get("/topics/<topic_name>/subscriptions")
def list_subscriptions(topic_name: str) -> Response:
    validate_name("topic", topic_name)
    prefix, marker, limit = list_paging()
    page = gateway().store.list_subscriptions(topic_name, prefix, marker, limit)
    nodes: list[XmlNode] = [
        ("Subscription", [("SubscriptionURL", _subscription_url(topic_name, sub.name))])
        for sub in page.items
    ]
    if page.next_marker:
        nodes.append(("NextMarker", page.next_marker))
    return xml_response("Subscriptions", nodes)


def _properties(root: Element, container: str, item: str) -> list[dict[str, str]]:
    node = child(root, container)
    if node is None:
        return []
    return [{local_name(f): f.text or "" for f in entry} for entry in children(node, item)]


def _message_attributes(root: Element) -> dict[str, Any]:
    """MessageAttributes, UserProperties, SystemProperties, MessageGroupId as sent."""
    attributes: dict[str, Any] = {}
    node = child(root, "MessageAttributes")
    if node is not None:
        direct: dict[str, str] = {}
        for entry in node:
            text = (entry.text or "").strip()
            try:
                json.loads(text)
            except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
                raise MNSError("InvalidArgument", f"{local_name(entry)} must be JSON.") from exc
            direct[local_name(entry)] = text
        attributes["MessageAttributes"] = direct
    for container, item in (
        ("UserProperties", "PropertyValue"),
        ("SystemProperties", "SystemPropertyValue"),
    ):
        if values := _properties(root, container, item):
            attributes[container] = values
    group = child_text(root, "MessageGroupId")
    if group:
        attributes["MessageGroupId"] = group
    return attributes


def _parse_message(topic_name: str, root: Element, now_ms: int) -> TopicMessage:
    body = child_text(root, "MessageBody")
    if body is None:
        raise MNSError("InvalidArgument", "MessageBody is required.")
    tag = child_text(root, "MessageTag")
    if tag is not None and len(tag) > MAX_TAG_LENGTH:
        raise MNSError("InvalidArgument", "The length of message tag should not exceed 16.")
    return TopicMessage(
        id=gateway().store.new_message_id(now_ms),
        topic_name=topic_name,
        body=body,
        body_md5=hashlib.md5(body.encode("utf-8")).hexdigest().upper(),
        publish_time_ms=now_ms,
        tag=tag or None,
        attributes=_message_attributes(root),
    )


@blueprint.post("/topics/<topic_name>/messages")
def publish_message(topic_name: str) -> Response:
    validate_name("topic", topic_name)
    store = gateway().store
    message = _parse_message(topic_name, _body_root("Message"), store.now_ms())
    published = store.publish(message)
    if published.deliveries and (worker := gateway().services.get("delivery")) is not None:
        worker.wake()
    log_operations(
        published.logging_enabled,
        Field.TOPIC_NAME,
        topic_name,
        lambda facts: [
            facts.record(Action.PUBLISH_MESSAGE, MessageId=message.id, Time=message.publish_time_ms)
        ],
    )
    nodes: list[XmlNode] = [("MessageId", message.id), ("MessageBodyMD5", message.body_md5)]
    if group := message.attributes.get("MessageGroupId"):
        nodes.append(("MessageGroupId", group))
    return xml_response("Message", nodes, status=201)
