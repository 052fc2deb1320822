"""A queue's TenantRateLimitPolicy, enforced on receives: at most MaxReceivesPerSecond messages
handed out in each second, across every replica (docs/control-plane.md#tenantratelimitpolicy).

A receive first takes a grant from the queue's count for the current second (one atomic UPDATE
in the database, :func:`gateway.store.sql.control_sql.take_allowance`), receives at most that
many, and gives back what it did not use while the second lasts. Which queues have a limit is
read at most once a second per process, so receives from queues without one cost nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from gateway.store.control import ControlStore

REFRESH_SECONDS: Final = 1.0


@dataclass(frozen=True, slots=True)
class Grant:
    queue_name: str
    count: int
    second: int


class ReceiveLimits:
    def __init__(
        self, control: ControlStore, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._control = control
        self._monotonic = monotonic
        self._limited: frozenset[str] | None = None
        self._read_at = 0.0

    def _is_limited(self, queue_name: str) -> bool:
        now = self._monotonic()
        if self._limited is None or now - self._read_at >= REFRESH_SECONDS:
            self._limited, self._read_at = self._control.limited_queues(), now
        return queue_name in self._limited

    def take(self, queue_name: str, wanted: int) -> Grant | None:
        """How many of ``wanted`` messages this receive may take; ``None``: no limit."""
        if not self._is_limited(queue_name):
            return None
        taken = self._control.take_receives(queue_name, wanted)
        return None if taken is None else Grant(queue_name, *taken)

    def settle(self, grant: Grant | None, received: int) -> None:
        """Give back what the receive did not use of ``grant``."""
        if grant is not None and received < grant.count:
            self._control.give_back_receives(grant.queue_name, grant.count - received, grant.second)
