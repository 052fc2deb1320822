"""The dispatcher through a database outage: it backs off instead of dying, stays alive for the
liveness probe, and pushes what was published as soon as the database answers again."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from gateway.delivery.polling import MAX_FAILURE_BACKOFF, failure_backoff
from gateway.errors import StoreUnavailableError
from gateway.store.backends.memory import MemoryDatabase
from gateway.store.base import Store, compose_store
from gateway.store.sql.connection import Connection

from .test_worker import ScriptedSender, make_worker, publish

T = TypeVar("T")


class SwitchableDatabase(MemoryDatabase):
    """The in-memory database, unavailable while :attr:`down` is set, as a restarting server
    is: every read and write fails with the store's error."""

    def __init__(self) -> None:
        self.down = threading.Event()
        self.refused = 0
        super().__init__()

    def _check(self) -> None:
        if self.down.is_set():
            self.refused += 1
            self.outage.failed("switched off")
            raise StoreUnavailableError("switched off")
        self.outage.succeeded()

    def read(self, work: Callable[[Connection], T]) -> T:
        self._check()
        return super().read(work)

    def write(self, work: Callable[[Connection], T], *, durable: bool = True) -> T:
        self._check()
        return super().write(work, durable=durable)


@pytest.fixture()
def database() -> SwitchableDatabase:
    return SwitchableDatabase()


@pytest.fixture()
def store(database: SwitchableDatabase) -> Iterator[Store]:
    s = compose_store(database)
    yield s
    s.close()


def test_the_dispatcher_outlives_an_outage_and_pushes_afterwards(
    store: Store, database: SwitchableDatabase
) -> None:
    sender = ScriptedSender()
    worker = make_worker(store, sender, idle_wait=0.01)
    worker.start()
    try:
        database.down.set()
        refused = database.refused
        # Its idle wait asks the database too (the question that used to end the thread).
        for _ in range(500):
            if database.refused >= refused + 4:
                break
            worker.wake()
            threading.Event().wait(0.01)
        assert database.refused >= refused + 4
        assert worker.running()
        database.down.clear()
        (message_id,) = publish(store)
        worker.wake()
        assert sender.progress.wait(10), "nothing was pushed after the outage"
        assert [job.message.id for job in sender.jobs] == [message_id]
    finally:
        worker.stop(5)


def test_failures_in_a_row_back_off_to_a_bound() -> None:
    waits = [failure_backoff(n, 0.25) for n in range(1, 8)]
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0]
    assert failure_backoff(100, 0.25) == MAX_FAILURE_BACKOFF
