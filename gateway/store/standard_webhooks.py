"""Turning a subscription's Standard Webhooks signatures on and off, and rotating its secret
(docs/delivery.md#standard-webhooks-signatures).

The secret is drawn here (``random_bytes``, injectable) and kept on the subscription's row; a
rotation keeps the one before it signing for :data:`ROTATION_OVERLAP_MS` by the store's clock.
"""

from __future__ import annotations

import secrets as random_source
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from gateway.delivery.standard_webhooks import (
    ROTATION_OVERLAP_MS,
    SECRET_BYTES,
    WebhookSecrets,
    secret_of,
)
from gateway.errors.mns import MNSError
from gateway.store.backends.database import Database
from gateway.store.sql import webhook_secret_sql as sql
from gateway.store.sql.connection import Connection


@dataclass(frozen=True, slots=True)
class WebhookState:
    """What may be shown of a subscription's secrets without showing them."""

    enabled: bool
    #: Epoch ms the previous secret stops signing (``None``: no rotation under way).
    previous_until_ms: int | None = None


class StandardWebhookStore:
    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        random_bytes: Callable[[int], bytes] = random_source.token_bytes,
    ) -> None:
        self.database = database
        self.clock = clock
        self.random_bytes = random_bytes

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def state(self, topic_name: str, name: str) -> WebhookState:
        found = self.database.read(partial(sql.get_secrets, topic_name=topic_name, name=name))
        return _state(found, self._now_ms())

    def states(self, topic_name: str) -> dict[str, WebhookState]:
        """Every subscription of the topic with them on, by name."""
        rows = self.database.read(partial(sql.topic_states, topic_name=topic_name))
        now_ms = self._now_ms()
        return {
            row["name"]: WebhookState(True, _pending(row["previous_until"], now_ms))
            for row in rows
            if row["enabled"]
        }

    def turn_on(self, topic_name: str, name: str) -> tuple[str, WebhookState]:
        """The secret, new or (already on) the current one, and the state."""
        fresh = secret_of(self.random_bytes(SECRET_BYTES))

        def work(conn: Connection) -> WebhookSecrets:
            found = sql.get_secrets(conn, topic_name, name)
            if found is None:
                found = WebhookSecrets(current=fresh)
                sql.set_secrets(conn, topic_name, name, found)
            return found

        kept = self.database.write(work)
        return kept.current, _state(kept, self._now_ms())

    def turn_off(self, topic_name: str, name: str) -> WebhookState:
        def work(conn: Connection) -> None:
            sql.get_secrets(conn, topic_name, name)  # SubscriptionNotExist
            sql.set_secrets(conn, topic_name, name, None)

        self.database.write(work)
        return WebhookState(enabled=False)

    def rotate(self, topic_name: str, name: str) -> tuple[str, WebhookState]:
        """A new secret; the current one keeps signing beside it for a day (a rotation during
        a rotation drops the oldest at once)."""
        fresh = secret_of(self.random_bytes(SECRET_BYTES))
        now_ms = self._now_ms()

        def work(conn: Connection) -> WebhookSecrets:
            found = sql.get_secrets(conn, topic_name, name)
            if found is None:
                raise MNSError(
                    "InvalidArgument",
                    "Standard Webhooks signatures are off for this subscription: turn them on"
                    " first.",
                )
            rotated = WebhookSecrets(fresh, found.current, now_ms + ROTATION_OVERLAP_MS)
            sql.set_secrets(conn, topic_name, name, rotated)
            return rotated

        return fresh, _state(self.database.write(work), now_ms)


def _state(secrets: WebhookSecrets | None, now_ms: int) -> WebhookState:
    if secrets is None:
        return WebhookState(enabled=False)
    return WebhookState(enabled=True, previous_until_ms=_pending(secrets.previous_until_ms, now_ms))


def _pending(until_ms: int | None, now_ms: int) -> int | None:
    """When a rotated-out secret stops signing, if it still does."""
    return until_ms if until_ms and until_ms > now_ms else None
