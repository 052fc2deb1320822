"""TenantRateLimitPolicy on queues: at most MaxReceivesPerSecond messages received in each
second, across replicas; the store's rule on each backend, then through the official SDKs."""

from __future__ import annotations

from alibabacloud_mns_open20220119 import models as m
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Message

from gateway.delivery.records import DeliveryJob
from gateway.queues.records import QueueAttributes
from gateway.store.base import Store, compose_store
from gateway.store.control import RateLimitPolicy
from gateway.store.sql.control_sql import grant
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, OpenDatabase, RunningGateway
from tests.gateway.api.control.clients import darabonba
from tests.support.clock import Clock


def test_replicas_share_one_count_per_second(open_database: OpenDatabase) -> None:
    clock = Clock()
    first, second = compose_store(open_database(), clock), compose_store(open_database(), clock)
    first.queues.create_queue("q", QueueAttributes())
    first.control.set_rate_limit("queue", "q", RateLimitPolicy(True, 10))
    grants = [first.control.take_receives("q", 4), second.control.take_receives("q", 4)]
    grants.append(first.control.take_receives("q", 4))
    grants.append(second.control.take_receives("q", 4))
    assert [g[0] for g in grants if g] == [4, 4, 2, 0]
    second.control.give_back_receives("q", 3, int(clock.now))
    assert first.control.take_receives("q", 16) == (3, int(clock.now))
    clock.now += 1  # a new second: a new count
    assert second.control.take_receives("q", 16) == (10, int(clock.now))
    second.control.give_back_receives("q", 5, int(clock.now) - 1)  # too late: ignored
    assert first.control.take_receives("q", 1) == (0, int(clock.now))
    first.control.set_rate_limit("queue", "q", RateLimitPolicy(False, 10))
    assert first.control.take_receives("q", 1) is None
    assert first.control.take_receives("unlimited", 1) is None
    assert first.control.limited_queues() == frozenset()


def test_a_limited_queue_hands_out_at_most_its_rate(
    control_gateway: RunningGateway, unique: str
) -> None:
    darabonba(control_gateway.port).create_queue(
        m.CreateQueueRequest(
            queue_name=unique,
            tenant_rate_limit_policy=m.CreateQueueRequestTenantRateLimitPolicy(
                enabled=True, max_receives_per_second=3
            ),
        )
    )
    queue = Account(control_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue(unique)
    queue.batch_send_message([Message(f"m{i}") for i in range(12)])
    batches, refused = [], 0
    for _ in range(200):  # bounded: a receive past the second's 3 is refused at once
        try:
            batches.append(len(queue.batch_receive_message(16)))
        except MNSServerException as exc:
            assert exc.type == "TooManyRequests"
            refused += 1
            if refused >= 2 and sum(batches) >= 6:
                break
    assert refused >= 1
    assert max(batches) <= 3


def test_the_grant_rule() -> None:
    assert grant(10, 100, 7, 16, 100) == (3, 100)
    assert grant(10, 99, 10, 16, 100) == (10, 100)  # an earlier second no longer counts
    # A caller whose clock read came before another's counts in the later window: it must not
    # restart a window that has moved on.
    assert grant(10, 101, 10, 4, 100) == (0, 101)
    assert grant(10, 100, 12, 4, 100) == (0, 100)  # a limit lowered within the second


def test_a_limited_subscription_gets_at_most_its_rate_of_claims_and_the_rest_waits(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    first, second = compose_store(open_database(), clock), compose_store(open_database(), clock)
    first.topics.create_topic("t", 65536, False)
    for name in ("limited", "free"):
        first.topics.subscribe(Subscription("t", name, "http://127.0.0.1:9/"))
    first.control.set_rate_limit("subscription", "t/limited", RateLimitPolicy(True, 3))
    for index in range(5):
        body = TopicMessage(f"m{index}", "t", "b", "X", int(clock.now * 1000))
        first.topics.publish(body)

    def claimed(store: Store) -> list[DeliveryJob]:
        return store.deliveries.claim("w", 30, 100, frozenset())

    def names(jobs: list[DeliveryJob]) -> list[str]:
        return sorted(job.subscription.name for job in jobs)

    # A claim leases no more of the limited subscription than its second still leaves...
    jobs = claimed(first)
    assert names(jobs) == ["free"] * 5 + ["limited"] * 3
    limited = [job for job in jobs if job.subscription.name == "limited"]
    # ... and took their places in the count shared by the replicas, which they push with.
    assert [first.deliveries.take_push(limited[0]), second.deliveries.take_push(limited[1])] == [
        True,
        True,
    ]
    assert first.deliveries.take_push(limited[2]) is True
    assert claimed(second) == []  # the other two wait for the next second, untried
    clock.now += 1
    later = claimed(second)
    assert names(later) == ["limited", "limited"]
    # Not started before the second after (and the limit lowered meanwhile): each push takes
    # its place again, and the one that finds nothing left waits.
    clock.now += 1
    first.control.set_rate_limit("subscription", "t/limited", RateLimitPolicy(True, 1))
    assert [second.deliveries.take_push(job) for job in later] == [True, False]
    assert claimed(first) == []
    clock.now += 1
    assert names(claimed(first)) == ["limited"]
    assert claimed(first) == []  # each delivery claimed until pushed: none dropped
