"""Queue and queue-message operations (being written: issue 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class QueueStore:
    """Queue operations over a :class:`gateway.store.base.Database`."""

    def __init__(self, database: Any, clock: Callable[[], float]) -> None:
        self.database = database
        self.clock = clock
