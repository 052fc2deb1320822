"""The push store seam (gateway/pushing/push_store.py): the worker runs over the stub store
(tests/support/push_store.py) without any database, and the delivery store answers the same
Protocol."""

from __future__ import annotations

import random

from gateway.delivery.records import DeliveryJob, PushOutcome
from gateway.pushing.push_store import PushStore
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.base import Store
from gateway.topics.records import Subscription, TopicMessage
from tests.support.clock import Clock
from tests.support.push_store import StubPushStore
from tests.support.stub import ScriptedSender, failed


def job(delivery_id: str, route: str = "http://127.0.0.1:9/") -> DeliveryJob:
    message = TopicMessage("m-" + delivery_id, "orders", "body", "MD5", 0)
    return DeliveryJob(delivery_id, 0, message, Subscription("orders", "s", route), route)


def worker_over(store: PushStore, sender: ScriptedSender) -> DeliveryWorker:
    options = WorkerOptions(threads=4, max_per_route=4, lease_seconds=30)
    return DeliveryWorker(store, SenderRegistry(sender), options, rng=random.Random(7))


def test_the_delivery_store_and_the_stub_answer_the_seam(memory_store: Store, clock: Clock) -> None:
    assert isinstance(memory_store.deliveries, PushStore)
    assert isinstance(StubPushStore(clock), PushStore)


def test_the_worker_pushes_and_settles_over_the_stub_store(clock: Clock) -> None:
    store = StubPushStore(clock)
    for n in range(3):
        store.add(job(f"d{n}"))
    sender = ScriptedSender()
    worker = worker_over(store, sender)
    try:
        assert worker.dispatch_once() == 3
        worker.drain()
    finally:
        worker.stop(timeout=1)
    assert sorted(j.delivery_id for j in sender.jobs) == ["d0", "d1", "d2"]
    assert [s.attempt.outcome for s in store.settled if s.attempt] == [PushOutcome.SUCCESS] * 3
    assert store.due == {} and store.leased == {}


def test_a_failed_push_is_due_again_on_its_schedule_in_the_stub_store(clock: Clock) -> None:
    store = StubPushStore(clock)
    store.add(job("d0"))
    worker = worker_over(store, ScriptedSender(failed(503)))
    try:
        worker.dispatch_once()
        worker.drain()
    finally:
        worker.stop(timeout=1)
    (settlement,) = store.settled
    assert settlement.attempt is not None
    assert settlement.attempt.outcome is PushOutcome.HTTP_ERROR
    assert settlement.retry_at_ms is not None and settlement.retry_at_ms > store.now_ms()
    assert store.due["d0"][0] == settlement.retry_at_ms
    assert store.due["d0"][1].attempts == 1
