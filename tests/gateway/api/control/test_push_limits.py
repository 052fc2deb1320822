"""TenantRateLimitPolicy on a subscription's pushes: a claim takes the grants for its whole
batch from the count shared by every replica (docs/control-plane.md#tenantratelimitpolicy).

The pure rule first, then the store on each backend (replicas are stores on their own
connections to one database, the clock injected), then the delivery worker pushing for real
through an in-process sender.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import cast

from gateway.delivery.push_limits import (
    BatchGrant,
    PushCount,
    grant_batch,
    grant_holds,
    until_next_second,
)
from gateway.delivery.records import DeliveryJob
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.backends.memory import MemoryDatabase
from gateway.store.base import Store, compose_store
from gateway.store.control import RateLimitPolicy
from gateway.store.sql.connection import Connection
from gateway.store.sql.push_limit_sql import grant_claimed
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock

S = 1_800_000_000  # the second the tests start in


def test_a_batch_gets_what_its_second_leaves() -> None:
    batch = grant_batch(PushCount(10, S, 7), 16, S * 1000 + 500)
    assert batch == BatchGrant(3, S, PushCount(10, S, 10))
    assert batch.next_due_ms == (S + 1) * 1000
    assert grant_batch(PushCount(10, S, 2), 5, S * 1000) == BatchGrant(5, S, PushCount(10, S, 7))
    assert grant_batch(PushCount(10, S, 2), 0, S * 1000).granted == 0


def test_a_new_second_starts_a_new_count() -> None:
    assert grant_batch(PushCount(10, S - 1, 10), 4, S * 1000) == BatchGrant(
        4, S, PushCount(10, S, 4)
    )
    assert grant_batch(PushCount(10, S - 5, 3), 16, S * 1000 + 999).count == PushCount(10, S, 10)


def test_a_clock_behind_the_count_counts_in_its_second_and_never_restarts_it() -> None:
    # Another replica's clock already moved the count to S + 1: ours, still in S, counts there.
    batch = grant_batch(PushCount(10, S + 1, 6), 8, S * 1000 + 999)
    assert batch == BatchGrant(4, S + 1, PushCount(10, S + 1, 10))
    assert batch.next_due_ms == (S + 2) * 1000


def test_an_exhausted_or_lowered_limit_grants_nothing_and_changes_nothing() -> None:
    assert grant_batch(PushCount(10, S, 10), 5, S * 1000) == BatchGrant(0, S, PushCount(10, S, 10))
    # A limit lowered within the second below what it already granted.
    assert grant_batch(PushCount(3, S, 5), 1, S * 1000) == BatchGrant(0, S, PushCount(3, S, 5))


def test_a_grant_holds_until_its_second_is_over() -> None:
    assert grant_holds(None, S * 1000)  # not limited when claimed
    assert grant_holds(S, S * 1000 + 999)
    assert not grant_holds(S, (S + 1) * 1000)
    assert grant_holds(S + 1, S * 1000 + 500)  # granted in a window another clock moved on


def test_a_dispatcher_waits_no_longer_than_the_next_second() -> None:
    assert until_next_second(S + 0.75) == 0.25
    assert until_next_second(float(S)) == 1.0


def publish(store: Store, count: int, clock: Clock) -> None:
    """``count`` messages a millisecond apart (claims take the oldest first)."""
    for index in range(count):
        message = TopicMessage(f"m-{index:03d}", "t", "b", "X", int(clock() * 1000))
        store.topics.publish(message)
        clock.now += 0.001


def limited_topic(store: Store, limits: dict[str, int | None], clock: Clock, messages: int) -> None:
    """Topic ``t`` with a subscription per entry of ``limits`` (``None``: no limit), and
    ``messages`` messages published to it: as many deliveries for each subscription."""
    store.topics.create_topic("t", 65536, False)
    for name, limit in limits.items():
        store.topics.subscribe(Subscription("t", name, "http://127.0.0.1:9/"))
        if limit is not None:
            store.control.set_rate_limit("subscription", f"t/{name}", RateLimitPolicy(True, limit))
    publish(store, messages, clock)


def claim(store: Store, limit: int = 100) -> list[DeliveryJob]:
    return store.deliveries.claim("w", 30, limit, frozenset())


def test_a_claim_takes_its_whole_batchs_grants_and_the_rest_waits_for_the_next_second(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    first, second = compose_store(open_database(), clock), compose_store(open_database(), clock)
    limited_topic(first, {"limited": 5}, clock, 12)
    pushed: dict[int, list[DeliveryJob]] = {}
    batch = claim(first, 4)
    assert [job.granted_second for job in batch] == [S] * 4
    # The other replica's claim finds one left in the second; what it claimed beyond that waits.
    rest = claim(second)
    assert [job.granted_second for job in rest] == [S]
    pushed[S] = batch + rest
    assert claim(first) == [] and claim(second) == []
    clock.now += 1
    pushed[S + 1] = claim(second)
    assert [job.granted_second for job in pushed[S + 1]] == [S + 1] * 5
    assert claim(first) == []
    clock.now += 1
    pushed[S + 2] = claim(first)
    assert len(pushed[S + 2]) == 2 and claim(second) == []
    # None dropped, none twice, and the oldest first.
    ids = [job.message.id for second_jobs in pushed.values() for job in second_jobs]
    assert sorted(ids) == [f"m-{index:03d}" for index in range(12)]
    assert sorted(job.message.id for job in batch) == [f"m-{index:03d}" for index in range(4)]


def test_a_subscription_without_a_limit_shares_the_batch_untouched(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    store = compose_store(open_database(), clock)
    limited_topic(store, {"free": None, "limited": 2}, clock, 4)
    jobs = claim(store)
    granted = Counter((job.subscription.name, job.granted_second) for job in jobs)
    assert granted == {("free", None): 4, ("limited", S): 2}
    assert all(store.deliveries.take_push(job) for job in jobs)  # no second take for any


class NoStatements:
    """A connection that fails any statement run on it."""

    def execute(self, sql: str, parameters: object = ()) -> None:
        raise AssertionError(f"a statement ran: {sql}")


def test_a_claim_says_which_subscriptions_are_limited_and_reads_no_count_for_the_others(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    store = compose_store(open_database(), clock)
    limited_topic(store, {"free": None, "limited": 2, "off": 5}, clock, 2)
    store.control.set_rate_limit("subscription", "t/off", RateLimitPolicy(False, 5))
    jobs = claim(store)
    flags = Counter((job.subscription.name, job.rate_limited) for job in jobs)
    assert flags == {("free", False): 2, ("limited", True): 2, ("off", False): 2}
    unlimited = [job for job in jobs if not job.rate_limited]
    granted = grant_claimed(cast(Connection, NoStatements()), unlimited, S * 1000)
    assert granted.jobs == unlimited and granted.used_up == {}


def test_a_used_up_subscriptions_backlog_is_left_out_of_claims_until_its_second_ends(
    open_database: OpenDatabase,
) -> None:
    """Once a claim finds a subscription's second used up, later claims in that second pass
    over its backlog instead of leasing it only to hand it back: another topic's delivery
    behind that backlog is claimed at once, and the backlog waits, untouched, for the next
    second."""
    clock = Clock()
    store = compose_store(open_database(), clock)
    limited_topic(store, {"limited": 2}, clock, 6)
    store.topics.create_topic("u", 65536, False)
    store.topics.subscribe(Subscription("u", "free", "http://127.0.0.1:9/"))
    store.topics.publish(TopicMessage("later", "u", "b", "X", int(clock() * 1000)))
    clock.now += 0.001
    first = [job.message.id for job in claim(store, 4)]
    # Of the four oldest, two granted and two handed back to S + 1 (messages a millisecond apart
    # may share one: which two is not asked).
    assert len(first) == 2 and set(first) <= {"m-000", "m-001", "m-002", "m-003"}
    # Without the skip, this claim would take m-004 and m-005 (older) and hand them back.
    assert [job.message.id for job in claim(store, 2)] == ["later"]
    assert claim(store, 2) == []
    later: list[str] = []
    for _ in range(2):  # two a second, none dropped (handed-back ones keep no order)
        clock.now += 1
        later += [job.message.id for job in claim(store)]
        assert len(later) % 2 == 0 and len(later) <= 4
    assert sorted(first + later) == [f"m-{index:03d}" for index in range(6)]


def test_replicas_claiming_at_once_never_grant_more_than_the_limit(
    open_database: OpenDatabase,
) -> None:
    """Four replicas claim small batches of two limited subscriptions at once, in one second:
    each gets exactly its limit (without the row lock, PostgreSQL's concurrent claims would
    read the same count and grant it twice)."""
    clock = Clock()
    replicas = [compose_store(open_database(), clock) for _ in range(4)]
    limited_topic(replicas[0], {"a": 7, "b": 4}, clock, 20)
    start = threading.Barrier(len(replicas), timeout=30)
    granted: list[DeliveryJob] = []
    lock = threading.Lock()

    def replica(store: Store) -> None:
        start.wait()
        for _ in range(6):  # bounded: the 11 grants come in the first 8 claims or so
            jobs = claim(store, 3)
            with lock:
                granted.extend(jobs)

    threads = [threading.Thread(target=replica, args=(store,)) for store in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert Counter(job.subscription.name for job in granted) == {"a": 7, "b": 4}
    assert len({job.delivery_id for job in granted}) == 11
    clock.now += 1  # the rest waited, none was dropped
    assert Counter(job.subscription.name for job in claim(replicas[1])) == {"a": 7, "b": 4}


def test_a_push_whose_grant_lapsed_takes_its_place_again_or_waits(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    first, second = compose_store(open_database(), clock), compose_store(open_database(), clock)
    limited_topic(first, {"limited": 2}, clock, 4)
    late = claim(first)  # granted in S, but not started before S + 1
    clock.now += 1
    on_time = claim(second)
    assert [job.granted_second for job in on_time] == [S + 1] * 2
    # S + 1's two are taken: the late pushes wait for S + 2, untried.
    assert [first.deliveries.take_push(job) for job in late] == [False, False]
    assert [second.deliveries.take_push(job) for job in on_time] == [True, True]
    assert claim(first) == []
    clock.now += 1
    assert sorted(job.delivery_id for job in claim(second)) == sorted(
        job.delivery_id for job in late
    )
    # With room in the current second, a lapsed grant is simply taken again there.
    first.control.set_rate_limit("subscription", "t/limited", RateLimitPolicy(True, 3))
    assert first.deliveries.take_push(late[0]) is True
    assert claim(first) == []


class CountingSender:
    """Answers every push with success; counts them by the second they started in."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.per_second: Counter[int] = Counter()
        self.lock = threading.Lock()

    def send(self, job: DeliveryJob) -> PushResult:
        with self.lock:
            self.per_second[int(self.clock())] += 1
        return PushResult(204, PushOutcome.SUCCESS, None, 1.0)


def test_the_worker_pushes_at_most_the_limit_each_second_and_drops_none() -> None:
    clock = Clock()
    store = compose_store(MemoryDatabase(), clock=clock)
    limited_topic(store, {"limited": 3}, clock, 8)
    sender = CountingSender(clock)
    options = WorkerOptions(threads=4, max_per_route=2, lease_seconds=30)
    worker = DeliveryWorker(store.deliveries, SenderRegistry(sender), options, rng=random.Random(7))
    try:
        for _ in range(4):  # each second: dispatch until nothing more starts in it
            for _ in range(10):
                started = worker.dispatch_once()
                worker.drain()
                if not started:
                    break
            clock.now += 1
    finally:
        worker.stop(timeout=5)
        store.close()
    assert sender.per_second == {S: 3, S + 1: 3, S + 2: 2}
