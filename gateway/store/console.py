"""What the web console reads beyond the API's own operations, over a database.

Statements: :mod:`gateway.store.sql.console_sql` and :mod:`gateway.store.sql.rates_sql`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from gateway.queues.records import MessageCounts
from gateway.store.backends.database import Database
from gateway.store.sql import rates_sql
from gateway.store.sql.console_sql import Overview, overview, queue_counts, subscription_counts


class ConsoleReads:
    """The console's summaries over ``database`` at the store's time."""

    def __init__(
        self, database: Database, clock: Callable[[], float], *, overview_seconds: float = 60
    ) -> None:
        self.database = database
        self.clock = clock
        #: How long the overview's counts are shown before they are counted again: counting the
        #: states of a million messages takes seconds (docs/console.md#speed).
        self.overview_seconds = overview_seconds
        self._overview: Overview | None = None
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def overview(self) -> Overview:
        """The overview's counts, counted again once they are ``overview_seconds`` old."""
        now = self.now_ms()
        with self._lock:
            kept = self._overview
            if kept is None or now - kept.counted_at_ms >= self.overview_seconds * 1000:
                kept = self._overview = self.database.read(lambda c: overview(c, now))
        return kept

    def queue_counts(self, names: Sequence[str]) -> dict[str, MessageCounts]:
        now = self.now_ms()
        return self.database.read(lambda c: queue_counts(c, names, now))

    def subscription_counts(self, topic_names: Sequence[str]) -> dict[str, int]:
        return self.database.read(lambda c: subscription_counts(c, topic_names))

    def minute_counts(self, since_minute: int) -> dict[tuple[int, str], int]:
        return self.database.read(lambda c: rates_sql.minute_counts(c, since_minute))

    def health(self, topic_name: str, names: Sequence[str]) -> dict[str, rates_sql.Health]:
        return self.database.read(lambda c: rates_sql.health_of(c, topic_name, names))
