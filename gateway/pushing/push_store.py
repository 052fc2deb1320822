"""The push store seam: what the delivery pipeline needs from storage, and nothing else
(docs/delivery.md#the-push-store).

The worker (:mod:`gateway.pushing.worker`) and its settler depend on :class:`PushStore`, not
on a database: :class:`~gateway.store.deliveries.DeliveryStore` carries it on SQLite and
PostgreSQL (and on the memory stub database), and ``tests/support/push_store.py`` is a stub of a
few dozen lines that drives the worker without any store. Another engine (a log, a queue
service) could carry deliveries by answering these calls, without touching the pipeline.

- **claim**: lease up to ``limit`` due deliveries, none on the routes ``skip_routes``, for
  ``lease_seconds``; the store applies the breakers' admission and any hold of an open
  breaker's backlog inside the claim (:mod:`gateway.breaker`), and subscriptions' rate limits;
- **lease**: :meth:`PushStore.take_push`, whether a claimed delivery may be pushed now (a rate
  limit's grant that lapsed takes its place again, or the delivery waits);
- **settle**: record many attempts' outcomes at once, durably, before they count (done, retried
  later, dead-lettered: what was filed);
- **release**: hand claimed deliveries back untried, due as they were;
- **hold** is the store's own: what an open breaker holds never reaches a claim.

Beside those, the pipeline asks when the next delivery falls due (its idle wait), runs the
minutely expiry and the delivered history's retention pass when one is due, reads the store's
clock, and listens for breaker transitions and wake-ups.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from gateway.breaker.state import BreakerPolicy, Transition
from gateway.delivery.records import DeliveryJob, Filed, Settlement

TransitionListener = Callable[[list[Transition]], None]


class DeliveryWakeups(Protocol):
    """Who tells the worker that deliveries were published or replayed, in any process."""

    def on_deliveries(self, callback: Callable[[], None]) -> None: ...

    def remove_delivery_callback(self, callback: Callable[[], None]) -> None: ...


@runtime_checkable
class PushStore(Protocol):
    """Storage of deliveries, as the push pipeline uses it."""

    #: The breakers' policy: with ``enabled`` false the worker pauses no route.
    breaker: BreakerPolicy
    wakeups: DeliveryWakeups
    #: Seconds since the epoch: the store's time, which the schedules run on.
    clock: Callable[[], float]

    def now_ms(self) -> int: ...

    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]: ...

    def take_push(self, job: DeliveryJob) -> bool: ...

    def settle(self, owner: str, settlements: Sequence[Settlement]) -> list[Filed | None]: ...

    def release(self, owner: str, delivery_ids: list[str]) -> None: ...

    def next_due_ms(self) -> int | None: ...

    def expire(self, limit: int = 500) -> list[Filed]: ...

    #: The history retention pass if one is due (the dispatcher asks every round): how many
    #: rows it deleted, ``None`` when none was due. A store that keeps no history returns None.
    def retain_if_due(self) -> int | None: ...

    def on_breaker_transitions(self, callback: TransitionListener) -> None: ...

    def remove_breaker_listener(self, callback: TransitionListener) -> None: ...
