"""The four subscription endpoint forms, parsed once so the API and the workers agree on them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.errors.mns import MNSError
from gateway.protocol.names import validate_name

_QUEUE = re.compile(
    r"acs:mns:(?P<region>[A-Za-z0-9-]+):(?P<account>[A-Za-z0-9-]+):queues/(?P<queue>.+)"
)
_MAIL = re.compile(r"mail:directmail:(?P<address>[^@\s:]+@[^@\s:]+\.[^@\s:]+)")
_SMS = re.compile(r"sms:directsms:(?P<phone>anonymous|\+?[0-9]{5,20})")
RESERVED_PATH_PREFIX = "/mns-reserved-"
#: How each non-HTTP form starts (and a queue's name follows QUEUE_PATH).
QUEUE_PREFIX = "acs:mns:"
QUEUE_PATH = ":queues/"
MAIL_PREFIX = "mail:directmail:"
SMS_PREFIX = "sms:directsms:"
#: The SmsEndpoint whose receivers each message names (DirectSMS Receiver or SmsParams).
SMS_ANONYMOUS = "sms:directsms:anonymous"


@dataclass(frozen=True, slots=True)
class HttpEndpoint:
    url: str


@dataclass(frozen=True, slots=True)
class QueueEndpoint:
    region: str
    account_id: str
    queue_name: str


@dataclass(frozen=True, slots=True)
class MailEndpoint:
    address: str


@dataclass(frozen=True, slots=True)
class SmsEndpoint:
    phone: str  # "anonymous" or a number


Endpoint = HttpEndpoint | QueueEndpoint | MailEndpoint | SmsEndpoint


def _parse_http(value: str) -> HttpEndpoint:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as exc:
        raise MNSError("EndpointInvalid") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise MNSError("EndpointInvalid")
    if parts.path.startswith(RESERVED_PATH_PREFIX) or any(c.isspace() for c in value):
        raise MNSError("EndpointInvalid")
    return HttpEndpoint(value)


def parse_endpoint(value: str) -> Endpoint:
    """Parse a Subscribe ``Endpoint``; anything unrecognised is ``EndpointInvalid``."""
    value = value.strip()
    if value.startswith(("http://", "https://")):
        return _parse_http(value)
    if match := _QUEUE.fullmatch(value):
        try:
            validate_name("queue", match["queue"])
        except MNSError as exc:
            raise MNSError("EndpointInvalid") from exc
        return QueueEndpoint(match["region"], match["account"], match["queue"])
    if match := _MAIL.fullmatch(value):
        return MailEndpoint(match["address"])
    if match := _SMS.fullmatch(value):
        return SmsEndpoint(match["phone"])
    raise MNSError("EndpointInvalid")


def route_of(endpoint: str) -> str:
    """The unit that delivery concurrency is bounded by: scheme, host and port for HTTP.

    Deliveries to one slow route must not hold up the others, so the workers count in-flight
    pushes per route. Non-HTTP endpoints are their own route kind (``queue``, ``mail``, ``sms``).
    """
    parsed = parse_endpoint(endpoint)
    if isinstance(parsed, HttpEndpoint):
        parts = urlsplit(parsed.url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"
    if isinstance(parsed, QueueEndpoint):
        return f"queue:{parsed.region}:{parsed.account_id}"
    if isinstance(parsed, MailEndpoint):
        return "mail"
    return "sms"
