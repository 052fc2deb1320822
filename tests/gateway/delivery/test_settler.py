"""The settler records outcomes off the push path, many in one transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.delivery.settler import Settler
from gateway.model import Attempt, Settlement, Subscription, TopicMessage
from gateway.store.base import Store
from gateway.store.sqlite import SQLiteDatabase


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(SQLiteDatabase(tmp_path / "db.sqlite3", synchronous="NORMAL"))
    yield s
    s.close()


def claimed(store: Store, count: int) -> list[Settlement]:
    store.create_topic("t", 65536, False)
    store.subscribe(Subscription("t", "s", "http://a.test/"))
    for n in range(count):
        store.publish(TopicMessage(f"M{n}", "t", "body", "X", store.now_ms()))
    jobs = store.claim_deliveries("me", 60, count, frozenset())
    succeeded = Attempt(1, store.now_ms(), "success", 204, None, 1.0)
    return [Settlement(job, succeeded) for job in jobs]


class Batches:
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.settled = threading.Event()

    def __call__(self, batch: list[Settlement], letters: list[str | None]) -> None:
        self.sizes.append(len(batch))
        self.settled.set()


def test_outcomes_arriving_within_the_linger_share_one_transaction(store: Store) -> None:
    settlements = claimed(store, 20)
    batches = Batches()
    settler = Settler(store, "me", batches, linger=5.0, max_batch=20)
    for settlement in settlements:
        settler.submit(settlement)
    assert batches.settled.wait(10)
    settler.stop()
    assert batches.sizes == [20]  # max_batch reached: no need to wait out the linger
    assert store.due_count() == 0


def test_stopping_records_what_is_pending(store: Store) -> None:
    settlements = claimed(store, 3)
    batches = Batches()
    settler = Settler(store, "me", batches, linger=30.0)
    for settlement in settlements:
        settler.submit(settlement)
    settler.stop()
    assert batches.sizes == [3]
    assert store.due_count() == 0
