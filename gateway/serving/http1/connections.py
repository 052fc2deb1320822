"""How many connections a worker process holds, and which to give up when it is full (pure).

A connection that is waiting — for the first byte of its next request, for the rest of a head
or body, or for the client to go away after a refusal — costs a socket and little else, and
whoever opens connections can keep any number of them waiting. A connection being served is
work the process has taken on. So when every slot is taken, a new connection does not queue
behind the waiting ones (where a health probe would wait too): the connection that has been
waiting longest is closed to make room. Only when every connection is being served is the new
one turned away, which its handler answers with ``503 TooManyConnections``
(docs/http.md#connection-limits).

"Waiting longest" counts from when a connection last finished being served (or was accepted),
not from its last byte: a client cannot keep its slot by trickling bytes.

On a graceful stop (SIGTERM) the table drains: kept-alive connections idle between requests are
closed at once, and every other one is closed after its next response. Otherwise a client's
idle keep-alive connection, as every SDK keeps one, holds the process for its whole graceful
timeout (docs/deploy.md#stopping-gracefully).

The table runs on one event loop (gevent) and takes no locks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable


class Slot:
    """One admitted connection; the handler says when it is being served and when not."""

    __slots__ = ("_close", "_has_input", "_table", "idle")

    def __init__(
        self,
        table: ConnectionTable,
        close: Callable[[], None],
        has_input: Callable[[], bool] = lambda: False,
    ) -> None:
        self._table = table
        self._close = close
        self._has_input = has_input
        #: Kept alive between two requests, no byte of the next one read: closing it loses
        #: nothing (RFC 9112, section 9.3.1: clients retry a request on a connection closed idle).
        self.idle = False

    def serving(self) -> None:
        """The connection runs a request: it is not given up for a newcomer."""
        self._table._waiting.pop(self, None)
        self.idle = False

    def waiting(self, *, idle: bool = False) -> None:
        """The connection waits on its client again, from now; ``idle`` if between requests.
        When the table is draining, an idle connection is closed at once."""
        self._table._waiting[self] = None
        self.idle = idle
        if idle and self._table.draining:
            self.stop_if_idle()

    def release(self) -> None:
        """The connection is closed; its slot is free."""
        self._table._waiting.pop(self, None)
        self._table._slots.discard(self)

    def give_up(self) -> None:
        self.release()
        self._close()

    def stop_if_idle(self) -> None:
        """Close the connection on a graceful stop, unless the next request's bytes have
        arrived but not been read yet: its handler reads and answers that one, then closes
        (a client sending just as the stop begins would otherwise lose a request it never
        saw refused)."""
        if not self._has_input():
            self.give_up()


class ConnectionTable:
    """At most ``capacity`` connections, waiting ones given up oldest first to admit more."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._slots: set[Slot] = set()
        #: Waiting slots, longest-waiting first (insertion order).
        self._waiting: OrderedDict[Slot, None] = OrderedDict()
        self.given_up = 0
        self.turned_away = 0
        self.draining = False

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def admit(
        self, close: Callable[[], None], has_input: Callable[[], bool] = lambda: False
    ) -> Slot | None:
        """A slot for a new connection, waiting from now, or ``None`` when every connection is
        being served. ``close`` ends the connection if it must make room for a later one."""
        if len(self._slots) >= self.capacity:
            if not self._waiting:
                self.turned_away += 1
                return None
            oldest = next(iter(self._waiting))
            self.given_up += 1
            oldest.give_up()
        slot = Slot(self, close, has_input)
        self._slots.add(slot)
        slot.waiting()
        return slot

    def drain(self) -> None:
        """Stop keeping connections alive: close the idle ones now; the others are closed by
        their handlers after their next response (:attr:`draining`). Never blocks; runs on the
        event loop between greenlets, never inside a handler's step (the worker's SIGTERM)."""
        self.draining = True
        for slot in [slot for slot in self._waiting if slot.idle]:
            slot.stop_if_idle()
