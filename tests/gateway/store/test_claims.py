"""Claims of work are one statement that re-checks the lease: a delivery is never held by two
workers at once, and an outcome recorded under a lost lease changes nothing."""

from __future__ import annotations

import re
import threading

import pytest

from gateway.delivery.records import Attempt, DeliveryJob, PushOutcome, Settlement
from gateway.store.base import Store, compose_store
from gateway.store.sql import delivery_sql
from gateway.store.sql.connection import Connection
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock
from tests.support.databases import CountingConnection, WrappedWrites
from tests.support.plans import Recording, plan_of


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
    retry = [(job.delivery_id, failed, later)]
    assert a.database.write(lambda c: delivery_sql.retry_all_later(c, "b", retry)) == set()
    assert a.database.write(lambda c: delivery_sql.retry_all_later(c, "a", retry)) == {
        job.delivery_id
    }
    assert a.database.read(lambda c: delivery_sql.attempts_of(c, job.delivery_id)) == [failed]


def test_a_batch_of_failures_is_retried_where_the_lease_holds(
    open_database: OpenDatabase, clock: Clock
) -> None:
    """Three failed pushes settled together, one of them meanwhile claimed by another worker
    (its lease had lapsed): the two still held are rescheduled with their attempts recorded,
    the third is left as the other worker has it. One statement on PostgreSQL, two a delivery
    on SQLite (the rescheduling, then the attempt where it held)."""
    sent: list[str] = []
    database = WrappedWrites(open_database(), lambda conn: CountingConnection(conn, sent))
    a = compose_store(database, clock)  # type: ignore[arg-type]
    b = compose_store(open_database(), clock)
    published(a, 3)
    jobs = a.deliveries.claim("a", 30, 10, frozenset())
    lost = jobs[0]
    clock.now += 31
    (taken,) = b.deliveries.claim("b", 30, 1, frozenset())
    assert taken.delivery_id == lost.delivery_id
    now = a.now_ms()
    failed = [
        Settlement(job, Attempt(1, now, PushOutcome.HTTP_ERROR, 503, "busy", 12.5), now + 5000)
        for job in jobs
    ]
    sent.clear()
    a.deliveries.settle("a", failed)
    retries = [sql for sql in sent if "delivery_attempts" in sql or "UPDATE deliveries" in sql]
    on_postgresql = a.database.read(lambda c: c.dialect.writable_cte)
    assert len(retries) == (1 if on_postgresql else 3 + 2), retries

    def state(conn: Connection, job: DeliveryJob) -> tuple[object, ...]:
        row = conn.execute(
            "SELECT attempts, next_attempt_at, lease_owner FROM deliveries WHERE id = ?",
            (job.delivery_id,),
        ).fetchone()
        attempts = delivery_sql.attempts_of(conn, job.delivery_id)
        return row["attempts"], row["next_attempt_at"], row["lease_owner"], attempts

    assert a.database.read(lambda c: state(c, lost))[2:] == ("b", [])
    for job in jobs[1:]:
        assert a.database.read(lambda c, job=job: state(c, job)) == (  # type: ignore[misc]
            1, now + 5000, None, [failed[0].attempt],
        )  # fmt: skip


#: A route no subscription is on: skipping it takes the per-subscription path of a claim.
ELSEWHERE = frozenset({"http://elsewhere.test:80"})


@pytest.mark.parametrize("skip", [frozenset(), ELSEWHERE], ids=["in due order", "per subscription"])
def test_concurrent_claimers_never_share_a_delivery(
    stores: tuple[Store, Store], skip: frozenset[str]
) -> None:
    a, b = stores
    published(a, 200)
    taken: list[str] = []
    lock = threading.Lock()

    def claimer(store: Store, owner: str) -> None:
        for _ in range(100):
            jobs = store.deliveries.claim(owner, 60, 7, skip)
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


FAST, SLOW = "http://fast.test/", "http://slow.test/"
SLOW_ROUTE = "http://slow.test:80"  # scheme, host and port


def three_subscriptions(store: Store, messages: int) -> None:
    """``a`` and ``b`` on one route, ``c`` on another; ``messages`` published a millisecond
    apart, so that each subscription's deliveries and theirs together have one due order."""
    store.topics.create_topic("t", 65536, False)
    for name, endpoint in (("a", FAST), ("b", FAST), ("c", SLOW)):
        store.topics.subscribe(Subscription("t", name, endpoint + name))
    now = store.now_ms()
    store.topics.publish_all(
        [TopicMessage(f"M{n:04d}", "t", "b", "X", now - messages + n) for n in range(messages)]
    )


def claimed(jobs: list[DeliveryJob]) -> list[tuple[str, str]]:
    return [(job.message.id, job.subscription.name) for job in jobs]


def test_a_claim_that_skips_a_route_takes_the_earliest_of_the_others_in_due_order(
    stores: tuple[Store, Store],
) -> None:
    a, b = stores
    three_subscriptions(a, 6)
    # Another claimer holds the first of ``a``: a claim goes past it.
    held = a.database.write(lambda c: delivery_sql.claim(c, "other", a.now_ms(), 60_000, 1))
    assert claimed(held) == [("M0000", "a")]
    jobs = b.deliveries.claim("b", 60, 5, frozenset({SLOW_ROUTE}))
    # a and b's deliveries of one message are due together; their order among themselves is
    # the store's, so compare in due order, then by subscription.
    assert sorted(claimed(jobs)) == [
        ("M0000", "b"),
        ("M0001", "a"),
        ("M0001", "b"),
        ("M0002", "a"),
        ("M0002", "b"),
    ]
    assert [job.message.id for job in jobs] == sorted(job.message.id for job in jobs)
    rest = b.deliveries.claim("b", 60, 100, frozenset({SLOW_ROUTE}))
    assert len(rest) == 2 * 6 - 1 - 5 and all(job.subscription.name != "c" for job in rest)
    assert [job.subscription.name for job in a.deliveries.claim("a", 60, 100, frozenset())] == [
        "c"
    ] * 6


def test_a_claim_that_skips_a_subscription_leaves_its_route_s_others_in(
    stores: tuple[Store, Store],
) -> None:
    a, _ = stores
    three_subscriptions(a, 3)
    jobs = a.database.write(
        lambda c: delivery_sql.claim(c, "w", a.now_ms(), 60_000, 100, (), ("t/a",))
    )
    assert sorted(claimed(jobs)) == sorted(
        (f"M{n:04d}", name) for n in range(3) for name in ("b", "c")
    )


def test_a_held_subscription_is_left_out_even_where_a_delivery_of_it_is_due(
    stores: tuple[Store, Store],
) -> None:
    """``held`` names subscriptions whose due deliveries the claim's transaction has just held
    out of the due range; one that fell due since is still not claimed."""
    a, _ = stores
    three_subscriptions(a, 2)
    jobs = a.database.write(
        lambda c: delivery_sql.claim(c, "w", a.now_ms(), 60_000, 100, held=("t/b",))
    )
    assert sorted(claimed(jobs)) == [("M0000", "a"), ("M0000", "c"), ("M0001", "a"), ("M0001", "c")]


def test_a_claim_that_skips_a_route_never_reads_its_backlog(stores: tuple[Store, Store]) -> None:
    """Each subscription not skipped is read from its own range of
    ``deliveries_subscription_due``: the skipped route's due backlog, at the front of the due
    order, is not walked past (its size does not enter the claim's cost)."""
    a, _ = stores
    three_subscriptions(a, 3)

    def explained(conn: Connection) -> str:
        recording = Recording(conn)
        delivery_sql.claim(recording, "w", a.now_ms(), 60_000, 2, (SLOW_ROUTE,))  # type: ignore[arg-type]
        update = next(s for s in recording.statements if "UPDATE deliveries" in s[0])
        return plan_of(conn, *update)

    plan = a.database.write(explained)
    assert "deliveries_subscription_due" in plan, plan
    assert not re.search(r"\bdeliveries_due\b", plan), plan
