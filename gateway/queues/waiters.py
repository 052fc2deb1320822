"""Long polling: receivers that found their queue empty sleep until a sender wakes them.

Each process keeps a :class:`WaiterHub`: per queue a ``threading.Condition`` and a generation
counter that every wake-up bumps. A receiver registers, *then* reads the generation, *then* looks
at the queue, and sleeps only if the generation is still the one it read; a message committed
after its look therefore always either changes the generation before it sleeps or wakes it. No
wake-up is lost and nothing polls the database in a loop.

Wake-ups come from senders in this process (:meth:`WaiterHub.notify` after the commit) and, via
:mod:`gateway.store.notify.notifier`, from other processes sharing the database. Messages
that become Active by the clock (a delay ending, a visibility timeout lapsing) send no wake-up:
the receiver sleeps at most until the earliest such time it saw, and never longer than
``recheck_seconds``, so a lost datagram or a write from another host costs latency, never a
stuck receiver.

A sleeping receiver holds what its request is served with: a greenlet and a connection with
the default gevent worker class, a server thread with gthread. So the hub admits at most
``max_waiters`` of them; the rest get MessageNotExist at once, as the real service answers when
its long-poll limit is reached, and the connections or threads stay free for senders. The
gateway sizes the limit from its worker class
(:attr:`gateway.config.settings.Settings.waiter_limit`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final, TypeVar

T = TypeVar("T")

#: For hubs built without settings (tests, embedding): 16 short of gthread's default 64 threads.
DEFAULT_MAX_WAITERS: Final = 48
#: The longest a long poll sleeps without looking at the queue again.
DEFAULT_RECHECK_SECONDS: Final = 1.0
_MIN_SLEEP_SECONDS: Final = 0.001


@dataclass(eq=False)
class _QueueWaiters:
    condition: threading.Condition = field(default_factory=threading.Condition)
    generation: int = 0
    count: int = 0


class Waiter:
    """One registered receiver's view of its queue's wake-ups."""

    def __init__(self, state: _QueueWaiters) -> None:
        self._state = state

    def generation(self) -> int:
        with self._state.condition:
            return self._state.generation

    def sleep(self, seen_generation: int, timeout: float) -> bool:
        """Sleep up to ``timeout`` s unless the generation moved on; True if it has."""
        state = self._state
        with state.condition:
            if state.generation == seen_generation:
                state.condition.wait(timeout)
            return state.generation != seen_generation


class WaiterHub:
    """This process's long-polling receivers, by queue name."""

    def __init__(self, max_waiters: int = DEFAULT_MAX_WAITERS) -> None:
        self.max_waiters = max_waiters
        self._lock = threading.Lock()
        self._queues: dict[str, _QueueWaiters] = {}
        self._total = 0

    @property
    def waiting(self) -> int:
        return self._total

    @contextmanager
    def register(self, queue_name: str) -> Iterator[Waiter | None]:
        """A :class:`Waiter` for ``queue_name``, or ``None`` when the hub is full."""
        with self._lock:
            if self._total >= self.max_waiters:
                state = None
            else:
                state = self._queues.setdefault(queue_name, _QueueWaiters())
                state.count += 1
                self._total += 1
        if state is None:
            yield None
            return
        try:
            yield Waiter(state)
        finally:
            with self._lock:
                state.count -= 1
                self._total -= 1
                if state.count == 0 and self._queues.get(queue_name) is state:
                    del self._queues[queue_name]

    def notify(self, queue_name: str, count: int | None = None) -> None:
        """Wake ``count`` receivers of ``queue_name`` (all when ``None``) to look again."""
        with self._lock:
            state = self._queues.get(queue_name)
        if state is None:
            return
        with state.condition:
            state.generation += 1
            if count is None:
                state.condition.notify_all()
            else:
                state.condition.notify(count)


#: One look at the queue: a non-empty result ends the poll; otherwise the seconds until the
#: earliest Delayed or Inactive message becomes Active (``None`` when there is none).
Attempt = Callable[[], tuple[T | None, float | None]]


def long_poll(
    waiter: Waiter,
    attempt: Attempt[T],
    *,
    deadline: float,
    monotonic: Callable[[], float],
    recheck_seconds: float = DEFAULT_RECHECK_SECONDS,
    wanted: Callable[[], bool] = lambda: True,
) -> T | None:
    """Repeat ``attempt`` whenever woken or due until it yields a result or ``deadline`` passes.

    ``wanted()`` is asked before every attempt: once it is False (the client went away), the
    poll ends without attempting, so it never takes what nobody will receive.
    """
    while True:
        generation = waiter.generation()
        if not wanted():
            return None
        result, due_in = attempt()
        if result:
            return result
        remaining = deadline - monotonic()
        if remaining <= 0:
            return None
        timeout = min(remaining, recheck_seconds, math.inf if due_in is None else due_in)
        waiter.sleep(generation, max(timeout, _MIN_SLEEP_SECONDS))
