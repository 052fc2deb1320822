"""The store: the gateway's one way to persistent state, independent of the database behind it.

``Database`` is the narrow seam a backend implements (SQLite now, PostgreSQL for several
replicas later); :class:`Store` holds the domain operations on top of it and owns the clock, so
tests control time by handing in their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, TypeVar

from gateway.model import (
    DeadLetter,
    DeliveryJob,
    Page,
    Published,
    Settlement,
    Subscription,
    Topic,
    TopicMessage,
)
from gateway.protocol.errors import MNSError
from gateway.queues.message_ids import MessageIdFactory
from gateway.store import deliveries
from gateway.store import topics as sql
from gateway.store.queues import DEFAULT_MAX_QUEUES, DEFAULT_MAX_WAITERS, QueueStore

T = TypeVar("T")


class Database(Protocol):
    def read(self, work: Callable[[Any], T]) -> T:
        """Run ``work(connection)`` for reading, on one consistent snapshot."""

    def write(self, work: Callable[[Any], T], *, durable: bool = True) -> T:
        """Run ``work(connection)`` in a transaction committed before this returns.

        ``durable=False`` may skip the flush to stable storage: for writes whose loss in a
        power cut loses nothing acknowledged (claims and attempt outcomes of deliveries,
        which at-least-once delivery simply repeats).
        """

    def ping(self) -> bool: ...

    def close(self) -> None: ...


class Store:
    """Domain operations over a :class:`Database`."""

    def __init__(
        self,
        database: Database,
        clock: Callable[[], float] = time.time,
        *,
        max_waiters: int = DEFAULT_MAX_WAITERS,
        max_queues: int | None = DEFAULT_MAX_QUEUES,
    ) -> None:
        self.database = database
        self.clock = clock
        self.queues = QueueStore(database, clock, max_waiters=max_waiters, max_queues=max_queues)
        self._message_ids = MessageIdFactory()

    def now_seconds(self) -> int:
        return int(self.clock())

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def new_message_id(self, now_ms: int) -> str:
        """A MessageId that sorts by publish time and is unique across worker processes."""
        return self._message_ids.new_id(now_ms)

    # topics -------------------------------------------------------------------------------
    def create_topic(self, name: str, maximum_message_size: int, logging_enabled: bool) -> bool:
        now = self.now_seconds()
        topic = Topic(name, now, now, maximum_message_size, logging_enabled)
        return self.database.write(partial(sql.create_topic, topic=topic))

    def set_topic_attributes(
        self, name: str, maximum_message_size: int | None, logging_enabled: bool | None
    ) -> None:
        now = self.now_seconds()
        self.database.write(
            lambda c: sql.set_topic_attributes(c, name, maximum_message_size, logging_enabled, now)
        )

    def get_topic(self, name: str) -> tuple[Topic, int]:
        """The topic and its current message count."""
        now_ms = self.now_ms()

        def work(conn: Any) -> tuple[Topic, int]:
            return sql.require_topic(conn, name), sql.message_count(conn, name, now_ms)

        return self.database.read(work)

    def delete_topic(self, name: str) -> None:
        self.database.write(partial(sql.delete_topic, name=name))

    def list_topics(self, prefix: str, marker: str, limit: int) -> Page[Topic]:
        return self.database.read(lambda c: sql.list_topics(c, prefix, marker, limit))

    # subscriptions ------------------------------------------------------------------------
    def subscribe(self, subscription: Subscription) -> bool:
        return self.database.write(partial(sql.subscribe, subscription=subscription))

    def set_notify_strategy(self, topic_name: str, name: str, strategy: str) -> None:
        now = self.now_seconds()
        self.database.write(lambda c: sql.set_notify_strategy(c, topic_name, name, strategy, now))

    def get_subscription(self, topic_name: str, name: str) -> Subscription:
        found = self.database.read(lambda c: sql.get_subscription(c, topic_name, name))
        if found is None:
            raise MNSError("SubscriptionNotExist")
        return found

    def unsubscribe(self, topic_name: str, name: str) -> None:
        self.database.write(lambda c: sql.unsubscribe(c, topic_name, name))

    def list_subscriptions(
        self, topic_name: str, prefix: str, marker: str, limit: int
    ) -> Page[Subscription]:
        return self.database.read(
            lambda c: sql.list_subscriptions(c, topic_name, prefix, marker, limit)
        )

    # messages -----------------------------------------------------------------------------
    def publish(self, message: TopicMessage) -> Published:
        return self.database.write(partial(sql.publish, message=message))

    # deliveries ---------------------------------------------------------------------------
    def claim_deliveries(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        now = self.now_ms()
        lease_ms = int(lease_seconds * 1000)
        return self.database.write(
            lambda c: deliveries.claim(c, owner, now, lease_ms, limit, skip_routes),
            durable=False,
        )

    def release_deliveries(self, owner: str, delivery_ids: list[str]) -> None:
        self.database.write(lambda c: deliveries.release(c, owner, delivery_ids), durable=False)

    def settle(self, owner: str, settlements: list[Settlement]) -> list[str | None]:
        """Record many attempts' outcomes in one transaction; dead letter ids where made."""
        now = self.now_ms()
        return self.database.write(
            lambda c: deliveries.settle(c, owner, settlements, now), durable=False
        )

    def next_due_ms(self) -> int | None:
        return self.database.read(deliveries.next_due_ms)

    def due_count(self) -> int:
        now = self.now_ms()
        return self.database.read(lambda c: deliveries.due_count(c, now))

    def expire_deliveries(self, limit: int = 500) -> list[str]:
        """Dead-letter deliveries whose message outlived retention; purge unneeded old messages."""
        now = self.now_ms()

        def work(conn: Any) -> list[str]:
            jobs = deliveries.expired_jobs(conn, now, limit)
            letters = [deliveries.dead_letter(conn, job, None, "expired", now) for job in jobs]
            deliveries.purge_expired_messages(conn, now)
            return [letter for letter in letters if letter]

        return self.database.write(work)

    # dead letters -------------------------------------------------------------------------
    def list_dead_letters(
        self, marker: str = "", limit: int = 100, topic_name: str | None = None
    ) -> Page[DeadLetter]:
        return self.database.read(
            lambda c: deliveries.list_dead_letters(c, marker, limit, topic_name)
        )

    def get_dead_letter(self, letter_id: str) -> DeadLetter:
        return self.database.read(lambda c: deliveries.get_dead_letter(c, letter_id))

    def replay_dead_letter(self, letter_id: str) -> str:
        now = self.now_ms()
        return self.database.write(lambda c: deliveries.replay(c, letter_id, now))

    # lifecycle ----------------------------------------------------------------------------
    def ping(self) -> bool:
        return self.database.ping()

    def close(self) -> None:
        self.queues.close()
        self.database.close()
