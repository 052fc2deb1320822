"""What the gateway forgets, and when (docs/deploy.md#retention).

``MNS_GATEWAY_HISTORY_RETENTION`` bounds two tables that every push writes and nobody deletes
from on the way: the delivered history (``delivered``) and the topic messages no delivery needs
any more (``topic_messages``). :func:`kept_since` is the one rule both follow, and what a replay
of a delivered message reads the window from. A topic message some delivery still needs is never
dropped here: it stays until the delivery succeeds or, at its topic's retention, is
dead-lettered (:func:`gateway.store.sql.dead_letter_sql.expired_jobs`).

On PostgreSQL both tables are partitioned by MessageId and whole partitions are dropped
(:mod:`gateway.store.sql.partitions_sql`); the batched DELETEs here are then left with the rows
of partitions a pending delivery holds back, and of the default partition. On SQLite they are
the purge: a batch a transaction, so settles and publishes wait for one batch at most, and the
pages they free are reused by the rows that come next (the file reaches a plateau).
"""

from __future__ import annotations

from typing import Final

from gateway.queues.message_ids import first_id_at
from gateway.store.sql.connection import Connection
from gateway.topics.records import TOPIC_MESSAGE_RETENTION_SECONDS

#: ``MNS_GATEWAY_HISTORY_RETENTION``'s default: a day, as a topic keeps a message.
DEFAULT_HISTORY_RETENTION: Final = 86_400
#: Rows one purge transaction deletes at most.
PURGE_BATCH: Final = 2000
_TOPIC_RETENTION_MS: Final = TOPIC_MESSAGE_RETENTION_SECONDS * 1000


def kept_since(now_ms: int, retention_seconds: int) -> int:
    """The oldest time (epoch ms) the history kept under ``retention_seconds`` reaches back to
    at ``now_ms``: a delivered push, and a topic message no delivery needs, published or
    delivered before it are forgotten."""
    return now_ms - retention_seconds * 1000


def purge_messages(conn: Connection, now_ms: int, cutoff_ms: int, limit: int = PURGE_BATCH) -> int:
    """Delete up to ``limit`` topic messages published before ``cutoff_ms`` that no delivery
    needs; how many went.

    A dead letter replayed just now re-inserts its message (old MessageId) and moves its
    ``expires_at`` on, in the transaction that inserts its delivery: a message whose
    ``expires_at`` was moved is only deleted once that has passed too, so a DELETE racing the
    replay on PostgreSQL re-checks the row it waited for and leaves it.
    """
    return conn.execute(
        "DELETE FROM topic_messages WHERE id IN (SELECT id FROM topic_messages"
        " WHERE id < ? AND (expires_at <= publish_time + ? OR expires_at <= ?)"
        # NOT IN over the subquery reads the deliveries once (there is no index on message_id).
        " AND id NOT IN (SELECT message_id FROM deliveries) ORDER BY id LIMIT ?)"
        " AND (expires_at <= publish_time + ? OR expires_at <= ?)",
        (first_id_at(cutoff_ms), _TOPIC_RETENTION_MS, now_ms, limit, _TOPIC_RETENTION_MS, now_ms),
    ).rowcount


def purge_delivered(conn: Connection, cutoff_ms: int, limit: int = PURGE_BATCH) -> int:
    """Delete up to about ``limit`` delivered rows older than ``cutoff_ms``; how many went.

    Only ids of messages published before the cut-off can be that old, and they sort first, so
    both statements read the front of the primary key only. A replayed message (an old MessageId
    delivered today) is skipped until its own window is over.
    """
    old = "message_id < ? AND delivered_at <= ?"
    last = conn.execute(
        f"SELECT message_id FROM delivered WHERE {old} ORDER BY message_id LIMIT 1 OFFSET ?",
        (first_id_at(cutoff_ms), cutoff_ms, limit - 1),
    ).fetchone()
    # Up to the limit-th old row's MessageId (a few more when it has several rows), else all.
    bound, inclusive = (last["message_id"], "<=") if last else (first_id_at(cutoff_ms), "<")
    return conn.execute(
        f"DELETE FROM delivered WHERE message_id {inclusive} ? AND delivered_at <= ?",
        (bound, cutoff_ms),
    ).rowcount
