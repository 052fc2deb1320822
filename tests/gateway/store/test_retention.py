"""Retention (``MNS_GATEWAY_HISTORY_RETENTION``, issue 50) on each backend: the delivered
history and the topic messages no delivery needs go after the window; a message some delivery
still needs is never dropped (up to its topic's retention); on PostgreSQL partitions are made
ahead and dropped whole."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from gateway.delivery.records import Attempt, Filed, Settlement
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.base import Store, compose_store
from gateway.store.deliveries import DeliveryStore
from gateway.store.sql import partitions_sql, retention_sql
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock
from tests.support.stub import ScriptedSender

RETENTION_S = 60
DAY_S = 86_400


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> Store:
    made = compose_store(open_database(), clock=clock, history_retention=RETENTION_S)
    made.topics.create_topic("t", 65536, False)
    for name in ("up", "down"):
        made.topics.subscribe(Subscription("t", name, f"http://{name}.test/"))
    made.deliveries.retain(made.now_ms())  # PostgreSQL: the ranges from now on
    return made


def publish(store: Store, body: str = "body") -> str:
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "t", body, "X", store.now_ms()))
    return message_id


def push_all(store: Store, subscription: str) -> int:
    """Succeed every due push to ``subscription``; the others are handed back."""
    jobs = store.deliveries.claim("w", 60, 1000, frozenset())
    mine = [j for j in jobs if j.subscription.name == subscription]
    store.deliveries.release("w", [j.delivery_id for j in jobs if j not in mine])
    success = Attempt(1, store.now_ms(), "success", 204, None, 1.0)
    store.deliveries.settle("w", [Settlement(j, success) for j in mine])
    return len(mine)


def count(store: Store, table: str) -> int:
    sql = f"SELECT COUNT(*) AS n FROM {table}"
    return store.database.read(lambda c: int(c.execute(sql).fetchone()["n"]))


def ranges(store: Store, table: str) -> list[partitions_sql.Partition]:
    found = store.database.read(lambda c: partitions_sql.partitions(c, table))
    return [p for p in found if p.low_ms is not None and p.high_ms is not None]


def test_the_window_drops_what_no_delivery_needs_and_never_a_pending_push(
    store: Store, clock: Clock
) -> None:
    old = [publish(store) for _ in range(3)]
    assert push_all(store, "up") == 3  # "down" is down: its three pushes stay pending
    clock.advance(RETENTION_S + 120)
    store.deliveries.expire()  # the pass the delivery workers run every minute
    # The history of the pushes made is gone with the window; every message is still needed.
    assert count(store, "delivered") == 0
    assert count(store, "topic_messages") == 3
    # The pending pushes are still there, whole, and succeed.
    jobs = store.deliveries.claim("w", 60, 1000, frozenset())
    assert sorted((j.message.id, j.message.body) for j in jobs) == [(i, "body") for i in old]
    store.deliveries.release("w", [j.delivery_id for j in jobs])
    assert push_all(store, "down") == 3
    clock.advance(RETENTION_S + 120)
    store.deliveries.expire()
    assert count(store, "topic_messages") == 0
    assert count(store, "delivered") == 0


def test_a_pending_push_is_kept_up_to_its_topics_retention_then_dead_lettered(
    store: Store, clock: Clock
) -> None:
    message_id = publish(store)
    push_all(store, "up")
    for _ in range(3):  # hours of passes while "down" stays down
        clock.advance(DAY_S / 4)
        store.deliveries.expire()
        assert count(store, "topic_messages") == 1
    clock.advance(DAY_S / 4 + 1)
    store.deliveries.expire()
    (letter,) = store.deliveries.list_dead_letters().items
    assert letter.message.id == message_id and letter.message.body == "body"
    store.deliveries.expire()
    assert count(store, "topic_messages") == 0


def test_the_history_is_kept_for_the_window(store: Store, clock: Clock) -> None:
    message_id = publish(store)
    push_all(store, "up")
    push_all(store, "down")
    clock.advance(RETENTION_S - 1)
    store.deliveries.expire()
    assert len(store.deliveries.message_deliveries(message_id).delivered) == 2
    assert store.deliveries.history_kept_since(store.now_ms()) == store.now_ms() - 60_000


def test_the_pass_runs_every_half_range_on_the_stores_clock(store: Store, clock: Clock) -> None:
    """At a 60-s retention a pass every 7.5 s, not once a minute with the expiry: what the pass
    forgets waits 7.5 s at most past its window."""
    every = partitions_sql.pass_interval_ms(RETENTION_S) / 1000
    assert every == 7.5
    assert store.deliveries.retain_if_due() is None  # the fixture's pass has just run
    message_id = publish(store)
    push_all(store, "up")
    push_all(store, "down")
    clock.advance(RETENTION_S - 1)
    assert store.deliveries.retain_if_due() == 0
    assert len(store.deliveries.message_deliveries(message_id).delivered) == 2
    clock.advance(every - 0.5)
    assert store.deliveries.retain_if_due() is None
    clock.advance(0.5)
    assert store.deliveries.retain_if_due() is not None
    assert store.deliveries.message_deliveries(message_id).delivered == []
    assert count(store, "topic_messages") == 0


class ExpiryWatched:
    """The store a worker is handed, counting its expiries (once a minute of its own clock)."""

    def __init__(self, inner: DeliveryStore) -> None:
        self.inner = inner
        self.expiries = 0
        self.expired = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def expire(self, limit: int = 500) -> list[Filed]:
        filed = self.inner.expire(limit)
        self.expiries += 1
        self.expired.set()
        return filed


def test_a_running_worker_runs_the_pass_between_its_expiries(store: Store, clock: Clock) -> None:
    message_id = publish(store)
    push_all(store, "up")
    push_all(store, "down")
    watched = ExpiryWatched(store.deliveries)
    options = WorkerOptions(threads=1, idle_wait=0.02)
    worker = DeliveryWorker(watched, SenderRegistry(ScriptedSender()), options)  # type: ignore[arg-type]
    worker.start()
    try:
        assert watched.expired.wait(10)  # its first round; the next expiry is a minute away
        clock.advance(RETENTION_S + 10)
        deadline = time.monotonic() + 10
        while store.deliveries.message_deliveries(message_id).delivered:
            assert time.monotonic() < deadline, "no retention pass ran"
            time.sleep(0.02)
        assert watched.expiries == 1
    finally:
        worker.stop()


def test_a_purge_batch_is_bounded(store: Store, clock: Clock) -> None:
    for _ in range(5):
        publish(store)
    push_all(store, "up")
    push_all(store, "down")
    clock.advance(RETENTION_S + 1)
    now = store.now_ms()
    cutoff = retention_sql.kept_since(now, RETENTION_S)
    if not store.database.read(lambda c: c.dialect.partitions):
        assert store.database.write(lambda c: retention_sql.purge_messages(c, now, cutoff, 2)) == 2
    store.deliveries.retain(now)
    assert count(store, "topic_messages") == 0


#: Partitions are PostgreSQL's: these tests run on it alone (SQLite purges in batches, above).
on_postgres = pytest.mark.parametrize("open_database", ["postgresql"], indirect=True)


@pytest.fixture()
def postgres_store(store: Store) -> Store:
    assert store.database.read(lambda c: c.dialect.partitions)
    return store


@on_postgres
def test_partitions_are_made_ahead_and_dropped_whole(postgres_store: Store, clock: Clock) -> None:
    store = postgres_store
    now = store.now_ms()
    made = ranges(store, "topic_messages")
    assert made and made[-1].high_ms is not None
    assert made[-1].high_ms >= now + partitions_sql.ahead_ms(RETENTION_S)
    assert [p.low_ms for p in ranges(store, "delivered")] == [p.low_ms for p in made]
    first = publish(store)
    push_all(store, "up")
    push_all(store, "down")
    assert count(store, "topic_messages_default") == 0  # in its range, not the default
    clock.advance(RETENTION_S + 2 * 60)
    store.deliveries.expire()
    kept = ranges(store, "topic_messages")
    assert all(p.high_ms is not None and p.high_ms > now for p in kept)
    assert ranges(store, "delivered")[0].low_ms == kept[0].low_ms
    assert store.deliveries.message_deliveries(first).delivered == []
    assert count(store, "topic_messages") == 0
    # Made ahead again from the new now.
    assert kept[-1].high_ms is not None
    assert kept[-1].high_ms >= store.now_ms() + partitions_sql.ahead_ms(RETENTION_S)


@on_postgres
def test_a_partition_a_pending_push_needs_is_kept_until_it_is_pushed(
    postgres_store: Store, clock: Clock
) -> None:
    store = postgres_store
    pending = publish(store)
    push_all(store, "up")
    holding = next(p.name for p in ranges(store, "topic_messages"))
    clock.advance(RETENTION_S + 2 * 60)
    store.deliveries.expire()
    assert holding in [p.name for p in ranges(store, "topic_messages")]
    (job,) = store.deliveries.claim("w", 60, 10, frozenset())
    assert job.message.id == pending
    store.deliveries.release("w", [job.delivery_id])
    push_all(store, "down")
    store.deliveries.expire()
    assert holding not in [p.name for p in ranges(store, "topic_messages")]
    assert count(store, "topic_messages") == 0


@on_postgres
def test_a_dead_letter_replayed_after_its_range_went_is_pushed_from_the_default(
    postgres_store: Store, clock: Clock
) -> None:
    store = postgres_store
    message_id = publish(store)
    push_all(store, "up")
    (job,) = store.deliveries.claim("w", 60, 10, frozenset())
    failure = Attempt(1, store.now_ms(), "http_error", 500, "no", 1.0)
    store.deliveries.settle("w", [Settlement(job, failure, dead_reason="gone")])
    clock.advance(RETENTION_S + 2 * 60)
    store.deliveries.expire()
    assert count(store, "topic_messages") == 0
    (letter,) = store.deliveries.list_dead_letters().items
    store.deliveries.replay_dead_letter(letter.id)
    assert count(store, "topic_messages_default") == 1
    store.deliveries.expire()  # a range made after the default's row starts after it
    (job,) = store.deliveries.claim("w", 60, 10, frozenset())
    assert job.message.id == message_id
    store.deliveries.settle("w", [Settlement(job, Attempt(1, store.now_ms(), "success", 204))])
    clock.advance(DAY_S + 1)
    store.deliveries.expire()
    assert count(store, "topic_messages") == 0


@on_postgres
def test_a_publish_while_a_range_is_made_lands_outside_it(
    postgres_store: Store, clock: Clock
) -> None:
    """A range made while a publish into the default partition is not yet committed starts
    after that row: made before it, CREATE would refuse the range because of the row (a
    check violation, seen under load as a worker's failed retention pass)."""
    store = postgres_store
    publish(store)
    clock.advance(DAY_S)  # no range holds now: publishes go to the default partition
    message_id = store.topics.new_message_id(store.now_ms())
    url = store.database.url  # type: ignore[attr-defined]
    failures: list[BaseException] = []

    def make_ranges() -> None:
        try:
            store.deliveries.retain(store.now_ms())
        except BaseException as exc:
            failures.append(exc)

    with psycopg.connect(url) as publisher:  # a transaction: open until the block ends
        publisher.execute(
            "INSERT INTO topic_messages SELECT (jsonb_populate_record(NULL::topic_messages,"
            " to_jsonb(m) || jsonb_build_object('id', %s::text))).* FROM topic_messages m"
            " LIMIT 1",
            (message_id,),
        )
        maker = threading.Thread(target=make_ranges)
        maker.start()
        deadline = time.monotonic() + 30
        waiting = (
            "SELECT COUNT(*) FROM pg_locks WHERE NOT granted AND locktype = 'relation'"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        while maker.is_alive() and publisher.execute(waiting).fetchone() == (0,):
            assert time.monotonic() < deadline, "the range maker never waited for the publish"
            time.sleep(0.01)
    maker.join(30)
    assert not maker.is_alive() and failures == []
    assert count(store, "topic_messages_default") == 1
    row_ms = int(message_id[:11], 16)
    made = [p for p in ranges(store, "topic_messages") if p.high_ms and p.high_ms > row_ms]
    assert made and all(p.low_ms is not None and p.low_ms > row_ms for p in made)
