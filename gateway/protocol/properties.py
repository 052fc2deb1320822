"""What queue and topic messages have in common: the body, required and never empty, and the
properties of the newer SDKs (UserProperties, SystemProperties, MessageGroupId), kept exactly as
the client sent them and returned unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from xml.etree.ElementTree import Element

from gateway.protocol.errors import MNSError
from gateway.protocol.xml import XmlNode, child, child_text, children, local_name

#: (container, item) of each list of properties.
PROPERTY_CONTAINERS: Final = (
    ("UserProperties", "PropertyValue"),
    ("SystemProperties", "SystemPropertyValue"),
)


def message_body(element: Element) -> str:
    """MessageBody, which SendMessage and PublishMessage both refuse when missing or empty
    (docs/protocol.md#publishing)."""
    body = child_text(element, "MessageBody")
    if not body:
        raise MNSError("InvalidArgument", "MessageBody is required and should not be empty.")
    return body


def parse_properties(element: Element) -> dict[str, Any]:
    """UserProperties, SystemProperties and MessageGroupId, kept as the client sent them."""
    properties: dict[str, Any] = {}
    for container, item in PROPERTY_CONTAINERS:
        node = child(element, container)
        if node is not None:
            values = [
                {local_name(f): f.text or "" for f in entry} for entry in children(node, item)
            ]
            if values:
                properties[container] = values
    group = child_text(element, "MessageGroupId")
    if group:
        properties["MessageGroupId"] = group
    return properties


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
