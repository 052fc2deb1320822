"""A stub of the push store seam (:class:`gateway.pushing.push_store.PushStore`): deliveries in
a dict, time from the test's clock, nothing durable. It shows what another engine would have to
answer to carry deliveries, and drives the worker without a store (tests/gateway/pushing/
test_push_store.py). No breaker, no rate limit, no dead-letter queue: those are the real
store's; a stub that leaves them out still runs the pipeline."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from gateway.breaker.state import BreakerPolicy, Transition
from gateway.delivery.records import DeliveryJob, Filed, Settlement


class StubWakeups:
    def __init__(self) -> None:
        self.callbacks: list[Callable[[], None]] = []

    def on_deliveries(self, callback: Callable[[], None]) -> None:
        self.callbacks.append(callback)

    def remove_delivery_callback(self, callback: Callable[[], None]) -> None:
        if callback in self.callbacks:
            self.callbacks.remove(callback)


class StubPushStore:
    """Due deliveries by id, with when each falls due and who leases it."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.breaker = BreakerPolicy(enabled=False)
        self.wakeups = StubWakeups()
        self.due: dict[str, tuple[int, DeliveryJob]] = {}
        self.leased: dict[str, str] = {}
        self.settled: list[Settlement] = []
        self.dead: list[Settlement] = []
        self.released: list[str] = []

    def add(self, job: DeliveryJob, due_ms: int | None = None) -> None:
        self.due[job.delivery_id] = (self.now_ms() if due_ms is None else due_ms, job)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        now = self.now_ms()
        free = sorted(
            (due, job.delivery_id, job)
            for due, job in self.due.values()
            if due <= now and job.delivery_id not in self.leased and job.route not in skip_routes
        )
        jobs = [job for _, _, job in free[:limit]]
        self.leased.update((job.delivery_id, owner) for job in jobs)
        return jobs

    def take_push(self, job: DeliveryJob) -> bool:
        return True

    def settle(self, owner: str, settlements: Sequence[Settlement]) -> list[Filed | None]:
        filed: list[Filed | None] = []
        for s in settlements:
            job = s.job
            del self.leased[job.delivery_id]
            self.settled.append(s)
            if s.retry_at_ms is not None and s.dead_reason is None:
                retried = dataclasses.replace(job, attempts=job.attempts + 1)
                self.due[job.delivery_id] = (s.retry_at_ms, retried)
                filed.append(None)
                continue
            del self.due[job.delivery_id]
            if s.dead_reason is not None:
                self.dead.append(s)
            filed.append(Filed(f"letter-{job.delivery_id}") if s.dead_reason else None)
        return filed

    def release(self, owner: str, delivery_ids: list[str]) -> None:
        for delivery_id in delivery_ids:
            self.leased.pop(delivery_id, None)
        self.released += delivery_ids

    def next_due_ms(self) -> int | None:
        waiting = [due for due, job in self.due.values() if job.delivery_id not in self.leased]
        return min(waiting, default=None)

    def expire(self, limit: int = 500) -> list[Filed]:
        return []

    def retain_if_due(self) -> int | None:
        return None

    def on_breaker_transitions(self, callback: Callable[[list[Transition]], None]) -> None:
        return None

    def remove_breaker_listener(self, callback: Callable[[list[Transition]], None]) -> None:
        return None
