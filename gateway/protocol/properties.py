"""What queue and topic messages have in common: the body, required and never empty, and the
properties of the newer SDKs (UserProperties, SystemProperties, MessageGroupId), validated as
the service documents them (docs/protocol.md#message-properties), then kept exactly as the
client sent them and returned unchanged."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final
from xml.etree.ElementTree import Element

from gateway.errors.mns import MNSError
from gateway.protocol.text import storable
from gateway.protocol.trace_context import normalized_carrier
from gateway.protocol.xml import XmlNode, child, child_text, children, local_name

#: (container, item) of each list of properties, in the order responses carry them: the
#: service's, system properties first. The official PHP SDK reads ``UserProperties`` up to the
#: end of the document, so anything after them in a message is lost to it
#: (docs/protocol.md#response-shape).
PROPERTY_CONTAINERS: Final = (
    ("SystemProperties", "SystemPropertyValue"),
    ("UserProperties", "PropertyValue"),
)
MAX_USER_PROPERTIES: Final = 50
MAX_NAME_LENGTH: Final = 256
MAX_VALUE_LENGTH: Final = 4096
USER_TYPES: Final = frozenset({"STRING", "NUMBER", "BOOLEAN", "BINARY"})
#: The system properties the SDKs can set (``SystemPropertyName``), all of type STRING.
SYSTEM_NAMES: Final = frozenset(
    {"traceparent", "tracestate", "baggage", "DLQMessageType", "DLQSourceArn", "DLQOriginMessageId"}
)
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def message_body(element: Element) -> str:
    """MessageBody, which SendMessage and PublishMessage both refuse when missing or empty
    (docs/protocol.md#publishing)."""
    return require_body(child_text(element, "MessageBody"))


def require_body(body: str | None) -> str:
    """The rule :func:`message_body` applies, for a body from any wire format (XML or JSON)."""
    if not body:
        raise MNSError("InvalidArgument", "MessageBody is required and should not be empty.")
    return storable(body, "MessageBody")


def parse_properties(element: Element) -> dict[str, Any]:
    """UserProperties, SystemProperties and MessageGroupId, validated and kept as sent."""
    properties: dict[str, Any] = {}
    for container, item in PROPERTY_CONTAINERS:
        node = child(element, container)
        if node is not None:
            values = [
                {local_name(f): f.text or "" for f in entry} for entry in children(node, item)
            ]
            if values:
                properties[container] = values
    return validated_properties(properties, child_text(element, "MessageGroupId"))


def validated_properties(lists: dict[str, Any], group: str | None) -> dict[str, Any]:
    """``lists`` (UserProperties and SystemProperties as lists of Name/Type/Value entries) and
    MessageGroupId, checked, as the message keeps them; shared by the XML and JSON APIs."""
    properties = {name: values for name, values in lists.items() if values}
    validate_user_properties(properties.get("UserProperties") or [])
    validate_system_properties(properties.get("SystemProperties") or [])
    if group:
        properties["MessageGroupId"] = storable(group, "MessageGroupId")
    return properties


def _invalid(message: str) -> MNSError:
    return MNSError("InvalidArgument", message)


def validate_user_properties(values: list[dict[str, str]]) -> None:
    """At most 50; names of letters, digits, ``_``, ``-`` and ``.`` (not first or last, never
    two in a row), up to 256 characters, unique; types String, Number, Boolean or Binary in any
    case; values up to 4096 characters, ``true``/``false`` for Boolean, base64 for Binary."""
    if len(values) > MAX_USER_PROPERTIES:
        raise _invalid(f"A message can have at most {MAX_USER_PROPERTIES} UserProperties.")
    seen: set[str] = set()
    for value in values:
        name = _checked_name(value.get("Name", ""), seen)
        kind = value.get("Type", "").upper()
        if kind not in USER_TYPES:
            raise _invalid(
                f"The Type of property {name} should be STRING, NUMBER, BOOLEAN or BINARY."
            )
        _check_value(name, kind, value.get("Value", ""))


def _checked_name(name: str, seen: set[str]) -> str:
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise _invalid(f"A property name should be 1 to {MAX_NAME_LENGTH} characters long.")
    if not _NAME.fullmatch(name) or name[0] == "." or name[-1] == "." or ".." in name:
        raise _invalid(
            f"The property name {name!r} is invalid: letters, digits, '_', '-' and '.' only, "
            "not starting or ending with '.', no '..'."
        )
    if name in seen:
        raise _invalid(f"The property name {name} is used more than once.")
    seen.add(name)
    return name


def _check_value(name: str, kind: str, value: str) -> None:
    storable(value, f"property {name}")
    if len(value) > MAX_VALUE_LENGTH:
        raise _invalid(f"The value of property {name} should not exceed {MAX_VALUE_LENGTH}.")
    if kind == "BOOLEAN" and value not in ("true", "false"):
        raise _invalid(f"The value of BOOLEAN property {name} should be true or false.")
    if kind == "BINARY":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _invalid(f"The value of BINARY property {name} should be base64.") from exc


def validate_system_properties(values: list[dict[str, str]]) -> None:
    """Only the names the SDKs define, each once, of type STRING, values up to 4096."""
    seen: set[str] = set()
    for value in values:
        name = value.get("Name", "")
        if name not in SYSTEM_NAMES:
            raise _invalid(f"Unknown system property {name!r}.")
        if name in seen:
            raise _invalid(f"The system property {name} is used more than once.")
        seen.add(name)
        if value.get("Type", "").upper() != "STRING":
            raise _invalid(f"The Type of system property {name} should be STRING.")
        _check_value(name, "STRING", value.get("Value", ""))


TOO_LARGE: Final = "The length of message should not be larger than MaximumMessageSize."


def size_error(body_bytes: int, properties: Mapping[str, Any], maximum: int) -> MNSError | None:
    """400 ``InvalidArgument`` when a message is over ``maximum`` (MaximumMessageSize, of a
    queue or a topic): its body's bytes and its UserProperties count together
    (docs/protocol.md#message-properties); ``None`` when it fits."""
    if body_bytes + properties_size(properties) > maximum:
        return MNSError("InvalidArgument", TOO_LARGE)
    return None


def properties_size(properties: Mapping[str, Any]) -> int:
    """What UserProperties add to a message's size: every name, type and value, in UTF-8 bytes
    (they count against MaximumMessageSize with the body)."""
    return sum(
        len((entry.get("Name", "") + entry.get("Type", "") + entry.get("Value", "")).encode())
        for entry in properties.get("UserProperties") or []
    )


def property_nodes(properties: Mapping[str, Any]) -> list[XmlNode]:
    nodes: list[XmlNode] = []
    if group := properties.get("MessageGroupId"):
        nodes.append(("MessageGroupId", str(group)))
    for container, item in PROPERTY_CONTAINERS:
        values = properties.get(container) or []
        entries: list[XmlNode] = [
            (item, [(k, str(v)) for k, v in value.items()]) for value in values
        ]
        if entries:
            nodes.append((container, entries))
    return nodes


def carried_properties(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """What a topic message hands on to a queue it is delivered to: MessageGroupId,
    UserProperties and SystemProperties (docs/delivery.md#properties-carried-to-queues)."""
    keys = ("MessageGroupId", *(container for container, _ in PROPERTY_CONTAINERS))
    return {key: attributes[key] for key in keys if attributes.get(key)}


#: The system properties that carry a message's creation context (W3C trace context); the SDKs
#: set them, and the gateway adds its own ``send`` span's when a publisher did not.
TRACE_CONTEXT_NAMES: Final = ("traceparent", "tracestate")


def _trace_properties(properties: Mapping[str, Any]) -> dict[str, str]:
    return {
        entry.get("Name", ""): entry.get("Value", "")
        for entry in properties.get("SystemProperties") or []
        if entry.get("Name") in TRACE_CONTEXT_NAMES
    }


def trace_context(properties: Mapping[str, Any]) -> dict[str, str]:
    """The message's creation context as trace-context headers (``traceparent`` and
    ``tracestate`` from its SystemProperties), parsed and written anew
    (:mod:`gateway.protocol.trace_context`); empty when it has none or an invalid one."""
    return normalized_carrier(_trace_properties(properties))


def with_trace_context(properties: Mapping[str, Any], carrier: Mapping[str, str]) -> dict[str, Any]:
    """``properties`` with ``carrier``'s ``traceparent`` (and ``tracestate``) added as
    SystemProperties, unless the message already has a ``traceparent``: the publisher's own
    is kept untouched, as the messaging conventions ask (and as the client's properties always
    are), even when it is invalid and so never used (:func:`trace_context`)."""
    carrier = normalized_carrier(carrier)  # what the gateway adds is within W3C's limits too
    if _trace_properties(properties).get("traceparent") or not carrier:
        return dict(properties)
    system = [
        entry
        for entry in properties.get("SystemProperties") or []
        if entry.get("Name") not in TRACE_CONTEXT_NAMES  # a lone tracestate is stale
    ]
    system += [
        {"Name": name, "Type": "STRING", "Value": carrier[name]}
        for name in TRACE_CONTEXT_NAMES
        if carrier.get(name)
    ]
    return {**properties, "SystemProperties": system}
