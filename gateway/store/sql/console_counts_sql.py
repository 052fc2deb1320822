"""The overview's kept counts (migration 10, table ``console_counts``): the figures that would
read every message (waiting, in flight, delayed) or every push (pending, dead letters), counted
by one replica at a time under a lease and kept in the store, so a page reads one row and every
replica shows the same figures (:class:`gateway.store.console.ConsoleReads`).

The table holds one row, ``overview``; a reset gateway has none (never counted).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.queues.records import MessageCounts
from gateway.store.sql.connection import Connection

ROW = "overview"


@dataclass(frozen=True, slots=True)
class KeptCounts:
    """The counts as one refresh found them at ``counted_at_ms``."""

    messages: MessageCounts
    dead_letters: int
    deliveries_pending: int
    counted_at_ms: int


@dataclass(frozen=True, slots=True)
class KeptState:
    """The kept counts (``None``: never counted) and until when a refresh holds the lease."""

    counts: KeptCounts | None
    refresh_until_ms: int

    def due(self, now_ms: int, every_ms: int) -> bool:
        """Whether a refresh should start now: nobody holds the lease and the counts are
        missing or at least ``every_ms`` old."""
        if self.refresh_until_ms > now_ms:
            return False
        return self.counts is None or self.counts.counted_at_ms <= now_ms - every_ms


def kept(conn: Connection) -> KeptState:
    row = conn.execute(
        "SELECT active, inactive, delayed, dead_letters, deliveries_pending, counted_at,"
        " refresh_until FROM console_counts WHERE name = ?",
        (ROW,),
    ).fetchone()
    if row is None:
        return KeptState(None, 0)
    counts = None
    if row["counted_at"] is not None:
        counts = KeptCounts(
            MessageCounts(int(row["active"]), int(row["inactive"]), int(row["delayed"])),
            int(row["dead_letters"]),
            int(row["deliveries_pending"]),
            int(row["counted_at"]),
        )
    return KeptState(counts, int(row["refresh_until"]))


def claim_refresh(
    conn: Connection, owner: str, now_ms: int, every_ms: int, lease_until_ms: int
) -> bool:
    """Take the lease to count again if a refresh is due (:meth:`KeptState.due`); whether this
    caller got it. One conditional UPDATE: of replicas racing for it, one wins."""
    conn.execute(
        "INSERT INTO console_counts (name, refresh_until) VALUES (?, 0)"
        " ON CONFLICT (name) DO NOTHING",
        (ROW,),
    )
    claimed = conn.execute(
        "UPDATE console_counts SET refresh_owner = ?, refresh_until = ?"
        " WHERE name = ? AND refresh_until <= ? AND (counted_at IS NULL OR counted_at <= ?)",
        (owner, lease_until_ms, ROW, now_ms, now_ms - every_ms),
    )
    return claimed.rowcount == 1


def store_counts(conn: Connection, owner: str, counts: KeptCounts) -> bool:
    """Keep ``counts`` and give the lease back, if ``owner`` still holds it (a refresh that
    outlived its lease leaves the row to the one that took it over)."""
    stored = conn.execute(
        "UPDATE console_counts SET active = ?, inactive = ?, delayed = ?, dead_letters = ?,"
        " deliveries_pending = ?, counted_at = ?, refresh_owner = NULL, refresh_until = 0"
        " WHERE name = ? AND refresh_owner = ?",
        (
            counts.messages.active,
            counts.messages.inactive,
            counts.messages.delayed,
            counts.dead_letters,
            counts.deliveries_pending,
            counts.counted_at_ms,
            ROW,
            owner,
        ),
    )
    return stored.rowcount == 1


def give_up(conn: Connection, owner: str) -> None:
    """Hand the lease back without counts (the count failed): the next view may try again."""
    conn.execute(
        "UPDATE console_counts SET refresh_owner = NULL, refresh_until = 0"
        " WHERE name = ? AND refresh_owner = ?",
        (ROW, owner),
    )


def queue_names(conn: Connection) -> list[str]:
    return [row["name"] for row in conn.execute("SELECT name FROM queues ORDER BY name")]


def push_counts(conn: Connection) -> tuple[int, int]:
    """(dead letters, pushes pending)."""
    row = conn.execute(
        "SELECT (SELECT COUNT(*) FROM dead_letters) AS dead,"
        " (SELECT COUNT(*) FROM deliveries) AS pending"
    ).fetchone()
    return int(row["dead"]), int(row["pending"])
