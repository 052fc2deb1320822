"""Hardened parsing of untrusted request XML and rendering of MNS response XML.

Requests are parsed with defusedxml, which refuses DTDs, entity declarations and external
references outright: a billion-laughs body or an XXE probe is a client error, never work for us.
Elements are matched by local name because clients send the MNS namespace with or without the
trailing slash, or none at all (docs/protocol.md#version-and-namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException

# defusedxml's own ParseError: in defusedxml 0.7.0 it is not xml.etree's class (its parser comes
# from a second copy of that module), so catching xml.etree's let malformed XML through as a 500.
from defusedxml.ElementTree import ParseError, fromstring

from gateway.errors.mns import MNSError
from gateway.protocol.text import unstorable

NAMESPACE = "http://mns.aliyuncs.com/doc/v1/"

#: A rendered child: (name, text) or (name, [children...]).
XmlNode = tuple[str, "str | Sequence[XmlNode]"]


def local_name(element: Element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def parse_document(body: bytes, expected_root: str) -> Element:
    """Parse ``body`` and insist that its root element is ``expected_root`` (by local name).

    The one way request XML is read. Whatever the bytes, the outcome is the root element or an
    :class:`MNSError`: expat hands an encoding it does not know itself to Python's codecs, which
    answer an unknown name with ``LookupError`` and a multi-byte or non-text codec with
    ``ValueError``, so those are malformed XML here like any syntax error.
    """
    if not body.strip():
        raise MNSError("MalformedXML", "The request body is empty.")
    try:
        root = fromstring(body, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise MNSError(
            "MalformedXML", "DTDs, entity declarations and external references are not allowed."
        ) from exc
    except (ParseError, ValueError, LookupError) as exc:
        raise MNSError("MalformedXML") from exc
    if local_name(root) != expected_root:
        raise unexpected_element(local_name(root))
    return root


def unexpected_element(name: str) -> MNSError:
    """The service's answer to an element a request may not hold (400 ``InvalidArgument``)."""
    return MNSError(
        "InvalidArgument",
        "The XML you provided did not validate against our published schema, "
        f"cause by Element {name}.",
    )


def child(element: Element, name: str) -> Element | None:
    for node in element:
        if local_name(node) == name:
            return node
    return None


def child_text(element: Element, name: str) -> str | None:
    """The text of the first child called ``name``; ``None`` when absent, ``""`` when empty."""
    node = child(element, name)
    if node is None:
        return None
    return node.text or ""


def children(element: Element, name: str) -> list[Element]:
    return [node for node in element if local_name(node) == name]


#: A request's text fields by element name, ``None`` for one not sent: an element's children
#: (:func:`element_fields`), or the same fields from elsewhere (the console's forms), so one
#: parser of fields serves both.
Fields = Callable[[str], "str | None"]


def element_fields(element: Element | None) -> Fields:
    """The children of ``element`` as :data:`Fields` (none at all for ``None``: an empty body)."""
    if element is None:
        return lambda name: None
    return lambda name: child_text(element, name)


def as_xml_text(text: str) -> str:
    """``text`` as an XML parser hands an element's text over, for a value that did not come
    in a document (the console's forms) but meets the XML API's rules exactly: a character
    XML 1.0 cannot carry is the ``MalformedXML`` its document would have been, and line ends
    are a parser's LF (a browser sends a textarea's as CRLF)."""
    if unstorable(text) is not None:
        raise MNSError("MalformedXML")
    return text.replace("\r\n", "\n").replace("\r", "\n")


#: Indentation per nesting level. The API reference's response examples put every element on
#: a line of its own, nested ones indented (its ListQueue example by two spaces); clients parse
#: that shape, and the official PHP SDK needs the whitespace between elements
#: (docs/protocol.md#response-shape).
INDENT = "  "


def escape_text(value: str) -> str:
    """``value`` as an element's text: ``xml.sax.saxutils.escape`` written out (importing it
    brings ``urllib.request``, ``http.client``, ``email`` and ``ssl`` into every command's
    start), and a carriage return as "&#13;": a parser turns a raw CR (and CRLF) in text into
    LF, a reference it reads back as sent."""
    return (
        value.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;").replace("\r", "&#13;")
    )


def _render_nodes(nodes: Sequence[XmlNode], parts: list[str], margin: str) -> None:
    """Append ``nodes`` to ``parts``, each on a new line after ``margin``; a parent's children
    go one level deeper and its end tag back on a line of its own."""
    for name, value in nodes:
        if isinstance(value, str):
            parts.append(f"{margin}<{name}>{escape_text(value)}</{name}>")
        else:
            parts.append(f"{margin}<{name}>")
            _render_nodes(value, parts, margin + INDENT)
            parts.append(f"{margin}</{name}>")


def render_document(root: str, nodes: Sequence[XmlNode]) -> bytes:
    """An MNS response document: the XML declaration, the namespaced root, the children, one
    element per line and indented as the service writes them."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', f'<{root} xmlns="{NAMESPACE}">']
    _render_nodes(nodes, parts, INDENT)
    parts.append(f"</{root}>")
    return "\n".join(parts).encode()
