"""The rules of a queue message's life, free of storage and time sources.

A stored message carries three times and a counter, and its state follows from them and "now":

- ``visible_at`` — when it may next be received: send time plus delay for a new message,
  NextVisibleTime for a received one. At or before now the message is **Active**.
- after now, a message never received (``dequeue_count == 0``) is **Delayed**; a received one is
  **Inactive** (hidden for its VisibilityTimeout).
- ``expires_at`` — send time plus MessageRetentionPeriod: at or before now the message is
  **Expired** whatever else holds, and is never handed out or counted again.

Deriving the state instead of storing it means no sweeper has to flip Delayed or Inactive
messages to Active when their time comes: a query with ``visible_at <= now`` already sees them.

Receive order: priority first (1 is highest), then the time the message became Active, oldest
first, then MessageId (ids grow with send time, so a batch sent in one request keeps its order).
For a message sent without delay, "became Active" is its send time, so this is send order; a
delayed message queues from the end of its delay and a message whose visibility timeout lapsed
re-joins from that moment. Ordering by ``visible_at`` also lets one index range per priority find
every Active message, however many Delayed or Inactive messages share the queue.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Final

from gateway.queues.records import PRIORITY

#: Receive scans priorities in this order: 1 (highest) first.
PRIORITIES: Final = tuple(range(PRIORITY.low, PRIORITY.high + 1))


class MessageState(StrEnum):
    DELAYED = "Delayed"
    ACTIVE = "Active"
    INACTIVE = "Inactive"
    EXPIRED = "Expired"


def message_state(
    *, visible_at: int, expires_at: int, dequeue_count: int, now_ms: int
) -> MessageState:
    if expires_at <= now_ms:
        return MessageState.EXPIRED
    if visible_at <= now_ms:
        return MessageState.ACTIVE
    return MessageState.INACTIVE if dequeue_count > 0 else MessageState.DELAYED


def effective_delay(message_delay: int | None, queue_delay: int) -> int:
    """A message's own DelaySeconds wins over the queue's, even when it is 0
    (docs/protocol.md#message-states)."""
    return queue_delay if message_delay is None else message_delay


def visible_after(now_ms: int, seconds: int) -> int:
    return now_ms + seconds * 1000


def receive_order_key(priority: int, visible_at: int, message_id: str) -> tuple[int, int, str]:
    """The order receive and peek hand out Active messages in (see the module docstring)."""
    return (priority, visible_at, message_id)


def body_md5(body: str) -> str:
    """MessageBodyMD5: uppercase hex MD5 of the body's UTF-8 bytes, as stored (never decoded)."""
    return hashlib.md5(body.encode("utf-8")).hexdigest().upper()


def body_size(body: str) -> int:
    """What MaximumMessageSize limits: the body's bytes as sent (base64 text when encoded)."""
    return len(body.encode("utf-8"))
