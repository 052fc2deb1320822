"""Opt-in deduplication: run a handler once per message and subscription within a window.

MNS delivers at least once. A push whose handler succeeded can still come again, typically when
the 204 arrived after the sender's 5-second timeout; the retry follows within minutes. With
deduplication on, the receiver *claims* a key before running the handler, answers a duplicate
with 204 without running anything, and *releases* the key if the handler fails, so the
sender's retry runs it again.

The default :class:`InMemoryDedupeStore` lives in one process. Under several worker processes
(gunicorn ``--workers``) a duplicate can reach another worker; use a shared store there, for
example Redis, where ``claim`` is ``SET key 1 NX EX window`` and ``release`` is ``DEL key``.
A shared store outlives a worker that crashed mid-handler, leaving its key claimed until the
window ends; that retry would then be skipped, so keep the window as short as your duplicates
allow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from cachetools import TTLCache

from receiver.notification import Notification

__all__ = ["DedupeStore", "InMemoryDedupeStore", "dedupe_key"]


@runtime_checkable
class DedupeStore(Protocol):
    """Remembers which notifications a handler already took, for a window of its choosing."""

    def claim(self, key: str) -> bool:
        """Atomically record ``key``; True if it was not already recorded within the window."""
        ...

    def release(self, key: str) -> None:
        """Forget ``key`` (its handler failed), so the next delivery runs the handler."""
        ...


def dedupe_key(notification: Notification) -> str:
    """Identify one delivery target: the message id within the subscription it was sent to.

    Subscription names are unique only within a topic, so the topic and its owner are part
    of the key. The separator cannot appear in MNS names, so keys cannot collide.
    """
    return "\n".join(
        (
            notification.topic_owner,
            notification.topic_name,
            notification.subscription_name,
            notification.message_id,
        )
    )


class InMemoryDedupeStore:
    """A per-process :class:`DedupeStore` on a TTL cache.

    ``window`` is in seconds of ``timer``. ``maxsize`` bounds memory: past it, the least recently
    claimed keys are forgotten early, which can only let a duplicate through, never drop a
    message.
    """

    def __init__(
        self,
        *,
        window: float = 3600.0,
        maxsize: int = 100_000,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._seen: TTLCache[str, bool] = TTLCache(maxsize, window, timer=timer)
        self._lock = threading.Lock()

    def claim(self, key: str) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = True
            return True

    def release(self, key: str) -> None:
        with self._lock:
            self._seen.pop(key, None)
