"""PostgreSQL: the history tables partitioned by MessageId, made ahead and dropped whole
(migration 16; docs/deploy.md#retention).

``topic_messages`` and ``delivered`` are range-partitioned by MessageId, whose first 11
characters are the publish time in hexadecimal milliseconds (:mod:`gateway.queues.message_ids`):
a range of ids is a range of publish times, and the primary keys (``id``; ``message_id,
delivery_id``) hold the partition key as PostgreSQL requires, so they stay unique as before.
Forgetting a partition's rows is one ``DROP TABLE``: no row-by-row WAL, no dead tuples for
vacuum, and the space goes back to the file system at once, where a DELETE of the same rows
writes each to the WAL (docs/benchmarks.md#steady-state-under-retention).

Each table has a ``_legacy`` partition (the table as it was before migration 16, from MINVALUE)
and a ``_default`` one, which takes what no range holds: a dead letter replayed after its
message's range was dropped, or rows written while no range was made yet. The batched DELETEs of
:mod:`gateway.store.sql.retention_sql` keep those, and a range held back by a pending delivery,
within the window. Ranges are made ahead by the retention pass each gateway runs every
:func:`pass_interval_ms` (:meth:`gateway.store.deliveries.DeliveryStore.retain_if_due`): no
extension to install.

The plan (which ranges to make, which to drop) is pure; the statements are the IO shell.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gateway.queues.message_ids import first_id_at
from gateway.store.sql.connection import Connection

#: Each partitioned table and its partition key.
PARTITIONED: Final = {"topic_messages": "id", "delivered": "message_id"}
#: A range spans a quarter of the retention: the history is kept for the retention plus at most
#: one range and one pass (3/8 more), so a drop frees under a fifth of the most kept (ranges a
#: minute wide at a 60-s retention made the size swing 16 % either side of its plateau). The
#: floor is for a retention under a minute, which the setting does not allow.
RETENTION_PER_WIDTH: Final = 4
MIN_WIDTH_MS: Final = 10_000
#: The retention pass runs every half range, so a range waits half a range at most for its drop;
#: at least every 5 s (each pass reads the partitions: not constant work), at most every minute
#: (at a day's retention, ranges of 6 hours, the pass of the batched DELETEs stays once a minute).
MIN_PASS_MS: Final = 5_000
MAX_PASS_MS: Final = 60_000
#: Ranges are made this many passes ahead of now at least (and two ranges), so passes that
#: fail for a while (a database away) still find ranges made for what is published meanwhile.
AHEAD_PASSES: Final = 10
#: Names the partition makers and droppers among advisory locks: one at a time.
_LOCK: Final = "SELECT pg_advisory_xact_lock(7213401992)"
_BOUND: Final = re.compile(r"FROM \((?:'([0-9A-F]+)'|MINVALUE)\) TO \('([0-9A-F]+)'\)")


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    #: First publish time (epoch ms) it holds; ``None`` from the beginning (the legacy one).
    low_ms: int | None
    #: The publish time it ends before; ``None`` for the default partition.
    high_ms: int | None


def width_ms(retention_seconds: int) -> int:
    """How long a stretch of publish times one range holds, under ``retention_seconds``."""
    return max(MIN_WIDTH_MS, retention_seconds * 1000 // RETENTION_PER_WIDTH)


def pass_interval_ms(retention_seconds: int) -> int:
    """How often a gateway runs the retention pass (both backends), under ``retention_seconds``:
    every half range, within :data:`MIN_PASS_MS` and :data:`MAX_PASS_MS`."""
    return min(MAX_PASS_MS, max(MIN_PASS_MS, width_ms(retention_seconds) // 2))


def ahead_ms(retention_seconds: int) -> int:
    """How far past now the ranges reach at least after a pass."""
    return max(2 * width_ms(retention_seconds), AHEAD_PASSES * pass_interval_ms(retention_seconds))


def parse_bound(name: str, bound: str) -> Partition:
    """A partition from ``pg_get_expr(relpartbound)``: ``DEFAULT`` or ``FOR VALUES FROM (…)
    TO (…)`` with MessageId prefixes."""
    found = _BOUND.search(bound)
    if found is None:
        return Partition(name, None, None)
    low, high = found.groups()
    return Partition(name, int(low, 16) if low else None, int(high, 16))


def ranges_to_make(
    existing: Sequence[Partition], now_ms: int, retention_seconds: int, floor_ms: int = 0
) -> list[tuple[int, int]]:
    """The ranges ``[low, high)`` to make so that ranges reach :func:`ahead_ms` past
    ``now_ms``, each ending on a multiple of the :func:`width_ms`. They start where the newest
    range ends, but not before the current range's start (a gateway stopped for a week makes no
    ranges for the week it missed: those rows are in no range) nor at or before ``floor_ms``,
    what the default partition already holds past the newest range.

    None while the ranges still reach half of it: they are made in batches, one transaction a
    batch, because ``CREATE TABLE … PARTITION OF`` locks the whole table (ACCESS EXCLUSIVE)
    until the transaction ends, and requests wait behind it; a lock a range (four a minute at a
    60-s retention) would be more waits than a lock a batch."""
    width, ahead = width_ms(retention_seconds), ahead_ms(retention_seconds)
    highs = [p.high_ms for p in existing if p.high_ms is not None]
    if max(highs, default=0) >= now_ms + ahead // 2:
        return []
    low = max(max(highs, default=0), now_ms // width * width, floor_ms)
    until = now_ms + ahead
    made = []
    while low < until:
        high = (low // width + 1) * width
        made.append((low, high))
        low = high
    return made


def ranges_to_drop(existing: Sequence[Partition], cutoff_ms: int) -> list[Partition]:
    """The ranges whose every MessageId was made before ``cutoff_ms``."""
    return [p for p in existing if p.high_ms is not None and p.high_ms <= cutoff_ms]


# IO ---------------------------------------------------------------------------------------------


def partitioned(conn: Connection) -> bool:
    """Whether the history tables are partitioned: on PostgreSQL after migration 16, unless
    they were made plain tables again (bench/steady_state.py --unpartitioned does, to measure
    the batched DELETEs that then do the whole purge)."""
    if not conn.dialect.partitions:
        return False
    row = conn.execute(
        "SELECT relkind FROM pg_class WHERE oid = to_regclass('topic_messages')"
    ).fetchone()
    return row is not None and row["relkind"] == "p"


def partitions(conn: Connection, table: str) -> list[Partition]:
    rows = conn.execute(
        "SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound"
        " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent = to_regclass(?)",
        (table,),
    ).fetchall()
    return sorted(
        (parse_bound(r["name"], r["bound"]) for r in rows),
        key=lambda p: (p.low_ms is not None, p.low_ms or 0),
    )


def make_ahead(conn: Connection, table: str, now_ms: int, retention_seconds: int) -> list[str]:
    """Make ``table``'s ranges ahead of ``now_ms`` (:func:`ranges_to_make`); their names."""
    conn.execute(_LOCK)
    existing = partitions(conn, table)
    if not ranges_to_make(existing, now_ms, retention_seconds):
        return []
    # The lock CREATE takes anyway, taken before the default partition is read: a row published
    # in between would land in the default inside the range about to be made, and CREATE would
    # then refuse the range (a check violation the worker logged as a bug, under load).
    _lock_table(conn, table)
    key = PARTITIONED[table]
    highs = [p.high_ms for p in existing if p.high_ms is not None]
    start = first_id_at(max(highs, default=0))
    newest = conn.execute(
        # Below "G": MessageIds (hexadecimal) only, which is what a range can hold.
        f"SELECT MAX({key}) AS newest FROM {table}_default WHERE {key} >= ? AND {key} < 'G'",
        (start,),
    ).fetchone()["newest"]
    # A range may not take rows the default partition already holds.
    floor_ms = int(newest[:11], 16) + 1 if newest else 0
    made = []
    for low, high in ranges_to_make(existing, now_ms, retention_seconds, floor_ms):
        name = f"{table}_p{low}"
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF {table}"
            f" FOR VALUES FROM ('{first_id_at(low)}') TO ('{first_id_at(high)}')"
        )
        made.append(name)
    return made


def _lock_table(conn: Connection, table: str) -> None:
    """``table`` locked to the write's end. ``LOCK TABLE`` needs a transaction block, which
    :meth:`~gateway.store.sql.connection.Connection.atomic` makes the write (the rest of it
    included)."""
    with conn.atomic():
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")


def droppable(conn: Connection, table: str, cutoff_ms: int) -> list[Partition]:
    return ranges_to_drop(partitions(conn, table), cutoff_ms)


def _needed(conn: Connection, partition: Partition) -> bool:
    """Whether a delivery still needs one of the partition's messages."""
    assert partition.high_ms is not None
    low = first_id_at(partition.low_ms) if partition.low_ms is not None else ""
    return (
        conn.execute(
            "SELECT 1 AS one FROM deliveries WHERE message_id >= ? AND message_id < ? LIMIT 1",
            (low, first_id_at(partition.high_ms)),
        ).fetchone()
        is not None
    )


def drop(conn: Connection, table: str, partition: Partition) -> bool:
    """Drop ``partition`` of ``table``, unless (``topic_messages``) a delivery still needs one
    of its messages; whether it went.

    The check is made again under the table's lock: a dead letter replayed meanwhile writes its
    message into the partition (so the lock waits for it) before the check reads its delivery.
    Dropping a partition locks its table for the drop itself, a few milliseconds; the check
    without the lock first keeps a partition a backlog holds from locking it every pass.
    """
    messages = table == "topic_messages"
    if messages and _needed(conn, partition):
        return False
    conn.execute(_LOCK)
    _lock_table(conn, table)
    if messages and _needed(conn, partition):
        return False
    conn.execute(f"DROP TABLE IF EXISTS {partition.name}")
    return True
