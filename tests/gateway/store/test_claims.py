"""Claims of work are one statement that re-checks the lease: a delivery is never held by two
workers at once, and an outcome recorded under a lost lease changes nothing."""

from __future__ import annotations

import threading

import pytest

from gateway.delivery.records import Attempt
from gateway.store.base import Store, compose_store
from gateway.store.sql import delivery_sql
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock


@pytest.fixture()
def stores(open_database: OpenDatabase, clock: Clock) -> tuple[Store, Store]:
    """Two stores on one database: two processes or replicas, as far as either knows."""
    return compose_store(open_database(), clock), compose_store(open_database(), clock)


def published(store: Store, count: int) -> None:
    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "s", "http://a.test/"))
    now = store.now_ms()
    store.topics.publish_all([TopicMessage(f"M{n:04d}", "t", "b", "X", now) for n in range(count)])


def test_a_held_lease_is_not_claimed_until_it_lapses(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    published(a, 1)
    assert len(a.deliveries.claim("a", 30, 10, frozenset())) == 1
    assert b.deliveries.claim("b", 30, 10, frozenset()) == []
    clock.now += 30
    (job,) = b.deliveries.claim("b", 30, 10, frozenset())
    assert job.message.id == "M0000"


def test_only_the_holder_releases_or_reschedules(stores: tuple[Store, Store], clock: Clock) -> None:
    a, b = stores
    published(a, 1)
    (job,) = a.deliveries.claim("a", 30, 10, frozenset())
    b.deliveries.release("b", [job.delivery_id])  # not b's to give back
    assert b.deliveries.claim("b", 30, 10, frozenset()) == []
    failed = Attempt(1, a.now_ms(), "http_error", 500)
    later = a.now_ms() + 5000
    assert not a.database.write(
        lambda c: delivery_sql.retry_later(c, job.delivery_id, "b", failed, later)
    )
    assert a.database.write(
        lambda c: delivery_sql.retry_later(c, job.delivery_id, "a", failed, later)
    )


def test_concurrent_claimers_never_share_a_delivery(stores: tuple[Store, Store]) -> None:
    a, b = stores
    published(a, 200)
    taken: list[str] = []
    lock = threading.Lock()

    def claimer(store: Store, owner: str) -> None:
        for _ in range(100):
            jobs = store.deliveries.claim(owner, 60, 7, frozenset())
            if not jobs:
                return
            with lock:
                taken.extend(job.delivery_id for job in jobs)

    threads = [
        threading.Thread(target=claimer, args=(store, f"w{n}"))
        for n, store in enumerate([a, b, a, b, a, b])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(taken) == 200
    assert len(set(taken)) == 200
