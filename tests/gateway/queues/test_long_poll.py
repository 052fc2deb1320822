"""Long polling through QueueStore: woken by sends in this and in another "process", by due
times, limited in number, released by DeleteQueue. Real clock; every wait is bounded."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from gateway.errors.mns import MNSError
from gateway.queues.records import NewMessage, QueueAttributes, QueueMessage
from gateway.store.base import compose_store
from gateway.store.queues import QueueStore
from tests.conftest import OpenDatabase

#: Longer than any wait below: a receive that returns a message early was woken, not re-checked.
NO_RECHECK = 60.0


def open_store(open_database: OpenDatabase, **options: object) -> QueueStore:
    return compose_store(open_database(), time.time, **options).queues  # type: ignore[arg-type]


@pytest.fixture()
def store(open_database: OpenDatabase) -> QueueStore:
    s = open_store(open_database, recheck_seconds=NO_RECHECK)
    s.create_queue("q", QueueAttributes(visibility_timeout=1))
    return s


class Receiver(threading.Thread):
    """A long-polling receive in the background; ``result`` once it returns."""

    def __init__(self, store: QueueStore, wait: int, queue: str = "q") -> None:
        super().__init__(daemon=True)
        self.store, self.wait, self.queue = store, wait, queue
        self.result: list[QueueMessage] | MNSError | None = None

    def run(self) -> None:
        try:
            self.result = self.store.receive(self.queue, 1, self.wait).messages
        except MNSError as error:
            self.result = error

    def bodies(self) -> list[str]:
        self.join(timeout=30)
        assert isinstance(self.result, list), self.result
        return [m.body for m in self.result]


def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached in 10 s")


def asleep(store: QueueStore, receiver: Receiver, count: int = 1) -> Receiver:
    receiver.start()
    until(lambda: store.waiters.waiting == count)
    return receiver


def test_a_send_wakes_a_sleeping_receiver(store: QueueStore) -> None:
    receiver = asleep(store, Receiver(store, 30))
    store.send("q", [NewMessage("hello")])
    assert receiver.bodies() == ["hello"]


def test_a_send_through_another_process_wakes_it(
    open_database: OpenDatabase, store: QueueStore
) -> None:
    """Two stores on one database: two worker processes (or replicas), as far as either knows."""
    other = open_store(open_database)
    receiver = asleep(store, Receiver(store, 30))
    other.send("q", [NewMessage("from the other worker")])
    assert receiver.bodies() == ["from the other worker"]


def test_a_delay_ending_satisfies_a_waiter(store: QueueStore) -> None:
    receiver = asleep(store, Receiver(store, 20))
    store.send("q", [NewMessage("soon", delay_seconds=1)])
    assert receiver.bodies() == ["soon"]


def test_a_lapsed_visibility_timeout_satisfies_a_waiter(store: QueueStore) -> None:
    store.send("q", [NewMessage("retry me")])
    assert [m.body for m in store.receive("q", 1, 0).messages] == ["retry me"]  # hidden for 1 s
    receiver = Receiver(store, 20)
    receiver.start()
    assert receiver.bodies() == ["retry me"]


def test_waiters_over_the_limit_get_nothing_at_once(open_database: OpenDatabase) -> None:
    store = open_store(open_database, max_waiters=1, recheck_seconds=NO_RECHECK)
    store.create_queue("q", QueueAttributes())
    first = asleep(store, Receiver(store, 30))
    assert store.receive("q", 1, 30).messages == []  # would sleep 30 s if admitted
    store.send("q", [NewMessage("for the first")])
    assert first.bodies() == ["for the first"]


def test_polling_wait_seconds_is_the_default_wait(store: QueueStore) -> None:
    store.set_queue_attributes("q", {"polling_wait_seconds": 30})
    receiver = asleep(store, Receiver(store, None))  # type: ignore[arg-type]
    store.send("q", [NewMessage("x")])
    assert receiver.bodies() == ["x"]


def test_deleting_the_queue_ends_the_wait(store: QueueStore) -> None:
    receiver = asleep(store, Receiver(store, 30))
    store.delete_queue("q")
    receiver.join(timeout=30)
    assert isinstance(receiver.result, MNSError)
    assert receiver.result.code == "QueueNotExist"
