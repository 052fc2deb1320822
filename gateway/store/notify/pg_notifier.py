"""The PostgreSQL database's :class:`~gateway.store.notify.notifier.Notifier`: LISTEN/NOTIFY,
between every process of every replica sharing the database.

Sending: wake-ups are queued and a sender thread (a greenlet under gevent) delivers whatever has
gathered within 2 ms in one ``pg_notify`` round trip, merged per queue, so a burst of sends costs
a few NOTIFYs rather than one per request. Receiving: a process that waits for something holds one
connection that LISTENs, on a thread of its own; the first :meth:`PgNotifier.listen` returns once
that connection LISTENs (at most :data:`_FIRST_LISTEN_SECONDS` later), so that what another
process commits after it returns wakes this one, as a receiver that then reads its queue and
sleeps relies on. Each payload starts with the sending process's
token, so a process ignores its own (it woke its waiters directly). After the listening
connection was lost, every delivery worker is woken once, since wake-ups may have been missed
meanwhile (long polls re-check their queue every second anyway). Both threads outlive any outage
of the server: they reconnect with a growing delay (at most :data:`_RECONNECT_MAX_SECONDS`) and
log one line when the connection is lost and one when it is back, not a traceback per attempt.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import psycopg

from gateway.store.notify.notifier import DELIVERIES, dispatch, encode_queue_wakeup

if TYPE_CHECKING:
    from gateway.store.notify.notifier import WakeListener

log = logging.getLogger(__name__)

CHANNEL: Final = "mns_gateway"
_NOTIFY = "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload"
_RECONNECT_SECONDS: Final = 0.25
_RECONNECT_MAX_SECONDS: Final = 2.0
#: How long the first :meth:`PgNotifier.listen` waits for the LISTEN to be in place. Returning at
#: once, it let a receiver read its queue and sleep while the listener was still connecting: a
#: send from another process in that window woke nobody, and the receiver waited for its next
#: re-check (tests/gateway/queues/test_long_poll.py failed so once under CI load, its re-checks
#: off). A server that does not answer in time costs only that: re-checks cover the gap.
_FIRST_LISTEN_SECONDS: Final = 5.0
#: How long wake-ups gather before one NOTIFY carries them: under load many sends share one
#: round trip (at most ~500 NOTIFYs/s per process); a wake-up arrives this much later.
_LINGER_SECONDS: Final = 0.002
_POLL_SECONDS: Final = 0.25


class PgNotifier:
    def __init__(self, url: str, connect_options: Mapping[str, Any] | None = None) -> None:
        self.url = url
        #: libpq options bounding how long a lost server can hold a connect or a packet.
        self._options = dict(connect_options or {})
        self._lock = threading.Lock()
        self._pid = -1
        self._closing = threading.Event()
        self._queues: dict[str, int | None] = {}
        self._deliveries = False
        self._pending = threading.Event()
        self._sender: threading.Thread | None = None
        self._listener: threading.Thread | None = None
        #: Set once the listener's connection LISTENs, or its first attempt failed (this
        #: process's listener; a fork starts over).
        self._listening = threading.Event()
        self._target: WakeListener | None = None
        self._token = ""

    # sending ---------------------------------------------------------------------------------
    def queue_ready(self, queue_name: str, count: int | None) -> None:
        with self._lock:
            self._start_sender()
            if queue_name in self._queues:
                known = self._queues[queue_name]
                count = None if known is None or count is None else known + count
            self._queues[queue_name] = count
        self._pending.set()

    def deliveries_due(self) -> None:
        with self._lock:
            self._start_sender()
            self._deliveries = True
        self._pending.set()

    def _start_sender(self) -> None:
        """Once per process (a forked child starts its own); called holding the lock."""
        if self._pid != os.getpid():
            self._pid, self._token = os.getpid(), secrets.token_hex(4)
            self._sender = self._listener = None
            self._listening = threading.Event()
        if self._sender is None:
            self._sender = threading.Thread(target=self._send_loop, name="mns-notify", daemon=True)
            self._sender.start()

    def _take(self) -> list[str]:
        with self._lock:
            payloads = [
                f"{self._token} {encode_queue_wakeup(name, count)}"
                for name, count in self._queues.items()
            ]
            if self._deliveries:
                payloads.append(f"{self._token} {DELIVERIES}")
            self._queues, self._deliveries = {}, False
            self._pending.clear()
        return payloads

    def _send_loop(self) -> None:
        connection: psycopg.Connection[Any] | None = None
        while not self._closing.is_set():
            self._pending.wait()
            self._closing.wait(_LINGER_SECONDS)
            payloads = self._take()
            if not payloads or self._closing.is_set():
                continue
            try:
                if connection is None or connection.closed:
                    connection = psycopg.connect(self.url, autocommit=True, **self._options)
                connection.execute(_NOTIFY, (CHANNEL, payloads))
            except psycopg.Error as exc:  # these wake-ups are lost; waiters re-check on their own
                if connection is not None:  # once per lost connection, not per burst
                    log.warning("could not send wake-ups: %s", _first_line(exc))
                    connection.close()
                connection = None
        if connection is not None:
            connection.close()

    # receiving -------------------------------------------------------------------------------
    def listen(self, listener: WakeListener) -> None:
        """Wake ``listener`` with what other processes announce from now on: the first call
        starts the listener, and calls wait until it LISTENs (or its first attempt failed;
        :data:`_FIRST_LISTEN_SECONDS` at most)."""
        with self._lock:
            if self._pid != os.getpid() or self._listener is None:
                self._start_sender()
                self._target = listener
                self._listener = threading.Thread(
                    target=self._listen_loop, args=(self._listening,), name="mns-listen",
                    daemon=True,
                )  # fmt: skip
                self._listener.start()
            listening = self._listening
        listening.wait(_FIRST_LISTEN_SECONDS)

    def _listen_loop(self, listening: threading.Event) -> None:
        missed, failures = False, 0
        while not self._closing.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, **self._options) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    listening.set()
                    if missed:
                        log.warning("wake-up listener connected again")
                        if self._target is not None:
                            self._target.deliveries_due()
                    failures = 0
                    self._receive(connection)
            except psycopg.Error as exc:
                listening.set()  # its first attempt failed: nobody waits for the retries
                if failures == 0:
                    log.warning("wake-up listener lost its connection (%s); reconnecting",
                                _first_line(exc))  # fmt: skip
                failures += 1
            missed = True
            self._closing.wait(reconnect_delay(failures))

    def _receive(self, connection: psycopg.Connection[Any]) -> None:
        own = f"{self._token} "
        while not self._closing.is_set():
            for notify in connection.notifies(timeout=_POLL_SECONDS):
                target = self._target
                if target is not None and not notify.payload.startswith(own):
                    dispatch(target, notify.payload.partition(" ")[2])

    def close(self) -> None:
        self._closing.set()
        self._pending.set()
        for thread in (self._sender, self._listener):
            if thread is not None and self._pid == os.getpid():
                with contextlib.suppress(RuntimeError):
                    thread.join(timeout=_POLL_SECONDS + 1)


def reconnect_delay(failures: int) -> float:
    """Seconds before the listener's next attempt after ``failures`` failed ones in a row:
    doubling from :data:`_RECONNECT_SECONDS` up to :data:`_RECONNECT_MAX_SECONDS`."""
    return float(min(_RECONNECT_MAX_SECONDS, _RECONNECT_SECONDS * 2 ** max(0, failures - 1)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
