"""Delivery operations over a :class:`~gateway.store.base.Database`: claims, outcomes, dead
letters, replays and the daily expiry."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gateway.delivery.records import DeadLetter, DeliveryJob, Settlement
from gateway.protocol.listing import Page
from gateway.store import dead_letter_sql, delivery_sql
from gateway.store.database import Database
from gateway.store.notifier import Wakeups
from gateway.store.queues import QueueStore
from gateway.store.sql import Connection


class DeliveryStore:
    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        wakeups: Wakeups,
        queues: QueueStore,
    ) -> None:
        self.database = database
        self.clock = clock
        self.wakeups = wakeups
        self.queues = queues

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # claims -----------------------------------------------------------------------------------
    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        now = self.now_ms()
        lease_ms = int(lease_seconds * 1000)
        return self.database.write(
            lambda c: delivery_sql.claim(c, owner, now, lease_ms, limit, skip_routes),
            durable=False,
        )

    def release(self, owner: str, delivery_ids: list[str]) -> None:
        self.database.write(lambda c: delivery_sql.release(c, owner, delivery_ids), durable=False)

    def next_due_ms(self) -> int | None:
        return self.database.read(delivery_sql.next_due_ms)

    def due_count(self) -> int:
        now = self.now_ms()
        return self.database.read(lambda c: delivery_sql.due_count(c, now))

    # outcomes ---------------------------------------------------------------------------------
    def settle(self, owner: str, settlements: Sequence[Settlement]) -> list[str | None]:
        """Record many attempts' outcomes in one transaction; dead letter ids where made.

        Successes, the common case, are removed together: two statements for the whole batch.
        """
        now = self.now_ms()

        def work(conn: Connection) -> list[str | None]:
            delivery_sql.complete(conn, delivery_sql.completed_ids(settlements))
            return [
                None if s.succeeded else _settle_failure(conn, owner, s, now) for s in settlements
            ]

        return self.database.write(work, durable=False)

    def complete_into_queue(self, delivery_id: str, queue_name: str, body: str) -> str:
        """Enqueue ``body`` into a local queue and complete the delivery in one transaction:
        neither lost nor enqueued twice. The new message's id; ``MNSError`` from the queue."""
        now_ms = self.now_ms()

        def work(conn: Connection) -> str:
            message_id = self.queues.enqueue_in(conn, queue_name, body, now_ms=now_ms)
            delivery_sql.complete(conn, [delivery_id])
            return message_id

        message_id = self.database.write(work)
        self.queues.notify(queue_name, 1)
        return message_id

    def expire(self, limit: int = 500) -> list[str]:
        """Dead-letter deliveries whose message outlived retention; purge unneeded old messages."""
        now = self.now_ms()

        def work(conn: Connection) -> list[str]:
            jobs = dead_letter_sql.expired_jobs(conn, now, limit)
            letters = [dead_letter_sql.dead_letter(conn, job, None, "expired", now) for job in jobs]
            dead_letter_sql.purge_orphans(conn, now)
            dead_letter_sql.purge_expired_messages(conn, now)
            return [letter for letter in letters if letter]

        return self.database.write(work)

    # dead letters -----------------------------------------------------------------------------
    def list_dead_letters(
        self, marker: str = "", limit: int = 100, topic_name: str | None = None
    ) -> Page[DeadLetter]:
        return self.database.read(
            lambda c: dead_letter_sql.list_dead_letters(c, marker, limit, topic_name)
        )

    def get_dead_letter(self, letter_id: str) -> DeadLetter:
        return self.database.read(lambda c: dead_letter_sql.get_dead_letter(c, letter_id))

    def replay_dead_letter(self, letter_id: str) -> str:
        now = self.now_ms()
        delivery_id = self.database.write(lambda c: dead_letter_sql.replay(c, letter_id, now))
        self.wakeups.announce_deliveries()
        return delivery_id


def _settle_failure(
    conn: Connection, owner: str, settlement: Settlement, now_ms: int
) -> str | None:
    job = settlement.job
    if settlement.dead_reason is not None:
        return dead_letter_sql.dead_letter(
            conn, job, settlement.attempt, settlement.dead_reason, now_ms
        )
    assert settlement.retry_at_ms is not None and settlement.attempt is not None
    delivery_sql.retry_later(
        conn, job.delivery_id, owner, settlement.attempt, settlement.retry_at_ms
    )
    return None
