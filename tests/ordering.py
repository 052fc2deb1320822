"""A checker for ordered queues' two promises, shared by the store and the replica tests: each
group's messages arrive in send order, and no group has two messages in flight at once."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

M = TypeVar("M")


class GroupOrder(Generic[M]):
    """Consumers report what they receive (bodies ``"{group}:{seq}"``) and release each message
    before deleting it: released before the delete, a group can only look busy for too short a
    time, never too long, so a violation found is real."""

    def __init__(self, body: Callable[[M], str]) -> None:
        self.body = body
        self.received: dict[str, list[int]] = defaultdict(list)
        self.violations: list[str] = []
        self._in_flight: set[str] = set()
        self._lock = threading.Lock()

    def took(self, messages: Iterable[M]) -> None:
        for message in messages:
            group, seq = self.body(message).split(":")
            with self._lock:
                if group in self._in_flight:
                    self.violations.append(self.body(message))
                self._in_flight.add(group)
                self.received[group].append(int(seq))

    def release(self, message: M) -> None:
        with self._lock:
            self._in_flight.discard(self.body(message).split(":")[0])

    def consume(
        self,
        receive: Callable[[], Sequence[M]],
        delete: Callable[[M], object],
        *,
        idle_rounds: int = 20,
    ) -> None:
        """Receive, check and delete until ``idle_rounds`` receives in a row find nothing."""
        idle = 0
        while idle < idle_rounds:
            batch = receive()
            idle = 0 if batch else idle + 1
            self.took(batch)
            for message in batch:
                self.release(message)
                delete(message)

    def run(self, consumers: Sequence[Callable[[], None]], timeout: float = 120) -> None:
        threads = [threading.Thread(target=consumer) for consumer in consumers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=timeout)

    def in_order(self, groups: int, per_group: int) -> bool:
        expected = {str(g): list(range(per_group)) for g in range(groups)}
        return not self.violations and dict(self.received) == expected
