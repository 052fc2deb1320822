"""Replaying what was delivered to a subscription in a window, page by page
(:mod:`gateway.store.sql.delivered_replay_sql`; docs/delivery.md#replaying-what-was-delivered).

Each page is its own transaction, so a large replay does not hold the database's write lock for
long, and the delivery workers of every process sharing the database are woken after each page
that queued something: the first pushes start while the rest is being queued. A dry run reads
the same pages and writes nothing.
"""

from __future__ import annotations

from gateway.delivery.replays import ReplayCount
from gateway.store.deliveries import DeliveryStore
from gateway.store.sql import delivered_replay_sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.delivered_replay_sql import ReplayPage, Target

__all__ = ["Target", "replay_delivered"]


def replay_delivered(deliveries: DeliveryStore, target: Target) -> ReplayCount:
    """Queue every message delivered to ``target``'s subscription in its window again (or count
    them, dry); what was queued and skipped."""
    start = deliveries.now_ms()
    total = ReplayCount()
    after = ""
    while True:  # bounded: each page moves ``after`` forward through the history's MessageIds
        queued = total.queued

        def work(conn: Connection, after: str = after, queued: int = queued) -> ReplayPage:
            # Due times go on from the last page's, so that all of them are in publish order.
            return delivered_replay_sql.replay_page(conn, target, after, start, start + queued)

        if target.dry_run:
            page = deliveries.database.read(work)
        else:
            page = deliveries.database.write(work)
            if page.count.queued:
                deliveries.wakeups.announce_deliveries()
        total += page.count
        if page.last is None:
            return total
        after = page.last
