"""Which pushes a subscription's TenantRateLimitPolicy lets go now, for the delivery worker.

Which subscriptions have a limit is read at most once a second per process, so pushes of the
others cost nothing more; a push of a limited one takes its place in the second's count first
(:meth:`~gateway.store.deliveries.DeliveryStore.take_push`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from gateway.store.sql.push_limit_sql import resource_of

if TYPE_CHECKING:
    from gateway.delivery.records import DeliveryJob
    from gateway.store.deliveries import DeliveryStore

REFRESH_SECONDS: Final = 1.0


class PushLimits:
    def __init__(
        self, deliveries: DeliveryStore, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._deliveries = deliveries
        self._monotonic = monotonic
        self._limited: frozenset[str] | None = None
        self._read_at = 0.0

    def allows(self, job: DeliveryJob) -> bool:
        """Whether ``job`` may be pushed now; if not, it has been put back for the next second."""
        now = self._monotonic()
        if self._limited is None or now - self._read_at >= REFRESH_SECONDS:
            self._limited, self._read_at = self._deliveries.limited_subscriptions(), now
        if resource_of(job) not in self._limited:
            return True
        return self._deliveries.take_push(job)
