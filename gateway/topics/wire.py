"""The topic model's XML: topic attributes, subscriptions and published messages in, their
documents out.

Parsing turns request elements into :mod:`gateway.topics.records` values, raising ``MNSError``
for bad input; rendering turns records into nodes for
:func:`gateway.protocol.xml.render_document`. Element order follows the API reference's examples.
"""

from __future__ import annotations

import json
from typing import Any
from xml.etree.ElementTree import Element

from gateway.errors.mns import MNSError
from gateway.protocol.endpoints import Endpoint, MailEndpoint, parse_endpoint
from gateway.protocol.names import bool_attribute, int_attribute, render_bool, validate_name
from gateway.protocol.notify import ContentFormat, NotifyStrategy
from gateway.protocol.properties import message_body, parse_properties
from gateway.protocol.text import storable
from gateway.protocol.xml import (
    Fields,
    XmlNode,
    child,
    child_text,
    element_fields,
    local_name,
    unexpected_element,
)
from gateway.queues import dlq_policy as dead_letters
from gateway.topics.direct import validate_direct_attributes
from gateway.topics.records import (
    MAX_MESSAGE_SIZE,
    MAX_TAG_LENGTH,
    MIN_MESSAGE_SIZE,
    TOPIC_MESSAGE_RETENTION_SECONDS,
    PublishDraft,
    Subscription,
    Topic,
    TopicMessage,
)


# topics ---------------------------------------------------------------------------------------
def topic_attributes(root: Element, *, defaults: bool) -> tuple[int | None, bool | None]:
    """MaximumMessageSize and LoggingEnabled; with ``defaults`` the service's default stands in
    for an absent one (CreateTopic), else ``None`` (SetTopicAttributes changes only those sent)."""
    size = child_text(root, "MaximumMessageSize")
    logging = child_text(root, "LoggingEnabled")
    return (
        int_attribute(
            size,
            "MaximumMessageSize",
            MIN_MESSAGE_SIZE,
            MAX_MESSAGE_SIZE,
            MAX_MESSAGE_SIZE if defaults else None,
        ),
        bool_attribute(logging, "LoggingEnabled", False if defaults else None),
    )


def topic_nodes(topic: Topic, message_count: int | None) -> list[XmlNode]:
    """GetTopicAttributes' elements (``message_count`` ``None``: ListTopic's meta, without it)."""
    nodes: list[XmlNode] = [
        ("TopicName", topic.name),
        ("CreateTime", str(topic.create_time)),
        ("LastModifyTime", str(topic.last_modify_time)),
        ("MaximumMessageSize", str(topic.maximum_message_size)),
        ("MessageRetentionPeriod", str(TOPIC_MESSAGE_RETENTION_SECONDS)),
    ]
    if message_count is not None:
        nodes.append(("MessageCount", str(message_count)))
    return [*nodes, ("LoggingEnabled", render_bool(topic.logging_enabled))]


# subscriptions --------------------------------------------------------------------------------
def parse_strategy(value: str | None) -> NotifyStrategy:
    return NotifyStrategy.parse(value) if value else NotifyStrategy.BACKOFF_RETRY


def content_format_for(endpoint: Endpoint, value: str | None) -> ContentFormat:
    """NotifyContentFormat: XML by default; a MailEndpoint takes SIMPLIFIED only, its default
    too (docs/protocol.md#subscriptions)."""
    mail = isinstance(endpoint, MailEndpoint)
    if not value:
        return ContentFormat.SIMPLIFIED if mail else ContentFormat.XML
    content_format = ContentFormat.parse(value)
    if mail and content_format is not ContentFormat.SIMPLIFIED:
        raise MNSError(
            "InvalidArgument",
            "A MailEndpoint supports NotifyContentFormat SIMPLIFIED only, "
            f"not {content_format.value}.",
        )
    return content_format


def parse_subscription(topic_name: str, name: str, root: Element, now: int = 0) -> Subscription:
    """A Subscribe body as the subscription to create (its times are the operation's)."""
    fields = element_fields(root)
    return subscription_of(topic_name, name, fields, subscription_policy(root, None), now)


def subscription_of(
    topic_name: str,
    name: str,
    fields: Fields,
    policy: dead_letters.DeadLetterPolicy | None,
    now: int = 0,
) -> Subscription:
    """Subscribe's Endpoint, FilterTag, NotifyStrategy and NotifyContentFormat among
    ``fields``, checked (:func:`new_subscription`): the XML body's and the console form's."""
    return new_subscription(
        topic_name,
        name,
        endpoint=fields("Endpoint"),
        filter_tag=fields("FilterTag"),
        strategy=fields("NotifyStrategy"),
        content_format=fields("NotifyContentFormat"),
        policy=policy,
        now=now,
    )


def new_subscription(
    topic_name: str,
    name: str,
    *,
    endpoint: str | None,
    filter_tag: str | None,
    strategy: str | None,
    content_format: str | None,
    policy: dead_letters.DeadLetterPolicy | None,
    now: int = 0,
) -> Subscription:
    """Subscribe's fields as sent, checked: the rules of every front end (the XML body's
    elements, the control plane's parameters, the console's form). The subscription is created
    at the time :func:`gateway.operations.subscriptions.subscribe` gives it."""
    validate_name("topic", topic_name)
    validate_name("subscription", name)
    endpoint = storable((endpoint or "").strip(), "Endpoint")
    if filter_tag is not None:
        storable(filter_tag, "FilterTag")
    if not endpoint:
        raise MNSError("EndpointInvalid", "The Endpoint of a subscription is required.")
    parsed = parse_endpoint(endpoint)
    if filter_tag is not None and not 1 <= len(filter_tag) <= MAX_TAG_LENGTH:
        raise MNSError(
            "InvalidArgument", f"The length of filter tag should be between 1 and {MAX_TAG_LENGTH}."
        )
    return Subscription(
        topic_name=topic_name,
        name=name,
        endpoint=endpoint,
        filter_tag=filter_tag,
        notify_strategy=parse_strategy(strategy),
        notify_content_format=content_format_for(parsed, content_format),
        create_time=now,
        last_modify_time=now,
        dead_letter_policy=policy,
    )


def subscription_policy(
    root: Element, current: dead_letters.DeadLetterPolicy | None
) -> dead_letters.DeadLetterPolicy | None:
    """A Subscribe or SetSubscriptionAttributes ``<DlqPolicy>`` applied to ``current``: a
    DeadLetterTargetQueue and Enabled; MaxReceiveCount does not apply to pushes and is
    ignored (docs/delivery.md#subscription-dead-letter-queues)."""
    update = dead_letters.parse_policy(root)
    return current if update is None else update.apply(current, receive_count=False)


#: What SetSubscriptionAttributes changes; the other elements of a subscription are fixed.
#: DlqPolicy: docs/delivery.md#subscription-dead-letter-queues.
SETTABLE_SUBSCRIPTION_ELEMENTS = ("NotifyStrategy", dead_letters.ELEMENT)


def _fixed_values(subscription: Subscription) -> dict[str, str]:
    return {
        "Endpoint": subscription.endpoint,
        "FilterTag": subscription.filter_tag or "",
        "NotifyContentFormat": subscription.notify_content_format.value,
    }


def subscription_update(root: Element, current: Subscription) -> NotifyStrategy | None:
    """The NotifyStrategy a SetSubscriptionAttributes body sets, ``None`` if it sets none.

    Only NotifyStrategy (and the dead-letter queue, :func:`subscription_policy`) can change
    (docs/protocol.md#subscriptions). A fixed element sent with
    the subscription's own value changes nothing and passes (clients re-send what they read);
    with another value, or an element a subscription does not have, the request is refused
    rather than half applied.
    """
    fixed = _fixed_values(current)
    for node in root:
        name = local_name(node)
        if name in SETTABLE_SUBSCRIPTION_ELEMENTS:
            continue
        if name not in fixed:
            raise unexpected_element(name)
        sent = (node.text or "").strip()
        if name == "NotifyContentFormat":
            sent = ContentFormat.parse(sent).value
        if sent != fixed[name]:
            raise MNSError(
                "InvalidArgument",
                f"{name} cannot be changed by SetSubscriptionAttributes, only NotifyStrategy: "
                "unsubscribe and subscribe again to change it.",
            )
    strategy = child_text(root, "NotifyStrategy")
    return None if strategy is None else NotifyStrategy.parse(strategy)


def subscription_nodes(subscription: Subscription, account_id: str) -> list[XmlNode]:
    """GetSubscriptionAttributes' elements."""
    s = subscription
    nodes: list[XmlNode] = [
        ("SubscriptionName", s.name),
        ("Subscriber", account_id),
        ("TopicOwner", account_id),
        ("TopicName", s.topic_name),
        ("Endpoint", s.endpoint),
        ("NotifyStrategy", s.notify_strategy.value),
        ("NotifyContentFormat", s.notify_content_format.value),
        ("CreateTime", str(s.create_time)),
        ("LastModifyTime", str(s.last_modify_time)),
    ]
    if s.filter_tag is not None:
        nodes.insert(5, ("FilterTag", s.filter_tag))
    if s.dead_letter_policy is not None:
        nodes.append((dead_letters.ELEMENT, s.dead_letter_policy.to_json()))
    return nodes


# messages -------------------------------------------------------------------------------------
def message_attributes(root: Element) -> dict[str, Any]:
    """MessageAttributes, UserProperties, SystemProperties, MessageGroupId as sent."""
    attributes: dict[str, Any] = {}
    node = child(root, "MessageAttributes")
    if node is not None:
        entries = {local_name(entry): (entry.text or "").strip() for entry in node}
        attributes["MessageAttributes"] = direct_attributes(entries)
    attributes.update(parse_properties(root))
    return attributes


def direct_attributes(entries: dict[str, str]) -> dict[str, str]:
    """MessageAttributes' entries (each a JSON text), checked, as the message keeps them;
    shared by the XML and JSON APIs."""
    for name, text in entries.items():
        storable(text, name)
        try:
            json.loads(text)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            raise MNSError("InvalidArgument", f"{name} must be JSON.") from exc
    validate_direct_attributes(entries)
    return entries


def parse_draft(topic_name: str, root: Element) -> PublishDraft:
    """A PublishMessage body as the draft to publish."""
    body = message_body(root)
    tag = child_text(root, "MessageTag")
    return new_draft(topic_name, body, tag, message_attributes(root))


def new_draft(
    topic_name: str, body: str, tag: str | None, attributes: dict[str, Any]
) -> PublishDraft:
    """The draft to publish from checked parts, whatever the wire format; checks the tag."""
    if tag is not None and len(storable(tag, "MessageTag")) > MAX_TAG_LENGTH:
        raise MNSError(
            "InvalidArgument", f"The length of message tag should not exceed {MAX_TAG_LENGTH}."
        )
    return PublishDraft(topic_name, body, tag or None, attributes)


def published_nodes(message: TopicMessage) -> list[XmlNode]:
    nodes: list[XmlNode] = [("MessageId", message.id), ("MessageBodyMD5", message.body_md5)]
    if group := message.attributes.get("MessageGroupId"):
        nodes.append(("MessageGroupId", group))
    return nodes
