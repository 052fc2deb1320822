"""The store on the stub database and a delivery worker driven by hand, in the spirit of
dramatiq's ``stub_broker`` and ``stub_worker``: no file, no server, no thread left running,
and time that moves only when the test moves the clock.

``memory_store`` is a whole :class:`~gateway.store.base.Store` over ``MemoryDatabase`` on the
test's ``clock``; :func:`stub_worker` is a :class:`~gateway.pushing.worker.DeliveryWorker` on
it with a sender the test scripts (:class:`ScriptedSender`), and :func:`run_until_idle`
dispatches, waits for the pool and jumps the clock to the next attempt until nothing is due.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import cast

import pytest

from gateway.delivery.records import DeliveryJob
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.backends.memory import MemoryDatabase
from gateway.store.base import Store, compose_store
from tests.support.clock import Clock


@pytest.fixture()
def memory_store(clock: Clock) -> Iterator[Store]:
    """A store over a fresh ``MemoryDatabase``, on the test's clock."""
    store = compose_store(MemoryDatabase(), clock=clock)
    yield store
    store.close()


def routed_job(delivery_id: str, route: str) -> DeliveryJob:
    """A stand-in for a claimed delivery holding only what the worker's route bookkeeping reads
    (its id and route): the pure dispatch buffer and failing-route rules read nothing else."""
    return cast(DeliveryJob, SimpleNamespace(delivery_id=delivery_id, route=route))


def ok() -> PushResult:
    return PushResult(204, PushOutcome.SUCCESS, None, 1.0)


def failed(status: int = 500) -> PushResult:
    return PushResult(status, PushOutcome.HTTP_ERROR, f"HTTP {status}", 1.0)


class ScriptedSender:
    """Answers with the scripted results in turn, then with ``then``; records every job."""

    def __init__(self, *script: PushResult, then: PushResult | None = None) -> None:
        self.script = list(script)
        self.then = then or ok()
        self.jobs: list[DeliveryJob] = []
        self.gate: threading.Event | None = None
        self.progress = threading.Event()

    def send(self, job: DeliveryJob) -> PushResult:
        self.jobs.append(job)
        self.progress.set()
        if self.gate is not None:
            self.gate.wait(10)
        return self.script.pop(0) if self.script else self.then


def stub_worker(store: Store, sender: object, **options: object) -> DeliveryWorker:
    """A delivery worker on ``store`` pushing through ``sender``, never started: the test
    calls ``dispatch_once`` (or :func:`run_until_idle`)."""
    opts = WorkerOptions(**{"threads": 4, "max_per_route": 2, "lease_seconds": 30, **options})
    return DeliveryWorker(store.deliveries, SenderRegistry(sender), opts, rng=random.Random(7))  # type: ignore[arg-type]


def run_until_idle(worker: DeliveryWorker, clock: Clock, store: Store, limit: int = 400) -> int:
    """Dispatch, wait for the pool, jump the clock to the next due attempt; count dispatches."""
    dispatched = 0
    for _ in range(limit):
        started = worker.dispatch_once()
        worker.drain()
        dispatched += started
        next_due = store.deliveries.next_due_ms()
        if next_due is None:
            return dispatched
        clock.now = max(clock.now, next_due / 1000)
    raise AssertionError("deliveries never settled")
