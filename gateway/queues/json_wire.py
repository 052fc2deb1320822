"""The queue model's JSON (x-mns-version 2026-04-09): what :mod:`gateway.queues.wire` is to XML.

Field names are those of ``alibabacloud-smqproxy20260409``'s models. The rules are the XML API's,
shared through the pure model (:func:`~gateway.protocol.properties.require_body`,
:meth:`~gateway.queues.records.AttributeRange.check`,
:func:`~gateway.protocol.properties.validated_properties`,
:func:`~gateway.queues.wire.check_batch`):
only the reading and the rendering differ.

UserProperties travel as an object keyed by name, each value ``{"DataType", "StringValue" |
"BinaryValue"}``; the store keeps them as the XML API does (Name/Type/Value), so a message sent
with one API is received with its properties through the other.
"""

from __future__ import annotations

from typing import Any

from gateway.errors.mns import MNSError
from gateway.protocol.json_body import (
    JsonObject,
    integer_field,
    list_field,
    object_field,
    string_field,
)
from gateway.protocol.properties import require_body, validated_properties
from gateway.protocol.text import is_storable, storable
from gateway.queues.records import (
    DELAY_SECONDS,
    PRIORITY,
    NewMessage,
    QueueMessage,
    SentMessage,
    VisibilityChange,
)
from gateway.queues.wire import check_batch


def _user_properties(document: JsonObject) -> list[dict[str, str]]:
    entries = []
    for name, value in object_field(document, "UserProperties").items():
        if not isinstance(value, dict):
            raise MNSError("InvalidArgument", f"The value of property {name} should be an object.")
        kind = string_field(value, "DataType") or ""
        text = string_field(value, "BinaryValue" if kind.upper() == "BINARY" else "StringValue")
        entries.append({"Name": name, "Type": kind, "Value": text or ""})
    return entries


def _render_user_properties(properties: dict[str, Any]) -> JsonObject:
    rendered: JsonObject = {}
    for entry in properties.get("UserProperties") or []:
        kind = entry.get("Type", "")
        value = "BinaryValue" if kind.upper() == "BINARY" else "StringValue"
        rendered[entry.get("Name", "")] = {"DataType": kind, value: entry.get("Value", "")}
    return rendered


def parse_new_message(document: JsonObject) -> NewMessage:
    """SendMessage's body (or one entry of BatchSendMessage's)."""
    body = require_body(string_field(document, "MessageBody"))
    priority = PRIORITY.check(integer_field(document, "Priority"), PRIORITY.default)
    delay = DELAY_SECONDS.check(integer_field(document, "DelaySeconds"), None)
    properties = validated_properties(
        {"UserProperties": _user_properties(document)}, string_field(document, "MessageGroupId")
    )
    return NewMessage(body, priority or PRIORITY.default, delay, properties)


def is_batch(document: JsonObject) -> bool:
    return "Messages" in document


def parse_batch(document: JsonObject) -> list[NewMessage | MNSError]:
    """BatchSendMessage's messages; a bad message fails alone, a bad batch fails whole."""
    entries = list_field(document, "Messages")
    if not all(isinstance(entry, dict) for entry in entries):
        raise MNSError("InvalidArgument", "Each entry of Messages should be an object.")
    check_batch([_body_for_size(entry) for entry in entries])
    return [_parse_or_error(entry) for entry in entries]


def _body_for_size(entry: JsonObject) -> str:
    """What an entry's body counts toward the batch's size; one that is not a storable string
    counts nothing, as its entry fails alone."""
    body = entry.get("MessageBody")
    return body if isinstance(body, str) and is_storable(body) else ""


def _parse_or_error(entry: JsonObject) -> NewMessage | MNSError:
    try:
        return parse_new_message(entry)
    except MNSError as error:
        return error


def receipt_handles(document: JsonObject) -> list[str]:
    """BatchDeleteMessage's ``ReceiptHandles``: 1 to 16 strings."""
    handles = list_field(document, "ReceiptHandles")
    if not all(isinstance(handle, str) for handle in handles):
        raise MNSError("InvalidArgument", "Each entry of ReceiptHandles should be a string.")
    for handle in handles:
        storable(handle, "ReceiptHandle", "ReceiptHandleError")
    return handles  # how many: the operation's rule (gateway.operations.messages)


def sent(message: SentMessage, *, with_handle: bool) -> JsonObject:
    rendered: JsonObject = {"MessageId": message.message_id, "MessageBodyMD5": message.body_md5}
    if with_handle and message.receipt_handle:
        rendered["ReceiptHandle"] = message.receipt_handle
    return rendered


def entry_error(error: MNSError) -> JsonObject:
    return {"ErrorCode": error.code, "ErrorMessage": error.message}


def message(received: QueueMessage, *, with_handle: bool) -> JsonObject:
    """A received (``with_handle``: ReceiptHandle and NextVisibleTime) or peeked message."""
    rendered: JsonObject = {"MessageId": received.message_id}
    if with_handle and received.receipt_handle:
        rendered["ReceiptHandle"] = received.receipt_handle
        rendered["NextVisibleTime"] = received.next_visible_time
    rendered.update(
        {
            "MessageBody": received.body,
            "MessageBodyMD5": received.body_md5,
            "EnqueueTime": received.enqueue_time,
            "FirstDequeueTime": received.first_dequeue_time,
            "DequeueCount": received.dequeue_count,
            "Priority": received.priority,
        }
    )
    if group := received.properties.get("MessageGroupId"):
        rendered["MessageGroupId"] = str(group)
    rendered["UserProperties"] = _render_user_properties(received.properties)
    return rendered


def visibility(change: VisibilityChange) -> JsonObject:
    return {"ReceiptHandle": change.receipt_handle, "NextVisibleTime": change.next_visible_time}
