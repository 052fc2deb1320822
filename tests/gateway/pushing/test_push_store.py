"""The push store seam (gateway/pushing/push_store.py): the worker runs over the stub store
(tests/support/push_store.py) without any database, and the delivery store answers the same
Protocol."""

from __future__ import annotations

import logging
import random
import threading

import pytest

from gateway.delivery.records import DeliveryJob, Filed, PushOutcome
from gateway.observability.metrics import GatewayMetrics
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


class Expiring(StubPushStore):
    """A stub whose first expiry pass files one delivery in a dead-letter queue."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.expiry_passes = 0
        self.retention_asked = threading.Event()

    def expire(self, limit: int = 500) -> list[Filed]:
        self.expiry_passes += 1
        return [Filed("letter-1", "dlq", "dlq-message-1")] if self.expiry_passes == 1 else []

    def retain_if_due(self) -> int | None:
        self.retention_asked.set()
        return None


def test_the_dispatcher_runs_its_rounds_over_the_stub_store(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """Everything a round asks of the store is in the seam: the expiry and retention passes
    too, and what the expiry filed reaches the hooks (here, the standard metrics)."""
    store = Expiring(clock)
    metrics = GatewayMetrics()
    worker = DeliveryWorker(store, SenderRegistry(ScriptedSender()), metrics=metrics)
    worker.start()
    try:
        assert store.retention_asked.wait(10)
    finally:
        worker.stop(timeout=5)  # joins the dispatcher: its round's hooks have run
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    counted = metrics.registry.get_sample_value
    assert counted("mns_dead_letters_total", {"reason": "expired"}) == 1
    labels = {"source": "subscription", "dead_letter_queue": "dlq"}
    assert counted("mns_dead_letter_queue_messages_total", labels) == 1
