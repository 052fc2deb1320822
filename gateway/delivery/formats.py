"""What a push looks like on the wire: body, headers, string to sign and request path (pure).

Receivers written for Alibaba Cloud MNS parse these bytes, some of them by hand and some looking
headers up case-sensitively, so every spelling here follows docs/protocol.md#push-headers exactly.
Nothing in this module does IO or reads a clock: the caller passes the Date and request id, which
keeps every output reproducible in tests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import formatdate
from functools import lru_cache
from typing import Final

from gateway.errors.delivery import InvalidEndpointError, UnrenderableMessageError
from gateway.protocol import MNS_VERSION
from gateway.protocol.notify import ContentFormat
from gateway.protocol.xml import NAMESPACE, escape_text

USER_AGENT: Final = "Aliyun Notification Service Agent"
DEFAULT_PUSH_PATH: Final = "/notifications"

#: Characters XML 1.0 cannot carry at all, not even as character references.
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_XML_HEAD: Final = f'<?xml version="1.0" encoding="utf-8"?><Notification xmlns="{NAMESPACE}">'
#: The standard headers the push signature covers, in the string to sign's order.
_SIGNED_STANDARD: Final = ("content-md5", "content-type", "date")


CONTENT_TYPES: Final[dict[ContentFormat, str]] = {
    ContentFormat.XML: "text/xml;charset=utf-8",
    ContentFormat.JSON: "application/json;charset=utf-8",
    ContentFormat.SIMPLIFIED: "text/plain;charset=utf-8",
}


@dataclass(frozen=True, slots=True)
class PushNotification:
    """One message as one subscription sees it: everything the body and headers are built from."""

    topic_owner: str
    topic_name: str
    subscriber: str
    subscription_name: str
    message_id: str
    message: str
    #: Uppercase hex MD5 of the UTF-8 body, the MessageBodyMD5 PublishMessage returned.
    message_md5: str
    message_tag: str | None
    publish_time_ms: int


@dataclass(frozen=True, slots=True)
class RenderedPush:
    body: bytes
    content_type: str


def message_md5(message: str) -> str:
    """MessageMD5/MessageBodyMD5: uppercase hex MD5 of the UTF-8 bytes.

    docs/protocol.md#message-md5
    """
    return hashlib.md5(message.encode("utf-8")).hexdigest().upper()


def http_date(epoch_seconds: float) -> str:
    """An RFC 1123 GMT date, the only Date format MNS allows (docs/protocol.md#dates)."""
    return _http_date(int(epoch_seconds))


@lru_cache(maxsize=8)
def _http_date(second: int) -> str:
    """Formatting costs more than a lookup, and every push in the same second shares the date."""
    return formatdate(second, usegmt=True)


def _fields(notification: PushNotification) -> list[tuple[str, str]]:
    """Body fields in the order of the MNS XML sample (docs/protocol.md#push-bodies); MessageTag
    only when there is one."""
    fields = [
        ("TopicOwner", notification.topic_owner),
        ("TopicName", notification.topic_name),
        ("Subscriber", notification.subscriber),
        ("SubscriptionName", notification.subscription_name),
        ("MessageId", notification.message_id),
        ("Message", notification.message),
        ("MessageMD5", notification.message_md5),
    ]
    if notification.message_tag is not None:
        fields.append(("MessageTag", notification.message_tag))
    fields.append(("PublishTime", str(notification.publish_time_ms)))
    return fields


def _render_xml(notification: PushNotification) -> str:
    fields = _fields(notification)
    text = "".join([value for _, value in fields])
    # Printable text holds none of the forbidden characters (nor a carriage return): telling so
    # is cheaper than the expression's search, which only other text gets. Printable text
    # without markup characters, the common case, is written as it is.
    printable = text.isprintable()
    if not printable:
        for name, value in fields:
            if _XML_FORBIDDEN.search(value):
                raise UnrenderableMessageError(f"{name} holds a character XML 1.0 cannot carry")
    plain = printable and "&" not in text and "<" not in text and ">" not in text
    elements = [
        f"<{name}>{value if plain else escape_text(value)}</{name}>" for name, value in fields
    ]
    return f"{_XML_HEAD}{''.join(elements)}</Notification>"


def render(notification: PushNotification, fmt: ContentFormat) -> RenderedPush:
    """The request body and its Content-Type for one NotifyContentFormat.

    XML is written compactly (no whitespace between elements) because the MNS sample is not
    well-formed and whitespace would become text nodes for receivers that read mixed content.
    """
    if fmt is ContentFormat.XML:
        text = _render_xml(notification)
    elif fmt is ContentFormat.JSON:
        text = json.dumps(dict(_fields(notification)), ensure_ascii=False, separators=(",", ":"))
    else:
        text = notification.message
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnrenderableMessageError("the message is not valid Unicode text") from exc
    return RenderedPush(body=body, content_type=CONTENT_TYPES[fmt])


def content_md5(body: bytes) -> str:
    """Base64 of the lowercase hex MD5, as in the MNS XML push example (44 characters;
    docs/protocol.md#where-the-documents-disagree)."""
    return base64.b64encode(hashlib.md5(body).hexdigest().encode("ascii")).decode("ascii")


def push_headers(
    notification: PushNotification,
    rendered: RenderedPush,
    *,
    date: str,
    request_id: str,
    signing_cert_url: str,
    unsigned: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """Every header of a push but ``Authorization``, in docs/protocol.md#push-headers' order,
    then ``unsigned`` (trace context, the Standard Webhooks headers: none of them ``x-mns-*``,
    so the MNS signature is as before), all checked alike.

    :func:`gateway.delivery.signing.sign_headers` inserts ``Authorization`` after ``Date``.
    Host and Content-Length are added by the HTTP client. Every header is checked here
    (:func:`checked_headers`): one that cannot be sent fails the message, not the endpoint.
    """
    template = push_template(notification, rendered.content_type, signing_cert_url)
    extra = checked_extra_headers(unsigned)
    own = template.own_values(notification, content_md5(rendered.body), date, request_id)
    return template.headers(own, None) + extra


#: The headers that change from one push of a subscription to the next, in the order of a
#: :class:`PushTemplate`'s values: the body's MD5, then what the push or its message has alone.
_OWN_HEADERS: Final = (
    "Content-md5",
    "Date",
    "x-mns-request-id",
    "x-mns-message-id",
    "x-mns-publish-time",
    "x-mns-message-tag",
)
#: Stand-ins for those values and the request path while a template's string to sign is made:
#: NUL passes no header check (:func:`checked_headers`), so no other text of it holds one.
_STAND_INS: Final = tuple(f"\0{index}\0" for index in range(len(_OWN_HEADERS) + 1))


@dataclass(frozen=True, slots=True)
class PushTemplate:
    """What every push of one subscription signed with one key shares: its headers, checked
    once, and its string to sign with the push's own values left open.

    :meth:`headers` states the order of docs/protocol.md#push-headers, once; the string to sign
    is :func:`string_to_sign`'s own, made over stand-ins, so neither can say otherwise than the
    rules do. A push then checks and fills in its six values (:data:`_OWN_HEADERS`) and its path
    instead of building, checking, scanning and sorting thirteen headers.
    """

    content_type: str
    signing_cert: str  #: the ``x-mns-signing-cert-url`` header: the URL in base64
    topic_owner: str
    topic_name: str
    subscriber: str
    subscription_name: str
    tagged: bool
    #: :func:`string_to_sign`'s text as a :meth:`str.format` pattern: {0}-{5} the own values,
    #: {6} the path.
    to_sign: str = ""

    def headers(self, own: Sequence[str], authorization: str | None) -> list[tuple[str, str]]:
        """The push's headers in order, ``Authorization`` after ``Date`` when given."""
        headers = [("Content-md5", own[0]), ("Content-Type", self.content_type), ("Date", own[1])]
        if authorization is not None:
            headers.append(("Authorization", authorization))
        headers += [
            ("User-Agent", USER_AGENT),
            ("x-mns-request-id", own[2]),
            ("x-mns-version", MNS_VERSION),
            ("x-mns-signing-cert-url", self.signing_cert),
            ("x-mns-message-id", own[3]),
            ("x-mns-publish-time", own[4]),
            ("x-mns-topic-owner", self.topic_owner),
            ("x-mns-topic-name", self.topic_name),
            ("x-mns-subscriber", self.subscriber),
            ("x-mns-subscription-name", self.subscription_name),
        ]
        if self.tagged:
            headers.append(("x-mns-message-tag", own[5]))
        return headers

    def own_values(
        self, notification: PushNotification, md5: str, date: str, request_id: str
    ) -> tuple[str, ...]:
        """This push's values, checked as every header is (:func:`checked_headers`)."""
        own = (
            md5,
            date,
            request_id,
            notification.message_id,
            str(notification.publish_time_ms),
            notification.message_tag or "",
        )
        if _breaks_line("".join(own)):
            name = next(
                name for name, value in zip(_OWN_HEADERS, own, strict=True) if _breaks_line(value)
            )
            raise UnrenderableMessageError(f"header {name!r} would contain a line break")
        return own

    def string_to_sign(self, own: Sequence[str], path_and_query: str) -> str:
        """:func:`string_to_sign` of this push's headers, POSTed to ``path_and_query``."""
        return self.to_sign.format(*own, path_and_query)


#: About 1 KB each. Past this many subscriptions pushed to in turn, a push makes its template
#: again, which costs a little more than a push's headers and string to sign did without one.
@lru_cache(maxsize=16_384)
def _template(
    content_type: str,
    signing_cert_url: str,
    topic_owner: str,
    topic_name: str,
    subscriber: str,
    subscription_name: str,
    tagged: bool,
) -> PushTemplate:
    signing_cert = base64.b64encode(signing_cert_url.encode()).decode("ascii")
    fields = (content_type, signing_cert, topic_owner, topic_name, subscriber, subscription_name)
    blank = PushTemplate(*fields, tagged)
    checked_headers(blank.headers(("",) * len(_OWN_HEADERS), None))
    text = string_to_sign("POST", blank.headers(_STAND_INS, None), _STAND_INS[-1])
    pattern = text.replace("{", "{{").replace("}", "}}")
    for index, stand_in in enumerate(_STAND_INS):
        pattern = pattern.replace(stand_in, f"{{{index}}}")
    return PushTemplate(*fields, tagged, pattern)


def push_template(
    notification: PushNotification, content_type: str, signing_cert_url: str
) -> PushTemplate:
    """The template of ``notification``'s subscription for this format and signing key (made
    once, then cached); :class:`UnrenderableMessageError` if one of its headers cannot be sent."""
    return _template(
        content_type,
        signing_cert_url,
        notification.topic_owner,
        notification.topic_name,
        notification.subscriber,
        notification.subscription_name,
        notification.message_tag is not None,
    )


def checked_extra_headers(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers sent after the signed ones (trace context, Standard Webhooks), checked: none may
    be ``x-mns-*``, which would change the string to sign."""
    if not headers:
        return []
    if any(name.lower().startswith("x-mns-") for name, _ in headers):
        raise ValueError("an x-mns-* header would change the string to sign")
    return checked_headers(list(headers))


def checked_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers``, or :class:`UnrenderableMessageError` when one would break the request (a
    line break or NUL in a name or value): the push of that message cannot be sent, and
    retrying cannot help. Sending it anyway failed in the HTTP client, counted as the
    endpoint's ``connection_error`` and could open a healthy endpoint's breaker (issue 47)."""
    if _breaks_line("".join([f"{name}{value}" for name, value in headers])):
        name = next(name for name, value in headers if _breaks_line(name + value))
        raise UnrenderableMessageError(f"header {name!r} would contain a line break")
    return headers


def _breaks_line(text: str) -> bool:
    """Whether ``text`` holds a CR, LF or NUL (three searches in C: each is cheaper than one
    regular expression over the same text, and than a Python loop per header)."""
    return "\r" in text or "\n" in text or "\0" in text


def string_to_sign(method: str, headers: Sequence[tuple[str, str]], path_and_query: str) -> str:
    """The text the push signature covers (docs/protocol.md#push-signature).

    ``METHOD\\nContent-MD5\\nContent-Type\\nDate\\n`` + each ``x-mns-*`` header as lowercased
    ``name:value\\n`` sorted by name + the request path and query exactly as sent. Header values
    are used verbatim: a receiver only sees what is on the wire.
    """
    standard: dict[str, str] = {}
    mns_headers = []
    for name, value in headers:  # one pass; of a repeated standard header the first counts
        lowered = name.lower()
        if lowered.startswith("x-mns-"):
            mns_headers.append((lowered, value))
        elif lowered in _SIGNED_STANDARD and lowered not in standard:
            standard[lowered] = value
    mns_headers.sort()
    lines = [method.upper(), *[standard.get(name, "") for name in _SIGNED_STANDARD]]
    canonical_headers = "".join([f"{name}:{value}\n" for name, value in mns_headers])
    return "\n".join(lines) + "\n" + canonical_headers + path_and_query


@lru_cache(maxsize=4096)
def push_path(endpoint_url: str) -> str:
    """The request target a push is POSTed to: the URL's path and query, normalised.

    An endpoint without a path gets ``/notifications`` (docs/protocol.md#push-request). The
    normalisation is urllib3's own (percent-encoding of unsafe characters, dot segments removed), so
    the path that is signed is byte for byte the one
    :class:`~gateway.pushing.transport.PushTransport` writes in the request line.
    """
    # Imported here, once per endpoint (cached): urllib3 is a good part of the start of the
    # commands and gateways that never push
    # (docs/benchmarks.md#a-gateways-stop-and-what-a-command-imports).
    from urllib3.exceptions import LocationParseError
    from urllib3.util import parse_url

    try:
        url = parse_url(endpoint_url)
    except LocationParseError as exc:
        raise InvalidEndpointError(f"cannot parse endpoint URL {endpoint_url!r}") from exc
    path = url.path or DEFAULT_PUSH_PATH
    return path if url.query is None else f"{path}?{url.query}"
