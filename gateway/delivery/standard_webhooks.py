"""Standard Webhooks signatures (https://www.standardwebhooks.com/), pure: no IO, no clock.

A subscription that has them turned on gets three more headers on every HTTP(S) push, on top of
the MNS ones (docs/delivery.md#standard-webhooks-signatures):

* ``webhook-id``: ``msg_`` and 32 hex digits derived from the topic, the subscription and the
  MessageId, so every attempt of one delivery (and a replay of it) carries the same id;
* ``webhook-timestamp``: the attempt's Unix time in seconds;
* ``webhook-signature``: ``v1,`` and the base64 HMAC-SHA256 of ``id.timestamp.body`` under the
  subscription's secret (``whsec_`` and base64 of random bytes; the key is the decoded bytes).
  During a rotation the old secret signs too, a second signature after a space, as the
  specification allows, so receivers can move to the new secret at their own pace.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

SECRET_PREFIX: Final = "whsec_"
#: Random bytes in a new secret: the specification asks for 24 to 64.
SECRET_BYTES: Final = 32
#: How long a rotated-out secret still signs, beside the new one.
ROTATION_OVERLAP_MS: Final = 24 * 3600 * 1000
ID_PREFIX: Final = "msg_"


def secret_of(random_bytes: bytes) -> str:
    """A ``whsec_`` secret for ``random_bytes`` (the caller draws them)."""
    if not 24 <= len(random_bytes) <= 64:
        raise ValueError("a Standard Webhooks secret holds 24 to 64 bytes")
    return SECRET_PREFIX + base64.b64encode(random_bytes).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret: its base64 part, decoded."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a Standard Webhooks secret starts with whsec_")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error as exc:
        raise ValueError("a Standard Webhooks secret is whsec_ and base64") from exc
    if not key:
        raise ValueError("a Standard Webhooks secret may not be empty")
    return key


def webhook_id(topic: str, subscription: str, message_id: str) -> str:
    """The same for every attempt of a message's delivery to one subscription, different for
    each subscription (a receiver serving several may deduplicate on it)."""
    text = f"{topic}\n{subscription}\n{message_id}".encode()
    return ID_PREFIX + hashlib.sha256(text).hexdigest()[:32]


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """``v1,`` + base64 HMAC-SHA256 of ``message_id.timestamp.body`` (the body's exact bytes)."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def webhook_headers(
    secrets: Sequence[str], message_id: str, timestamp: int, body: bytes
) -> list[tuple[str, str]]:
    """The three headers, one signature per secret separated by spaces (newest first)."""
    signatures = " ".join(signature(secret, message_id, timestamp, body) for secret in secrets)
    return [
        ("webhook-id", message_id),
        ("webhook-timestamp", str(timestamp)),
        ("webhook-signature", signatures),
    ]


@dataclass(frozen=True, slots=True)
class WebhookSecrets:
    """A subscription's secrets: the current one and, for a day after a rotation, the one
    before it. Never in a repr: these are the keys receivers trust."""

    current: str = field(repr=False)
    previous: str | None = field(default=None, repr=False)
    #: Epoch ms after which ``previous`` no longer signs.
    previous_until_ms: int | None = None

    def signing(self, now_ms: int) -> tuple[str, ...]:
        """The secrets that sign a push made at ``now_ms``."""
        if self.previous and self.previous_until_ms is not None and now_ms < self.previous_until_ms:
            return (self.current, self.previous)
        return (self.current,)


@dataclass(frozen=True, slots=True)
class StandardWebhook:
    """What a push needs to carry the headers: the id, the attempt's time, the secrets."""

    message_id: str
    timestamp: int
    secrets: tuple[str, ...] = field(repr=False)

    def headers(self, body: bytes) -> list[tuple[str, str]]:
        return webhook_headers(self.secrets, self.message_id, self.timestamp, body)


def standard_webhook(
    secrets: WebhookSecrets | None, topic: str, subscription: str, message_id: str, now: float
) -> StandardWebhook | None:
    """A push's Standard Webhook at epoch seconds ``now``; ``None`` when the subscription has
    them off."""
    if secrets is None:
        return None
    return StandardWebhook(
        message_id=webhook_id(topic, subscription, message_id),
        timestamp=int(now),
        secrets=secrets.signing(int(now * 1000)),
    )
