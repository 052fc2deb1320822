"""What the web console reads beyond the API's own operations, over a database.

Statements: :mod:`gateway.store.sql.console_sql`, :mod:`gateway.store.sql.console_counts_sql`
and :mod:`gateway.store.sql.rates_sql`.

The overview's message and push counts are not counted by the request that shows them:
counting the states of a million messages takes about a second, and a page must take well under
100 ms. They are kept in the store (one row) and counted again in the background at most once a
minute, by one replica at a time (a lease in that row), so every replica shows the same figures
with the time they were counted. Counters kept by the queue operations themselves would be
live, but every send, receive and delete of every replica would update the same rows (contention
on PostgreSQL) and the clock moves messages between states with no operation to count it
(docs/console.md#overview--console).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence

from gateway.queues.records import MessageCounts
from gateway.store.backends.database import Database
from gateway.store.sql import console_counts_sql as kept_sql
from gateway.store.sql import rates_sql
from gateway.store.sql.console_counts_sql import KeptCounts
from gateway.store.sql.console_sql import (
    Overview,
    dead_letter_sources,
    overview,
    queue_counts,
    subscription_counts,
)

log = logging.getLogger(__name__)

#: Queues counted per read while refreshing: each read is short (the ready index of 50 queues),
#: and a gevent process serves its other requests between two.
QUEUES_PER_READ = 50
#: How long a refresh may hold the lease; one that dies leaves it to lapse, then another replica
#: counts. Far longer than a count takes (about a second for a million messages).
LEASE_SECONDS = 300.0

Background = Callable[[Callable[[], object]], None]


def in_thread(work: Callable[[], object]) -> None:
    """Run ``work`` on a daemon thread (a greenlet under gevent), logging what it raises."""

    def run() -> None:
        try:
            work()
        except Exception:  # the next view tries again once the lease is given back or lapses
            log.exception("counting the console's overview failed")

    threading.Thread(target=run, name="mns-console-counts", daemon=True).start()


def _yield_to_others() -> None:
    # Not a wait: under gevent, time.sleep(0) lets the process's other greenlets (requests)
    # run between two reads of a refresh; with OS threads it gives up the GIL.
    time.sleep(0)


class ConsoleReads:
    """The console's summaries over ``database`` at the store's time."""

    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        refresh_seconds: float = 60,
        background: Background = in_thread,
        between_reads: Callable[[], None] = _yield_to_others,
        wait_seconds: float = 0.05,
    ) -> None:
        self.database = database
        self.clock = clock
        #: The overview's counts are counted again once they are this old (and someone looks).
        self.refresh_seconds = refresh_seconds
        #: How a refresh is started without holding up the page; tests run it at once.
        self.background = background
        self.between_reads = between_reads
        #: How long a view that started a refresh waits for it before showing what is kept.
        self.wait_seconds = wait_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._refreshing = threading.Lock()

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def overview(self) -> Overview:
        """The overview: counts of queues, topics and subscriptions, and the kept counts. A
        view that finds them due starts a refresh in the background and shows what is kept."""
        now = self.now_ms()
        every_ms = int(self.refresh_seconds * 1000)
        shown = self.database.read(overview)
        if shown.kept.due(now, every_ms):
            done = threading.Event()

            def refresh() -> None:
                try:
                    self.refresh_counts()
                finally:
                    done.set()

            self.background(refresh)
            # A small gateway is counted in a few milliseconds: waiting that long shows its
            # counts on the first view; a large one's view goes on with what is kept.
            if done.wait(self.wait_seconds):
                shown = self.database.read(overview)
        return shown

    def refresh_counts(self) -> bool:
        """Count the messages' states and the pushes again and keep the counts, if they are
        due and no replica is counting; whether this call counted."""
        if not self._refreshing.acquire(blocking=False):
            return False  # this process is counting already
        try:
            now = self.now_ms()
            every_ms = int(self.refresh_seconds * 1000)
            lease_until = now + int(LEASE_SECONDS * 1000)
            claimed = self.database.write(
                lambda c: kept_sql.claim_refresh(c, self.owner, now, every_ms, lease_until),
                durable=False,
            )
            if not claimed:
                return False
            try:
                counts = self._count(now)
            except BaseException:
                self.database.write(lambda c: kept_sql.give_up(c, self.owner), durable=False)
                raise
            return self.database.write(
                lambda c: kept_sql.store_counts(c, self.owner, counts), durable=False
            )
        finally:
            self._refreshing.release()

    def _count(self, now_ms: int) -> KeptCounts:
        """Every queue's message states at ``now_ms``, a few queues per read (the same index
        ranges as the queue list), then the pushes."""
        names = self.database.read(kept_sql.queue_names)
        active = inactive = delayed = 0
        for start in range(0, len(names), QUEUES_PER_READ):
            chunk = names[start : start + QUEUES_PER_READ]
            counted = self.database.read(lambda c, chunk=chunk: queue_counts(c, chunk, now_ms))
            for counts in counted.values():
                active += counts.active
                inactive += counts.inactive
                delayed += counts.delayed
            self.between_reads()
        dead, pending = self.database.read(kept_sql.push_counts)
        return KeptCounts(MessageCounts(active, inactive, delayed), dead, pending, now_ms)

    def queue_counts(self, names: Sequence[str]) -> dict[str, MessageCounts]:
        now = self.now_ms()
        return self.database.read(lambda c: queue_counts(c, names, now))

    def subscription_counts(self, topic_names: Sequence[str]) -> dict[str, int]:
        return self.database.read(lambda c: subscription_counts(c, topic_names))

    def minute_counts(self, since_minute: int) -> dict[tuple[int, str], int]:
        return self.database.read(lambda c: rates_sql.minute_counts(c, since_minute))

    def health(self, topic_name: str, names: Sequence[str]) -> dict[str, rates_sql.Health]:
        return self.database.read(lambda c: rates_sql.health_of(c, topic_name, names))

    def dead_letter_sources(self, queue_name: str) -> list[str]:
        """The queues that dead-letter into ``queue_name`` (none: not a dead-letter queue)."""
        return self.database.read(lambda c: dead_letter_sources(c, queue_name))
