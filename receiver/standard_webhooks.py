"""Standard Webhooks verification (https://www.standardwebhooks.com/), pure and stdlib only.

A gateway subscription with Standard Webhooks turned on signs each push, beside the MNS
signature, with ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``: space-separated
``v1,<base64 HMAC-SHA256 of "id.timestamp.body">`` entries, one per secret that signs (two
during a rotation). A push verifies when one of them matches under one of the secrets the
receiver holds, and its timestamp is within the tolerance of the receiver's clock
(docs/receiver.md#standard-webhooks).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Final

from receiver.exceptions import MissingHeaderError, WebhookSignatureError, WebhookTimestampError

__all__ = [
    "SECRET_PREFIX",
    "TOLERANCE_SECONDS",
    "secret_keys",
    "signature",
    "verify_standard_webhook",
]

SECRET_PREFIX: Final = "whsec_"
#: As the specification's libraries allow: five minutes either way.
TOLERANCE_SECONDS: Final = 300.0


def secret_keys(secrets: str | Iterable[str]) -> tuple[bytes, ...]:
    """The HMAC keys of one ``whsec_`` secret or several (during a rotation, the old and the
    new); a secret that is not ``whsec_`` and base64 is refused now, not at the first push."""
    given = [secrets] if isinstance(secrets, str) else list(secrets)
    if not given:
        raise ValueError("standard_webhooks_secret needs at least one whsec_ secret")
    keys = []
    for secret in given:
        if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
            raise ValueError("a Standard Webhooks secret is whsec_ followed by base64")
        try:
            key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except binascii.Error as exc:
            raise ValueError("a Standard Webhooks secret is whsec_ followed by base64") from exc
        if not key:
            raise ValueError("a Standard Webhooks secret may not be empty")
        keys.append(key)
    return tuple(keys)


def _digest(key: bytes, message_id: str, timestamp: int, body: bytes) -> bytes:
    return hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """One ``webhook-signature`` entry: ``v1,`` + base64 HMAC-SHA256 (for tests that sign)."""
    return "v1," + base64.b64encode(_digest(key, message_id, timestamp, body)).decode("ascii")


def verify_standard_webhook(
    keys: Iterable[bytes],
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance: float = TOLERANCE_SECONDS,
) -> str:
    """Check a push's Standard Webhooks headers (``headers`` keyed by lowercased name) against
    ``body`` exactly as received; the ``webhook-id`` when one signature matches. Raises
    :class:`MissingHeaderError`, :class:`WebhookTimestampError` or
    :class:`WebhookSignatureError`."""
    message_id = _header(headers, "webhook-id")
    timestamp_text = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not (timestamp_text.isascii() and timestamp_text.isdigit()):
        raise WebhookTimestampError(f"webhook-timestamp {timestamp_text[:40]!r} is not a number")
    timestamp = int(timestamp_text)
    if abs(now - timestamp) > tolerance:
        raise WebhookTimestampError(
            f"webhook-timestamp {timestamp} is {now - timestamp:+.0f} s from now (tolerance"
            f" {tolerance:g} s)"
        )
    expected = [_digest(key, message_id, timestamp, body) for key in keys]
    for entry in signatures.split(" "):
        version, _, encoded = entry.partition(",")
        if version != "v1":
            continue
        try:
            given = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            continue
        if any(hmac.compare_digest(given, digest) for digest in expected):
            return message_id
    raise WebhookSignatureError("no webhook-signature matches a configured secret")


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name, "")
    if not value:
        raise MissingHeaderError(name)
    return value
