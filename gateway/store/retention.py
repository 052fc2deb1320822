"""The retention pass: what the delivered history and the topic messages no delivery needs keep
to (``MNS_GATEWAY_HISTORY_RETENTION``; docs/deploy.md#retention), run by every delivery worker
every :func:`partitions_sql.pass_interval_ms` (:class:`Passes`, on the store's clock), and with
the expiry (:meth:`gateway.store.deliveries.DeliveryStore.expire`).

Every step is its own transaction and can be cut short anywhere (a crash, a SIGKILL): what was
dropped or deleted was past its window and needed by no delivery, and the next pass does the
rest.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from gateway.store.backends.database import Database
from gateway.store.sql import partitions_sql, rates_sql, retention_sql


@dataclass
class Passes:
    """When the next retention pass is due, on a wall clock (epoch ms): ``interval_ms`` after
    the last one. A clock set back makes a pass due at once, rather than none until the clock is
    back where it was. :meth:`take` is atomic: of the workers sharing a store, one runs it."""

    interval_ms: int
    last_ms: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def due(self, now_ms: int) -> bool:
        last = self.last_ms
        return last is None or not last <= now_ms < last + self.interval_ms

    def take(self, now_ms: int) -> bool:
        """Whether a pass is due at ``now_ms``; if so, it counts as run from then."""
        with self._lock:
            if not self.due(now_ms):
                return False
            self.last_ms = now_ms
            return True

    def ran(self, now_ms: int) -> None:
        with self._lock:
            self.last_ms = now_ms


def retain(database: Database, now_ms: int, retention_seconds: int, batches: int = 60) -> int:
    """On PostgreSQL make the partitions ahead and drop the old ones; then delete what is left
    in transactions of :data:`retention_sql.PURGE_BATCH` rows, so writes meanwhile wait for one
    batch at most, at most ``batches`` batches a table (120,000 rows a pass, which runs at least
    once a minute: that keeps up with 2,000 pushes/s); and the live figures' old minutes. How
    many history rows the batches deleted."""
    cutoff = retention_sql.kept_since(now_ms, retention_seconds)
    if database.read(partitions_sql.partitioned):
        cycle_partitions(database, now_ms, cutoff, retention_seconds)
    purged = 0
    for purge in (
        lambda c: retention_sql.purge_delivered(c, cutoff),
        lambda c: retention_sql.purge_messages(c, now_ms, cutoff),
    ):
        for _ in range(batches):
            # Not durable: a purge lost in a power cut is simply made again.
            count = database.write(purge, durable=False)
            purged += count
            if count < retention_sql.PURGE_BATCH:
                break
    # The console's per-minute counts (a few rows a minute): kept two hours whatever the
    # retention, and aged here rather than by every settle that writes them.
    database.write(lambda c: rates_sql.forget_minutes(c, now_ms), durable=False)
    return purged


def cycle_partitions(
    database: Database, now_ms: int, cutoff_ms: int, retention_seconds: int
) -> None:
    """Each partitioned table's ranges made ahead of ``now_ms``, and those before
    ``cutoff_ms`` dropped (unless a pending delivery holds them: :func:`partitions_sql.drop`)."""
    for table in partitions_sql.PARTITIONED:
        database.write(
            lambda c, t=table: partitions_sql.make_ahead(c, t, now_ms, retention_seconds)
        )
        old = database.read(lambda c, t=table: partitions_sql.droppable(c, t, cutoff_ms))
        for partition in old:
            database.write(lambda c, t=table, p=partition: partitions_sql.drop(c, t, p))
