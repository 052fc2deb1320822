"""The threads that make pushes: up to the worker's count, each taking the next claimed delivery
from one queue.

The worker never waits for a push's result (each settles itself through the settler), so
:class:`concurrent.futures.ThreadPoolExecutor`'s future, condition and locks per task are work
for nothing on the hot path; a queue of deliveries read by long-lived threads (greenlets under
gevent) is all that is needed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
_STOP = object()


class PushThreads(Generic[T]):
    """At most ``count`` daemon threads calling ``work(item)`` for each submitted item, in order
    of submission; one is started with each item until there are ``count``. ``work`` should not
    raise: what it does raise is logged, and the thread goes on."""

    def __init__(self, count: int, work: Callable[[T], None], name: str = "mns-push") -> None:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        self._count = count
        self._work = work
        self._name = name
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = False

    def submit(self, item: T) -> None:
        if len(self._threads) < self._count:
            self._grow()
        self._queue.put(item)

    def shutdown(self) -> None:
        """Drop what was submitted and not begun, and let every thread end once its current
        item is done; does not wait for them."""
        with self._lock:
            self._stopped = True
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        for _ in self._threads:
            self._queue.put(_STOP)

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds in all for the threads to end after :meth:`shutdown`;
        whether they all did."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def _grow(self) -> None:
        """One more thread per item submitted until there are ``count``: a worker that pushes
        little (a test's, a quiet gateway's) holds few threads."""
        with self._lock:
            if len(self._threads) >= self._count or self._stopped:
                return
            thread = threading.Thread(
                target=self._run, name=f"{self._name}_{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
        thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            try:
                self._work(item)  # type: ignore[arg-type]
            except Exception:
                log.exception("a push thread's work failed")
