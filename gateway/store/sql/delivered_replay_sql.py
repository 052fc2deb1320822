"""Replaying what was delivered: one page of a subscription's delivered history in a window,
queued again as new deliveries (docs/delivery.md#replaying-what-was-delivered).

A page is up to :data:`PAGE` distinct MessageIds, in MessageId order (which is publish order:
MessageIds start with the publish time), past the previous page's last one. Each is queued as an
ordinary delivery to the subscription, so the delivery worker pushes it with the subscription's
retry strategy, rate limit and breaker, and with ``replay_request_id`` set so that its first
attempt writes a ``Replay`` operation-log record (migration REPLAYED_DELIVERIES). Their due times
are one millisecond apart from ``first_due_ms`` on, so that claims, which take the earliest due
first, take them in publish order. Left out, and counted: messages still pending for the
subscription (they will be pushed anyway) and messages the topic no longer keeps (the history
keeps when a message was delivered, not its body). A replayed message gets a new day of
retention, as a replayed dead letter does, so that its retries are not cut short.

The delivered history's only index is its primary key, MessageId first (migration 9: a second
one would cost every push). A message is delivered after it was published, so rows delivered
before ``until`` have MessageIds below :func:`first_id_at` of it: the read walks the primary key
from the front up to there, reading rows of every subscription; an operator's replay pays for
that, not every push.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gateway.delivery.delivery_ids import new_delivery_id
from gateway.delivery.replays import ReplayCount, ReplayWindow
from gateway.errors.mns import MNSError
from gateway.queues.message_ids import first_id_at
from gateway.store.sql import topic_sql
from gateway.store.sql.connection import Connection, insert_rows, placeholders
from gateway.topics.records import TOPIC_MESSAGE_RETENTION_SECONDS

#: MessageIds per page, each page its own transaction: a replay of a day's history never holds
#: the database's write lock for long.
PAGE: Final = 500
_RETENTION_MS: Final = TOPIC_MESSAGE_RETENTION_SECONDS * 1000

_DELIVERED_IN_WINDOW: Final = (
    "SELECT DISTINCT message_id FROM delivered WHERE message_id > ? AND message_id < ?"
    " AND topic_name = ? AND subscription_name = ? AND delivered_at >= ? AND delivered_at < ?"
    " ORDER BY message_id LIMIT ?"
)
_COLUMNS: Final = (
    "deliveries (id, message_id, topic_name, subscription_name, attempts, next_attempt_at,"
    " created_at, replay_request_id)"
)


@dataclass(frozen=True, slots=True)
class Target:
    """A replay: what to push again, to whom, and how it is marked."""

    topic_name: str
    subscription_name: str
    window: ReplayWindow
    request_id: str
    dry_run: bool = False
    #: MessageIds per page (per transaction).
    page: int = PAGE


@dataclass(frozen=True, slots=True)
class ReplayPage:
    count: ReplayCount
    #: The page's last MessageId, where the next page starts; ``None`` after the last page.
    last: str | None


def require_subscription(conn: Connection, topic_name: str, name: str) -> None:
    """``TopicNotExist`` or ``SubscriptionNotExist``, as the API says them."""
    if topic_sql.get_subscription(conn, topic_name, name) is None:
        topic_sql.require_topic(conn, topic_name)
        raise MNSError("SubscriptionNotExist")


def replay_page(
    conn: Connection, target: Target, after: str, now_ms: int, first_due_ms: int
) -> ReplayPage:
    """Queue (unless ``target.dry_run``) the next page of the window's messages past
    ``after``; what it queued and skipped."""
    require_subscription(conn, target.topic_name, target.subscription_name)
    window = target.window
    rows = conn.execute(
        _DELIVERED_IN_WINDOW,
        (
            after,
            first_id_at(window.until_ms),
            target.topic_name,
            target.subscription_name,
            window.since_ms,
            window.until_ms,
            target.page,
        ),
    ).fetchall()
    ids = [str(r["message_id"]) for r in rows]
    if not ids:
        return ReplayPage(ReplayCount(), None)
    pending = _pending(conn, target, ids)
    kept = _kept(conn, ids, now_ms)
    replayed = [i for i in ids if i in kept and i not in pending]
    if replayed and not target.dry_run:
        _queue(conn, target, replayed, now_ms, first_due_ms)
    count = ReplayCount(
        len(replayed), len(pending), len([i for i in ids if i not in kept and i not in pending])
    )
    return ReplayPage(count, ids[-1] if len(ids) == target.page else None)


def _pending(conn: Connection, target: Target, ids: list[str]) -> set[str]:
    """Those of ``ids`` with a delivery to the subscription not yet made (through
    ``deliveries_subscription_due``: the subscription's pending deliveries only)."""
    rows = conn.execute(
        "SELECT message_id FROM deliveries WHERE topic_name = ? AND subscription_name = ?"
        f" AND message_id IN ({placeholders(len(ids))})",
        (target.topic_name, target.subscription_name, *ids),
    ).fetchall()
    return {str(r["message_id"]) for r in rows}


def _kept(conn: Connection, ids: list[str], now_ms: int) -> set[str]:
    """Those of ``ids`` the topic still keeps (past its retention, the expiry is deleting it)."""
    rows = conn.execute(
        f"SELECT id FROM topic_messages WHERE id IN ({placeholders(len(ids))}) AND expires_at > ?",
        (*ids, now_ms),
    ).fetchall()
    return {str(r["id"]) for r in rows}


def _queue(
    conn: Connection, target: Target, ids: list[str], now_ms: int, first_due_ms: int
) -> None:
    rows = [
        (
            new_delivery_id(now_ms),
            message_id,
            target.topic_name,
            target.subscription_name,
            0,
            first_due_ms + offset,
            now_ms,
            target.request_id,
        )
        for offset, message_id in enumerate(ids)
    ]
    insert_rows(conn, _COLUMNS, rows)
    expires = now_ms + _RETENTION_MS
    conn.execute(
        f"UPDATE topic_messages SET expires_at = ? WHERE id IN ({placeholders(len(ids))})"
        " AND expires_at < ?",
        (expires, *ids, expires),
    )
