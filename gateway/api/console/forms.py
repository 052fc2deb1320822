"""Console forms as the typed values the operations take (:mod:`gateway.operations`).

A form's fields are read as the fields of the element an SDK would send for the same operation
(:data:`~gateway.protocol.xml.Fields`) and handed to the field parsers the XML API's own parsers
call (:mod:`gateway.queues.wire`, :mod:`gateway.topics.wire`, :mod:`gateway.queues.dlq_policy`),
so a form is validated by exactly the API's rules and refused with exactly its errors. What XML
cannot carry (control characters) is refused first, with the ``MalformedXML`` the API answers a
document holding it with (:func:`~gateway.protocol.xml.as_xml_text`). Empty fields are left out,
as an SDK leaves out attributes it was not given. Pure: a mapping of form fields in, a value out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Final

from gateway.protocol.properties import require_body
from gateway.protocol.xml import as_xml_text
from gateway.queues.dlq_policy import PolicyUpdate, parse_policy_fields
from gateway.queues.records import NewMessage, QueueChanges
from gateway.queues.wire import attribute_values, new_message
from gateway.topics.records import PublishDraft, Subscription
from gateway.topics.wire import new_draft, subscription_of

Form = Mapping[str, str]


def _texts(form: Form, names: Mapping[str, str]) -> dict[str, str]:
    """The form's non-empty fields by element name (``names``: element -> form field), each
    stripped and checked as XML text, all of them before any is parsed (as a document is read
    whole before its elements are)."""
    texts = {element: as_xml_text(form.get(field, "").strip()) for element, field in names.items()}
    return {element: text for element, text in texts.items() if text}


def _body(form: Form) -> str:
    """A message body kept exactly as typed, spaces and all (an empty one is the API's error
    too)."""
    return as_xml_text(form.get("body", ""))


def queue_message(form: Form) -> NewMessage:
    """SendMessage: body, Priority, DelaySeconds."""
    body = _body(form)
    texts = _texts(form, {"Priority": "priority", "DelaySeconds": "delay_seconds"})
    return new_message({"MessageBody": body, **texts}.get)


def topic_message(topic_name: str, form: Form) -> PublishDraft:
    """PublishMessage: body and MessageTag."""
    body = _body(form)
    tag = _texts(form, {"MessageTag": "tag"}).get("MessageTag")
    return new_draft(topic_name, require_body(body), tag, {})


#: SetQueueAttributes' elements and the form fields that hold them.
QUEUE_ATTRIBUTE_FIELDS: Final = {
    "DelaySeconds": "delay_seconds",
    "MaximumMessageSize": "maximum_message_size",
    "MessageRetentionPeriod": "message_retention_period",
    "VisibilityTimeout": "visibility_timeout",
    "PollingWaitSeconds": "polling_wait_seconds",
    "LoggingEnabled": "logging_enabled",
}


def queue_attributes(form: Form) -> QueueChanges:
    """SetQueueAttributes: the numbers and LoggingEnabled, and a dead-letter policy when a
    target queue is named."""
    texts = _texts(form, QUEUE_ATTRIBUTE_FIELDS)
    policy = _texts(form, {"target": "dlq_target"})
    if policy:
        policy |= _texts(form, {"count": "dlq_max_receive_count"})
    values = attribute_values(texts.get, defaults=False)
    return QueueChanges(values, None, _policy(policy, enabled=bool(form.get("dlq_enabled"))))


def _policy(texts: dict[str, str], *, enabled: bool) -> PolicyUpdate | None:
    if not texts:
        return None
    enabled_text = "true" if enabled else "false"
    return parse_policy_fields(texts["target"], texts.get("count"), enabled_text)


def subscription(topic_name: str, name: str, form: Form) -> Subscription:
    """Subscribe: Endpoint, FilterTag, NotifyStrategy, NotifyContentFormat."""
    texts = _texts(
        form,
        {
            "Endpoint": "endpoint",
            "FilterTag": "filter_tag",
            "NotifyStrategy": "notify_strategy",
            "NotifyContentFormat": "notify_content_format",
        },
    )
    return subscription_of(topic_name, name, texts.get, None)


def decoded_body(body: str) -> str | None:
    """A body as base64-decoded text (invalid UTF-8 shown as U+FFFD), or ``None`` when it is not
    base64 at all."""
    try:
        raw = base64.b64decode(body.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    return raw.decode("utf-8", errors="replace")
