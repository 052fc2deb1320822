"""Wake-ups between the processes (and hosts) sharing one database, behind one interface.

Two things wait for work another process may commit: long-polling receivers of a queue, and
delivery workers. After a commit that made something ready, the committing process wakes its
own waiters directly and tells the others through the database's :class:`Notifier`:

- SQLite (one host): unix datagram sockets in the data dir,
  :mod:`gateway.store.notify.socket_notifier`.
- PostgreSQL (any number of hosts): LISTEN/NOTIFY, :mod:`gateway.store.notify.pg_notifier`.
- A database only one process uses (:class:`~gateway.store.backends.memory.MemoryDatabase`):
  :class:`LocalNotifier`, which carries nothing.

A notifier never blocks and never raises on sending: a lost wake-up costs latency, never work,
because receivers re-check the queue every second at most and delivery workers poll (every
``idle_wait``, up to ``quiet_wait`` while nothing is due).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, Protocol

from gateway.queues.waiters import WaiterHub

#: Wake-ups on the wire (a datagram, a NOTIFY payload): ``q <queue> <count>`` (``*`` for an
#: unknown count) or ``d`` (deliveries are due).
DELIVERIES: Final = "d"


def encode_queue_wakeup(queue_name: str, count: int | None) -> str:
    return f"q {queue_name} {'*' if count is None else count}"


def decode_queue_wakeup(text: str | bytes) -> tuple[str, int | None] | None:
    """The queue wake-up in ``text``, or ``None`` for anything else (never trusted)."""
    try:
        decoded = text.decode("ascii") if isinstance(text, bytes) else text
    except UnicodeDecodeError:
        return None
    kind, _, rest = decoded.partition(" ")
    name, _, count = rest.partition(" ")
    if kind != "q" or not name or not (count == "*" or count.isdigit()):
        return None
    return name, None if count == "*" else int(count)


def dispatch(listener: WakeListener, wakeup: str | bytes) -> None:
    """Hand one wire wake-up to ``listener``; malformed ones are dropped."""
    if wakeup in (DELIVERIES, DELIVERIES.encode()):
        listener.deliveries_due()
    elif (queue := decode_queue_wakeup(wakeup)) is not None:
        listener.queue_ready(*queue)


class WakeListener(Protocol):
    """What a process does with a wake-up from another process."""

    def queue_ready(self, queue_name: str, count: int | None) -> None:
        """Up to ``count`` messages (``None``: an unknown number) became receivable."""

    def deliveries_due(self) -> None:
        """Deliveries were published or replayed and are due now."""


class Notifier(Protocol):
    def listen(self, listener: WakeListener) -> None:
        """Start handing other processes' wake-ups to ``listener`` (once per process; later
        calls, and calls from a forked child's inherited copy, are cheap and idempotent)."""

    def queue_ready(self, queue_name: str, count: int | None) -> None:
        """Tell the other processes; never blocks, never raises."""

    def deliveries_due(self) -> None:
        """Tell the other processes; never blocks, never raises."""

    def close(self) -> None: ...


class LocalNotifier:
    """For a database no other process shares: there is nobody to tell."""

    def listen(self, listener: WakeListener) -> None:
        pass

    def queue_ready(self, queue_name: str, count: int | None) -> None:
        pass

    def deliveries_due(self) -> None:
        pass

    def close(self) -> None:
        pass


class Wakeups:
    """This process's side of wake-ups: its long-polling receivers (a :class:`WaiterHub`) and its
    delivery workers, woken by work committed here (``announce_*``) and, as the notifier's
    :class:`WakeListener`, by work committed elsewhere."""

    def __init__(self, notifier: Notifier, waiters: WaiterHub) -> None:
        self.notifier = notifier
        self.waiters = waiters
        self._delivery_callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    # work committed in this process ----------------------------------------------------------
    def announce_queue(self, queue_name: str, count: int | None = None) -> None:
        self.waiters.notify(queue_name, count)
        self.notifier.queue_ready(queue_name, count)

    def announce_deliveries(self) -> None:
        self.deliveries_due()
        self.notifier.deliveries_due()

    # waiting ---------------------------------------------------------------------------------
    def listen_for_queues(self) -> None:
        """Before a receiver sleeps: from now on other processes' sends wake it too."""
        self.notifier.listen(self)

    def on_deliveries(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (a delivery worker's ``wake``) whenever deliveries fall due."""
        with self._lock:
            self._delivery_callbacks.append(callback)
        self.notifier.listen(self)

    def remove_delivery_callback(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._delivery_callbacks:
                self._delivery_callbacks.remove(callback)

    # WakeListener ----------------------------------------------------------------------------
    def queue_ready(self, queue_name: str, count: int | None) -> None:
        self.waiters.notify(queue_name, count)

    def deliveries_due(self) -> None:
        for callback in tuple(self._delivery_callbacks):
            callback()
