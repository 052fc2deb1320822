"""The settler records outcomes off the push path, many in one transaction."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from gateway.delivery.records import Attempt, Settlement
from gateway.pushing.settler import Settler
from gateway.store.base import Store
from gateway.topics.records import Subscription, TopicMessage


@pytest.fixture()
def store(memory_store: Store) -> Store:
    return memory_store


def claimed(store: Store, count: int) -> list[Settlement]:
    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "s", "http://a.test/"))
    for n in range(count):
        store.topics.publish(TopicMessage(f"M{n}", "t", "body", "X", store.now_ms()))
    jobs = store.deliveries.claim("me", 60, count, frozenset())
    succeeded = Attempt(1, store.now_ms(), "success", 204, None, 1.0)
    return [Settlement(job, succeeded) for job in jobs]


class Batches:
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.settled = threading.Event()

    def __call__(self, batch: list[Settlement], letters: list[str | None]) -> None:
        self.sizes.append(len(batch))
        self.settled.set()


def settling(store: Store, count: int, **options: Any) -> tuple[Settler, Batches]:
    """A settler (with ``options``) given the outcomes of ``count`` claimed deliveries, and
    the batches it commits."""
    settlements = claimed(store, count)
    batches = Batches()
    settler = Settler(store.deliveries, "me", batches, **options)
    for settlement in settlements:
        settler.submit(settlement)
    return settler, batches


def test_outcomes_arriving_within_the_linger_share_one_transaction(store: Store) -> None:
    settler, batches = settling(store, 20, linger=5.0, max_batch=20)
    assert batches.settled.wait(10)
    settler.stop()
    assert batches.sizes == [20]  # max_batch reached: no need to wait out the linger
    assert store.deliveries.due_count() == 0


def test_stopping_records_what_is_pending(store: Store) -> None:
    settler, batches = settling(store, 3, linger=30.0)
    settler.stop()
    assert batches.sizes == [3]
    assert store.deliveries.due_count() == 0


def test_with_no_push_in_flight_a_batch_does_not_wait_out_the_linger(store: Store) -> None:
    settler, batches = settling(store, 3, linger=30.0, more_coming=lambda: False)
    # Within seconds, where lingering would take thirty: each outcome's batch is what had
    # arrived by then, committed at once.
    deadline = time.monotonic() + 10
    while sum(batches.sizes) < 3 and time.monotonic() < deadline:
        batches.settled.wait(0.05)
    assert sum(batches.sizes) == 3
    assert store.deliveries.due_count() == 0
    settler.stop()
