"""Console forms as the XML elements an SDK would send for the same operation.

The console hands these to the very parsers the API uses (:mod:`gateway.queues.wire`,
:mod:`gateway.topics.wire`), so a form is validated by exactly the API's rules and refused with
exactly its errors. Empty fields are left out, as an SDK leaves out attributes it was not given.
Pure: a mapping of form fields in, an element out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from xml.etree.ElementTree import Element, SubElement, tostring

from gateway.protocol.xml import NAMESPACE, parse_document

Form = Mapping[str, str]


def _element(
    root: str, form: Form, fields: Iterable[tuple[str, str]], *, body: bool = False
) -> Element:
    element = Element(f"{{{NAMESPACE}}}{root}")
    if body:  # kept exactly as typed, spaces and all; an empty one is the API's error too
        SubElement(element, f"{{{NAMESPACE}}}MessageBody").text = form.get("body", "")
    for form_name, element_name in fields:
        value = form.get(form_name, "")
        if value.strip():
            SubElement(element, f"{{{NAMESPACE}}}{element_name}").text = value.strip()
    return element


def _as_sent(element: Element) -> Element:
    """The element as the API would read it from the wire: serialised and parsed again by the
    API's own reader, so what XML cannot carry (control characters) is refused alike."""
    root = element.tag.rsplit("}", 1)[-1]
    return parse_document(tostring(element, encoding="utf-8"), root)


def queue_message(form: Form) -> Element:
    """SendMessage: body, Priority, DelaySeconds."""
    fields = (("priority", "Priority"), ("delay_seconds", "DelaySeconds"))
    return _as_sent(_element("Message", form, fields, body=True))


def topic_message(form: Form) -> Element:
    """PublishMessage: body and MessageTag."""
    return _as_sent(_element("Message", form, (("tag", "MessageTag"),), body=True))


QUEUE_ATTRIBUTE_FIELDS = (
    ("delay_seconds", "DelaySeconds"),
    ("maximum_message_size", "MaximumMessageSize"),
    ("message_retention_period", "MessageRetentionPeriod"),
    ("visibility_timeout", "VisibilityTimeout"),
    ("polling_wait_seconds", "PollingWaitSeconds"),
    ("logging_enabled", "LoggingEnabled"),
)


def queue_attributes(form: Form) -> Element:
    """SetQueueAttributes: the numbers and LoggingEnabled, and a DlqPolicy when a target queue
    is named."""
    element = _element("Queue", form, QUEUE_ATTRIBUTE_FIELDS)
    target = form.get("dlq_target", "").strip()
    if target:
        policy = SubElement(element, f"{{{NAMESPACE}}}DlqPolicy")
        fields = (
            ("DeadLetterTargetQueue", target),
            ("MaxReceiveCount", form.get("dlq_max_receive_count", "").strip()),
            ("Enabled", "true" if form.get("dlq_enabled") else "false"),
        )
        for name, value in fields:
            if value:
                SubElement(policy, f"{{{NAMESPACE}}}{name}").text = value
    return _as_sent(element)


def subscription(form: Form) -> Element:
    """Subscribe: Endpoint, FilterTag, NotifyStrategy, NotifyContentFormat."""
    fields = (
        ("endpoint", "Endpoint"),
        ("filter_tag", "FilterTag"),
        ("notify_strategy", "NotifyStrategy"),
        ("notify_content_format", "NotifyContentFormat"),
    )
    return _as_sent(_element("Subscription", form, fields))


def decoded_body(body: str) -> str | None:
    """A body as base64-decoded text (invalid UTF-8 shown as U+FFFD), or ``None`` when it is not
    base64 at all."""
    try:
        raw = base64.b64decode(body.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    return raw.decode("utf-8", errors="replace")
