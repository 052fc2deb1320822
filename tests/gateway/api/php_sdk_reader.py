"""How the official PHP SDK (``aliyun/aliyun-mns-php-sdk`` 1.4.0) reads a message response,
re-expressed in Python so CI can hold the gateway's responses to it without PHP or the SDK.

The SDK walks the document with PHP's ``XMLReader`` (libxml2's pull parser) and is sensitive to
its node stream: it needs whitespace nodes between elements, and reads ``UserProperties`` up to
the end of the document. :class:`XMLReader` yields that stream (checked node for node against
PHP 8.2's with Debian's ``php-xml``: elements, text, whitespace-only text as significant
whitespace, end tags, no end tag for an empty element); the functions below follow the SDK's
code statement for statement, each citing the file and lines it follows at the SDK's 1.4.0
commit (962ead2). They are a reading aid for the gateway's tests, not a PHP client.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

NONE, ELEMENT, TEXT, SIGNIFICANT_WHITESPACE, END_ELEMENT = 0, 1, 3, 14, 15
#: Constants.php: the names the property readers switch on.
USER_PROPERTIES, PROPERTY_VALUE = "UserProperties", "PropertyValue"
SYSTEM_PROPERTIES, SYSTEM_PROPERTY_VALUE = "SystemProperties", "SystemPropertyValue"
#: Model/PropertyType.php: isValid / isValidSys.
USER_TYPES = {"STRING", "NUMBER", "BOOLEAN", "BINARY"}
SYSTEM_TYPES = {"STRING"}
FIELDS = {
    "MessageId": "message_id",
    "MessageBodyMD5": "body_md5",
    "MessageBody": "body",
    "EnqueueTime": "enqueue_time",
    "NextVisibleTime": "next_visible_time",
    "FirstDequeueTime": "first_dequeue_time",
    "DequeueCount": "dequeue_count",
    "Priority": "priority",
    "ReceiptHandle": "receipt_handle",
}


@dataclass(frozen=True)
class Node:
    type: int
    name: str
    value: str = ""


def reader_nodes(document: bytes) -> list[Node]:
    """The nodes ``XMLReader::read()`` steps through, in order."""
    nodes: list[Node] = []
    text: list[str] = []
    empty: list[bool] = []
    parser = expat.ParserCreate()

    def flush() -> None:
        if text:
            value = "".join(text)
            text.clear()
            kind = TEXT if value.strip() else SIGNIFICANT_WHITESPACE
            nodes.append(Node(kind, "#text", value))

    def start(name: str, _attributes: dict[str, str]) -> None:
        flush()
        nodes.append(Node(ELEMENT, name))
        tag_end = document.index(b">", parser.CurrentByteIndex)
        empty.append(document[tag_end - 1 : tag_end] == b"/")

    def end(name: str) -> None:
        flush()
        if not empty.pop():  # <a/> is one ELEMENT node with no END_ELEMENT
            nodes.append(Node(END_ELEMENT, name))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text.append
    parser.Parse(document, True)
    return nodes


class XMLReader:
    """The part of PHP's ``XMLReader`` the SDK uses: ``read()``, ``nodeType``, ``name``,
    ``value`` (after the last node: type 0, empty name)."""

    def __init__(self, document: bytes) -> None:
        self._nodes = reader_nodes(document)
        self._at = -1

    def read(self) -> bool:
        self._at = min(self._at + 1, len(self._nodes))
        return self._at < len(self._nodes)

    @property
    def _node(self) -> Node:
        return self._nodes[self._at] if 0 <= self._at < len(self._nodes) else Node(NONE, "")

    @property
    def nodeType(self) -> int:
        return self._node.type

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def value(self) -> str:
        return self._node.value


@dataclass
class PhpMessage:
    """What ``Model\\Message`` ends up holding."""

    fields: dict[str, str | None] = field(default_factory=dict)
    user_properties: dict[str, tuple[str, Any]] = field(default_factory=dict)
    system_properties: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def parse_user_properties(reader: XMLReader) -> dict[str, tuple[str, Any]]:
    """Traits/MessageProperties.php lines 56-107, ``parseUserPropertiesFromXML``. Its outer
    loop has no stop at ``</UserProperties>``: it reads to the end of the document."""
    if reader.name != USER_PROPERTIES:  # 58-60
        return {}
    properties: dict[str, tuple[str, Any]] = {}
    while reader.read():  # 64
        if reader.nodeType == ELEMENT and reader.name == PROPERTY_VALUE:  # 65
            name = data_type = string_value = None
            while reader.read() and not (  # 71
                reader.nodeType == END_ELEMENT and reader.name == PROPERTY_VALUE
            ):
                if reader.nodeType == ELEMENT:  # 72
                    tag = reader.name
                    if tag in ("Name", "Value", "Type"):  # 73-91
                        reader.read()
                        if reader.nodeType == TEXT:
                            if tag == "Name":
                                name = reader.value
                            elif tag == "Value":
                                string_value = reader.value
                            else:
                                data_type = reader.value
            if name and data_type in USER_TYPES:  # 96-103
                if data_type == "BINARY" and string_value is not None:
                    properties[name] = (data_type, base64.b64decode(string_value))
                else:
                    properties[name] = (data_type, string_value)
    return properties


def parse_system_properties(reader: XMLReader) -> dict[str, tuple[str, str | None]]:
    """Traits/MessageProperties.php lines 112-156, ``parseSystemPropertiesFromXML``. Its inner
    switch (127) tests the node's name whatever its type, so an end tag ``</Name>`` is read as
    a ``Name`` start and the next node taken for its text: right only when that node is
    whitespace, wrong (the following field lost, the loop overrunning) in compact XML."""
    if reader.name != SYSTEM_PROPERTIES:  # 114-116
        return {}
    properties: dict[str, tuple[str, str | None]] = {}
    while reader.read() and not (  # 120
        reader.nodeType == END_ELEMENT and reader.name == SYSTEM_PROPERTIES
    ):
        if reader.nodeType == ELEMENT and reader.name == SYSTEM_PROPERTY_VALUE:  # 121
            name = data_type = string_value = None
            while reader.read() and not (  # 126
                reader.nodeType == END_ELEMENT and reader.name == SYSTEM_PROPERTY_VALUE
            ):
                tag = reader.name  # 127: no nodeType check
                if tag in ("Name", "Value", "Type"):  # 128-145
                    reader.read()
                    if reader.nodeType == TEXT:
                        if tag == "Name":
                            name = reader.value
                        elif tag == "Value":
                            string_value = reader.value
                        else:
                            data_type = reader.value
            if name and data_type in SYSTEM_TYPES:  # 149-151
                properties[name] = (data_type, string_value)
    return properties


def message_from_xml(reader: XMLReader, base64_body: bool = False) -> PhpMessage:
    """Model/Message.php lines 24-153, ``Message::fromXML``: fields until ``</Message>`` or the
    end of the document."""
    message = PhpMessage(fields=dict.fromkeys(FIELDS.values()))
    while reader.read():  # 38
        if reader.nodeType == ELEMENT:
            tag = reader.name
            if tag in FIELDS:  # 44-110
                reader.read()
                if reader.nodeType == TEXT:
                    value = reader.value
                    if tag == "MessageBody" and base64_body:
                        value = base64.b64decode(value).decode()
                    message.fields[FIELDS[tag]] = value
            elif tag == SYSTEM_PROPERTIES:  # 111-113
                message.system_properties = parse_system_properties(reader)
            elif tag == USER_PROPERTIES:  # 114-116
                message.user_properties = parse_user_properties(reader)
        elif reader.nodeType == END_ELEMENT and reader.name == "Message":  # 119-135
            return message
    return message  # 140-152


def receive_message(document: bytes) -> PhpMessage:
    """ReceiveMessageResponse / PeekMessageResponse ``parseResponse`` (lines 43-45): one
    ``Message::fromXML`` from the document's start."""
    return message_from_xml(XMLReader(document))


def batch_receive_messages(document: bytes) -> list[PhpMessage]:
    """BatchReceiveMessageResponse.php / BatchPeekMessageResponse.php ``parseResponse``
    (lines 49-59): a ``Message::fromXML`` at every ``<Message>`` start still ahead."""
    reader = XMLReader(document)
    messages = []
    while reader.read():
        if reader.nodeType == ELEMENT and reader.name == "Message":
            messages.append(message_from_xml(reader))
    return messages
