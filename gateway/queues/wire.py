"""The queue model's XML: what producers and admins send, what consumers get back.

Parsing turns request elements into :mod:`gateway.queues.records` values (raising the ``MNSError``
MNS answers bad input with); rendering turns records into the nodes of
:func:`gateway.protocol.xml.render_document`. Element order follows the API reference's examples,
and every element the official SDK requires is always present with text (its decoders reject a
response otherwise).
"""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element

from gateway.errors.mns import MNSError
from gateway.protocol.names import bool_attribute, render_bool
from gateway.protocol.properties import parse_properties, property_nodes, require_body
from gateway.protocol.xml import Fields, XmlNode, child_text, children, element_fields
from gateway.queues import dlq_policy as dead_letters
from gateway.queues.records import (
    CHANGE_VISIBILITY_TIMEOUT,
    DELAY_SECONDS,
    MAX_BATCH,
    MAX_BATCH_BODY_BYTES,
    PRIORITY,
    QUEUE_FIELDS,
    QUEUE_RANGES,
    MessageCounts,
    NewMessage,
    Queue,
    QueueAttributes,
    QueueChanges,
    QueueMessage,
    QueueType,
    SentMessage,
)
from gateway.queues.states import body_size

#: The first element name of a document (skips ``<?xml ...?>`` and ``<!-- -->``).
_FIRST_ELEMENT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)")


def root_name(body: bytes) -> str:
    """The root element's local name, to choose between SendMessage and BatchSendMessage.

    Only a hint: the chosen parse still validates the whole document.
    """
    match = _FIRST_ELEMENT.search(body)
    return match.group(1).decode("ascii") if match else ""


# queues ---------------------------------------------------------------------------------------
def queue_attribute_changes(root: Element | None, *, defaults: bool) -> dict[str, int | bool]:
    """The numeric and boolean attributes in a ``<Queue>`` body by field name
    (:func:`attribute_values`)."""
    return attribute_values(element_fields(root), defaults=defaults)


def attribute_values(fields: Fields, *, defaults: bool) -> dict[str, int | bool]:
    """The numeric and boolean attributes among ``fields`` by QueueAttributes field; with
    ``defaults`` every one, the service's default standing in for an absent one (CreateQueue),
    else only those sent. The XML body's and the console form's parser alike."""
    changes: dict[str, int | bool] = {}
    for attribute in QUEUE_RANGES:
        value = attribute.parse(fields(attribute.element), attribute.default if defaults else None)
        if value is not None:
            changes[QUEUE_FIELDS[attribute.element]] = value
    logging = bool_attribute(
        fields("LoggingEnabled"), "LoggingEnabled", False if defaults else None
    )
    if logging is not None:
        changes["logging_enabled"] = logging
    return changes


def queue_type(fields: Fields) -> QueueType | None:
    text = fields("QueueType")
    return QueueType.parse(text) if text else None


def new_queue_attributes(root: Element | None) -> QueueAttributes:
    """CreateQueue's attributes: those sent, the service's defaults for the others. The
    dead-letter policy's targets are checked by the store, in the create's transaction."""
    update = dead_letters.parse_policy(root)
    policy = update.apply(None, receive_count=True) if update else None
    fields = element_fields(root)
    return QueueAttributes(
        **attribute_values(fields, defaults=True),  # type: ignore[arg-type]
        queue_type=queue_type(fields) or QueueType.NORMAL,
        dead_letter_policy=policy,
    )


def changed_queue_attributes(root: Element | None) -> QueueChanges:
    """SetQueueAttributes: only what was sent."""
    fields = element_fields(root)
    return QueueChanges(
        attribute_values(fields, defaults=False),
        queue_type(fields),
        dead_letters.parse_policy(root),
    )


def queue_nodes(queue: Queue, counts: MessageCounts | None) -> list[XmlNode]:
    """GetQueueAttributes' elements (``counts`` ``None``: ListQueue's meta, without counts).

    QueueType always, DlqPolicy when the queue has one, as JSON text: the official Python SDK
    reads every child of ``<Queue>`` as text and fails on nested elements
    (docs/queues.md#the-dlqpolicy-element).
    """
    a = queue.attributes
    nodes: list[XmlNode] = [
        ("QueueName", queue.name),
        ("CreateTime", str(queue.create_time)),
        ("LastModifyTime", str(queue.last_modify_time)),
        ("DelaySeconds", str(a.delay_seconds)),
        ("MaximumMessageSize", str(a.maximum_message_size)),
        ("MessageRetentionPeriod", str(a.message_retention_period)),
        ("VisibilityTimeout", str(a.visibility_timeout)),
        ("PollingWaitSeconds", str(a.polling_wait_seconds)),
    ]
    if counts is not None:
        nodes += [
            ("ActiveMessages", str(counts.active)),
            ("InactiveMessages", str(counts.inactive)),
            ("DelayMessages", str(counts.delayed)),
        ]
    nodes += [("LoggingEnabled", render_bool(a.logging_enabled)), ("QueueType", a.queue_type)]
    if a.dead_letter_policy is not None:
        nodes.append((dead_letters.ELEMENT, a.dead_letter_policy.to_json()))
    return nodes


# sending --------------------------------------------------------------------------------------
def parse_new_message(element: Element) -> NewMessage:
    """A ``<Message>``: its fields (:func:`message_fields`), then its properties."""
    return NewMessage(*message_fields(element_fields(element)), parse_properties(element))


def new_message(fields: Fields) -> NewMessage:
    """A message without properties from ``fields`` (:func:`message_fields`): the console's."""
    return NewMessage(*message_fields(fields))


def message_fields(fields: Fields) -> tuple[str, int, int | None]:
    """MessageBody, Priority and DelaySeconds, checked in that order: the XML body's and the
    console form's parser alike."""
    body = require_body(fields("MessageBody"))
    priority = PRIORITY.parse(fields("Priority"), PRIORITY.default)
    delay = DELAY_SECONDS.parse(fields("DelaySeconds"), None)
    return body, priority or PRIORITY.default, delay


def parse_batch(root: Element) -> list[NewMessage | MNSError]:
    """BatchSendMessage's messages; a bad message fails alone, a bad batch fails whole."""
    entries = children(root, "Message")
    check_batch([child_text(entry, "MessageBody") or "" for entry in entries])
    return [_parse_or_error(entry) for entry in entries]


def check_batch(bodies: list[str]) -> None:
    """BatchSendMessage's rules on the whole batch, whatever the wire format: 1 to 16 messages,
    their bodies together within 64 KiB."""
    if not 1 <= len(bodies) <= MAX_BATCH:
        raise MNSError(
            "InvalidArgument", f"The count of messages should between 1 and {MAX_BATCH}."
        )
    if sum(body_size(body) for body in bodies) > MAX_BATCH_BODY_BYTES:
        raise MNSError(
            "InvalidArgument",
            f"The total size of the messages should not be larger than {MAX_BATCH_BODY_BYTES}.",
        )


def _parse_or_error(element: Element) -> NewMessage | MNSError:
    try:
        return parse_new_message(element)
    except MNSError as error:
        return error


def sent_nodes(sent: SentMessage, *, with_handle: bool, with_group: bool) -> list[XmlNode]:
    nodes: list[XmlNode] = [("MessageId", sent.message_id), ("MessageBodyMD5", sent.body_md5)]
    if with_handle and sent.receipt_handle:
        nodes.append(("ReceiptHandle", sent.receipt_handle))
    if with_group and (group := sent.properties.get("MessageGroupId")):
        nodes.append(("MessageGroupId", str(group)))
    return nodes


def error_nodes(error: MNSError) -> list[XmlNode]:
    return [("ErrorCode", error.code), ("ErrorMessage", error.message)]


def visibility_request(params: dict[str, str]) -> tuple[str, int]:
    """ChangeMessageVisibility's ``ReceiptHandle`` and ``VisibilityTimeout`` (query parameters,
    names lowercased), in either API."""
    handle = params.get("receipthandle")
    if not handle:
        raise MNSError("MissingReceiptHandle")
    if params.get("visibilitytimeout") is None:
        raise MNSError("MissingVisibilityTimeout")
    return handle, CHANGE_VISIBILITY_TIMEOUT.parse(params["visibilitytimeout"], None) or 0


# receiving ------------------------------------------------------------------------------------
def message_nodes(message: QueueMessage, *, received: bool) -> list[XmlNode]:
    """A received (with ReceiptHandle and NextVisibleTime) or peeked message."""
    nodes: list[XmlNode] = [("MessageId", message.message_id)]
    if received and message.receipt_handle:
        nodes.append(("ReceiptHandle", message.receipt_handle))
    nodes += [
        ("MessageBodyMD5", message.body_md5),
        ("MessageBody", message.body),
        ("EnqueueTime", str(message.enqueue_time)),
    ]
    if received:
        nodes.append(("NextVisibleTime", str(message.next_visible_time)))
    nodes += [
        ("FirstDequeueTime", str(message.first_dequeue_time)),
        ("DequeueCount", str(message.dequeue_count)),
        ("Priority", str(message.priority)),
    ]
    return nodes + property_nodes(message.properties)
