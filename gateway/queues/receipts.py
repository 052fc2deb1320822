"""Receipt handles: unforgeable tokens naming one receive of one message.

A handle is standard base64 of ``version | nonce | next_visible_time | message_id | mac``:

- ``nonce`` is 63 random bits drawn on every receive (and on a delayed send) and stored with the
  message: it names that receive. ChangeMessageVisibility keeps it and issues a handle with the
  new NextVisibleTime (:meth:`Receipt.moved_to`). Delete and ChangeMessageVisibility accept any
  handle of the receive that holds the message now, while it is hidden and unexpired
  (:func:`of_its_receive`): the handle ChangeMessageVisibility replaced works too, because the
  official PHP SDK's own tests delete with it and the documents never say it dies
  (docs/protocol.md#receipt-handles). A handle dies as soon as the message is deleted, received
  again or visible again, without a table of spent handles.
- ``mac`` is a truncated HMAC-SHA256 over the queue name and the payload, keyed by a secret the
  store keeps in the database (shared by every worker process, surviving restarts). A handle the
  gateway did not issue, or one issued for another queue, is rejected before touching the data.

Handles contain ``+``, ``/`` and ``=``; clients put them in query strings unencoded, which works
because the API reads the raw query string (docs/protocol.md#raw-request-uri).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
import struct
from dataclasses import dataclass
from typing import Final

from gateway.errors.mns import MNSError
from gateway.queues.states import MessageState, message_state

_VERSION: Final = 1
_HEADER = struct.Struct(">BQQ")  # version, nonce, next visible time (ms)
_MAC_BYTES: Final = 16
_MAX_ID_BYTES: Final = 128
SECRET_BYTES: Final = 32


def new_nonce() -> int:
    """A fresh receipt nonce; 63 bits so it fits a signed BIGINT column."""
    return secrets.randbits(63)


def new_secret() -> bytes:
    return secrets.token_bytes(SECRET_BYTES)


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a verified handle names: one receive of one message, valid until ``visible_at``."""

    message_id: str
    nonce: int
    visible_at: int

    def moved_to(self, visible_at: int) -> Receipt:
        """The handle ChangeMessageVisibility issues: the same receive, a new NextVisibleTime."""
        return Receipt(self.message_id, self.nonce, visible_at)


@dataclass(frozen=True, slots=True)
class ReceiptMatch:
    """What a stored message must hold for a handle to act on it at ``now_ms`` (the store's
    condition): its id, the nonce of the receive that issued the handle, the handle's own
    NextVisibleTime only where ``visible_at`` is set, and in every case a NextVisibleTime after
    now and an expiry after now (hidden, not yet Active again, not Expired)."""

    message_id: str
    nonce: int
    visible_at: int | None
    now_ms: int


def of_its_receive(receipt: Receipt, now_ms: int) -> ReceiptMatch:
    """Delete and ChangeMessageVisibility: any handle of the receive that holds the message,
    the one a ChangeMessageVisibility replaced included, while the message is hidden."""
    return ReceiptMatch(receipt.message_id, receipt.nonce, None, now_ms)


def exactly(receipt: Receipt, now_ms: int) -> ReceiptMatch:
    """Undoing a receive whose response could not be written: only while the handle it issued is
    still the message's latest (no ChangeMessageVisibility used it since)."""
    return ReceiptMatch(receipt.message_id, receipt.nonce, receipt.visible_at, now_ms)


def matches(
    match: ReceiptMatch,
    *,
    message_id: str,
    nonce: int,
    visible_at: int,
    expires_at: int,
    dequeue_count: int,
) -> bool:
    """Whether a stored message with these fields is what ``match`` may act on."""
    state = message_state(
        visible_at=visible_at,
        expires_at=expires_at,
        dequeue_count=dequeue_count,
        now_ms=match.now_ms,
    )
    return (
        (message_id, nonce) == (match.message_id, match.nonce)
        and match.visible_at in (None, visible_at)
        and state in (MessageState.INACTIVE, MessageState.DELAYED)
    )


class ReceiptSigner:
    """Issues and verifies handles with one secret."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("a receipt secret needs at least 16 bytes")
        self._secret = secret

    def _mac(self, queue_name: str, payload: bytes) -> bytes:
        message = queue_name.encode() + b"\0" + payload
        return hmac.digest(self._secret, message, "sha256")[:_MAC_BYTES]

    def issue(self, queue_name: str, receipt: Receipt) -> str:
        payload = _HEADER.pack(_VERSION, receipt.nonce, receipt.visible_at)
        payload += receipt.message_id.encode("ascii")
        return base64.b64encode(payload + self._mac(queue_name, payload)).decode("ascii")

    def verify(self, queue_name: str, handle: str) -> Receipt:
        """The receipt ``handle`` names; 400 ``ReceiptHandleError`` unless we issued it for
        ``queue_name``. Whether it is still current is the store's question."""
        # A client that form-encoded the query string turned '+' into a space: undo that.
        raw = _decode(handle.strip().replace(" ", "+"))
        if len(raw) <= _HEADER.size + _MAC_BYTES or len(raw) > _HEADER.size + _MAX_ID_BYTES:
            raise MNSError("ReceiptHandleError")
        payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(queue_name, payload)):
            raise MNSError("ReceiptHandleError")
        version, nonce, visible_at = _HEADER.unpack_from(payload)
        if version != _VERSION:
            raise MNSError("ReceiptHandleError")
        return Receipt(payload[_HEADER.size :].decode("ascii"), nonce, visible_at)


def _decode(handle: str) -> bytes:
    try:
        return base64.b64decode(handle.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise MNSError("ReceiptHandleError") from exc
