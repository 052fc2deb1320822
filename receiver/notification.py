"""Turn a verified push into a :class:`Notification`, whatever its format.

The format is told by the Content-Type (docs/protocol.md#push-headers): ``text/xml`` is XML,
``application/json`` is JSON and ``text/plain`` is SIMPLIFIED, where the body is the message itself
and the metadata travels in ``x-mns-*`` headers.

One rule for every format keeps handlers simple: a notification must have a message id and a
message; every other field is optional (absent strings become ``""``, an absent tag or publish
time ``None``), but a field that is present must be well-formed. Parsing runs only after
verification, yet the XML parser is still ``defusedxml``: a genuine sender's body can carry a
publisher's hostile text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from defusedxml import DefusedXmlException

# defusedxml's own ParseError: in defusedxml 0.7.0 it is not xml.etree's class, so catching
# xml.etree's let a malformed push body through as an unhandled error.
from defusedxml.ElementTree import ParseError, fromstring

from receiver.exceptions import MalformedNotificationError

__all__ = ["Notification", "NotificationFormat", "notification_format", "parse_notification"]

NotificationFormat = Literal["XML", "JSON", "SIMPLIFIED"]

_FORMAT_BY_MEDIA_TYPE: Mapping[str, NotificationFormat] = {
    "text/xml": "XML",
    "application/xml": "XML",
    "application/json": "JSON",
    "text/plain": "SIMPLIFIED",
}

# Body element / JSON key -> x-mns-* header carrying the same field in SIMPLIFIED pushes.
_HEADER_BY_KEY = {
    "MessageId": "x-mns-message-id",
    "MessageTag": "x-mns-message-tag",
    "PublishTime": "x-mns-publish-time",
    "TopicOwner": "x-mns-topic-owner",
    "TopicName": "x-mns-topic-name",
    "Subscriber": "x-mns-subscriber",
    "SubscriptionName": "x-mns-subscription-name",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Notification:
    """One verified notification, as handed to handlers.

    ``body`` is the raw request body and ``headers`` the request headers keyed by lowercased
    name (read-only), for anything the parsed fields do not cover. For SIMPLIFIED pushes,
    which carry no MessageMD5, ``message_md5`` is computed from the body (uppercase hex, like
    the service's).
    """

    message_id: str
    message: str
    message_tag: str | None
    topic_owner: str
    topic_name: str
    subscriber: str
    subscription_name: str
    publish_time: int | None
    """Milliseconds since the epoch; ``None`` only if the sender did not say."""
    message_md5: str
    format: NotificationFormat
    body: bytes = field(repr=False)
    headers: Mapping[str, str] = field(repr=False)


def notification_format(content_type: str) -> NotificationFormat:
    """Map a Content-Type (parameters and case ignored) to the notification format."""
    media_type = content_type.partition(";")[0].strip().lower()
    try:
        return _FORMAT_BY_MEDIA_TYPE[media_type]
    except KeyError:
        raise MalformedNotificationError(f"unsupported Content-Type {media_type!r}") from None


def parse_notification(body: bytes, headers: Mapping[str, str]) -> Notification:
    """Parse a verified push. ``headers`` must be keyed by lowercased name.

    Raises :class:`MalformedNotificationError` when the body or a required field is unusable.
    """
    content_type = headers.get("content-type", "")
    fmt = notification_format(content_type)
    if fmt == "XML":
        fields = _xml_fields(body)
    elif fmt == "JSON":
        fields = _json_fields(body)
    else:
        fields = {key: headers[name] for key, name in _HEADER_BY_KEY.items() if name in headers}
        fields["Message"] = _decode_text(body, content_type)
        fields["MessageMD5"] = hashlib.md5(body, usedforsecurity=False).hexdigest().upper()
    return Notification(
        message_id=_required(fields, "MessageId"),
        message=_required(fields, "Message"),
        message_tag=fields.get("MessageTag") or None,
        topic_owner=fields.get("TopicOwner", ""),
        topic_name=fields.get("TopicName", ""),
        subscriber=fields.get("Subscriber", ""),
        subscription_name=fields.get("SubscriptionName", ""),
        publish_time=_publish_time(fields.get("PublishTime")),
        message_md5=fields.get("MessageMD5", ""),
        format=fmt,
        body=body,
        headers=MappingProxyType(dict(headers)),
    )


def _xml_fields(body: bytes) -> dict[str, str]:
    """Children of ``<Notification>`` by local name, namespace or not; the first one wins."""
    try:
        root = fromstring(body)
    except (ParseError, DefusedXmlException, ValueError, LookupError) as exc:
        # LookupError and ValueError: an encoding declaration naming a codec that does not
        # exist, or one expat cannot use (multi-byte, not a text encoding).
        raise MalformedNotificationError(f"body is not acceptable XML: {exc}") from exc
    if _local_name(root.tag) != "Notification":
        raise MalformedNotificationError(f"XML root is {_local_name(root.tag)!r}, not Notification")
    fields: dict[str, str] = {}
    for child in root:
        fields.setdefault(_local_name(child.tag), child.text or "")
    return fields


def _local_name(tag: str) -> str:
    return tag.rpartition("}")[2]


def _json_fields(body: bytes) -> dict[str, str]:
    """A flat JSON object of strings; PublishTime may also be a number, null means absent."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: arrays nested too deep
        raise MalformedNotificationError(f"body is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise MalformedNotificationError("JSON body is not an object")
    fields: dict[str, str] = {}
    for key, value in document.items():
        if value is None:
            continue
        if key == "PublishTime" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise MalformedNotificationError(f"JSON field {key!r} is not a string")
        fields[key] = value
    return fields


def _decode_text(body: bytes, content_type: str) -> str:
    charset = "utf-8"
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    try:
        return body.decode(charset)
    except (LookupError, UnicodeDecodeError) as exc:
        raise MalformedNotificationError(f"body is not valid {charset!r} text") from exc


def _required(fields: Mapping[str, str], key: str) -> str:
    value = fields.get(key)
    if value is None or (key == "MessageId" and not value):
        raise MalformedNotificationError(f"notification has no {key}")
    return value


def _publish_time(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    if not value.isascii() or not value.isdigit():
        raise MalformedNotificationError(f"PublishTime {value!r} is not epoch milliseconds")
    return int(value)
