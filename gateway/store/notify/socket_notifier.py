"""The SQLite database's :class:`~gateway.store.notify.notifier.Notifier`: unix datagram sockets in
the data dir, between the processes of one host.

``mns-gateway serve --workers N`` runs N processes on one SQLite file (``mns-gateway worker``
more); a message sent through one must wake a receiver long-polling in another, and a publish
the delivery workers of all of them. Each process that waits for something (receivers, a
delivery worker) binds a datagram socket ``<data_dir>/wake/<pid>-<token>.sock``; a process that
committed work writes a wake-up to every other socket there, and each listener thread hands it
to its process's :class:`~gateway.store.notify.notifier.WakeListener`. A wake-up is ``q <queue>
<count>`` (``*`` for an unknown count) or ``d`` (deliveries are due).

Sends never block (``MSG_DONTWAIT``): a full or dead peer only loses a wake-up, which the
waiters' periodic re-check makes up for. A socket left behind by a killed process refuses
datagrams and is removed by the first sender that meets it. The peer list is re-read only when
the directory's modification time changes, so a broadcast costs one ``stat`` and one ``sendto``
per peer.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from gateway.store.notify.notifier import DELIVERIES, dispatch, encode_queue_wakeup

if TYPE_CHECKING:
    from gateway.store.notify.notifier import WakeListener

log = logging.getLogger(__name__)

#: sockaddr_un holds 108 bytes on Linux; longer paths cannot be bound.
_MAX_SOCKET_PATH: Final = 100
_MAX_DATAGRAM: Final = 512
_RESCAN_SECONDS: Final = 2.0


class SocketNotifier:
    def __init__(
        self,
        directory: Path,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self._listener_target: WakeListener | None = None
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._pid = -1
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._path: Path | None = None
        self._closing = False
        self._sender: socket.socket | None = None  # created on the first broadcast
        self._peers: list[str] = []
        self._peers_seen = (-1, -math.inf)  # directory mtime, monotonic time of the scan

    def listen(self, listener: WakeListener) -> None:
        self.start(listener)

    def start(self, listener: WakeListener) -> bool:
        """Bind this process's socket and start listening (once per process); False if the
        directory cannot hold a socket, in which case only same-process wake-ups work."""
        if self._pid == os.getpid():
            return self._listener is not None
        with self._lock:
            if self._pid != os.getpid():
                self._listener_target = listener
                self._listener = self._bind()
                self._pid = os.getpid()
        return self._listener is not None

    def queue_ready(self, queue_name: str, count: int | None) -> None:
        self.broadcast(encode_queue_wakeup(queue_name, count).encode())

    def deliveries_due(self) -> None:
        self.broadcast(DELIVERIES.encode())

    def _bind(self) -> socket.socket | None:
        path = self.directory / f"{os.getpid()}-{secrets.token_hex(4)}.sock"
        if len(str(path)) > _MAX_SOCKET_PATH:
            log.warning("wake-up socket path too long, cross-process wake-ups off: %s", path)
            return None
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            listener.bind(str(path))
        except OSError:
            log.warning("cannot bind %s, cross-process wake-ups off", path, exc_info=True)
            return None
        self._path = path
        atexit.register(self.close)
        self._thread = threading.Thread(
            target=self._listen, args=(listener,), name="mns-wakeups", daemon=True
        )
        self._thread.start()
        return listener

    def _listen(self, listener: socket.socket) -> None:
        while not self._closing:
            try:
                datagram = listener.recv(_MAX_DATAGRAM)
            except OSError:
                return
            target = self._listener_target
            if self._closing or target is None:
                continue
            dispatch(target, datagram)

    def broadcast(self, payload: bytes) -> None:
        """Send ``payload`` to every other process on this data directory; never blocks, never
        raises."""
        peers = self._current_peers()
        if not peers:
            return
        if self._sender is None:
            self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            # Non-blocking for real: gevent's sendto ignores MSG_DONTWAIT and waits for a full
            # peer (and two greenlets waiting on one socket is an error), unless the socket
            # itself is non-blocking.
            self._sender.setblocking(False)
        for peer in peers:
            try:
                self._sender.sendto(payload, socket.MSG_DONTWAIT, peer)
            except (ConnectionRefusedError, FileNotFoundError):
                with contextlib.suppress(OSError):
                    os.unlink(peer)  # its process is gone
            except OSError:
                pass  # peer's buffer is full, or we are closed: its re-check will catch up

    def _current_peers(self) -> list[str]:
        """Re-scan when the directory changed, and every few seconds in case its coarse mtime
        hid a change made within the same clock tick as the last scan."""
        try:
            mtime = self.directory.stat().st_mtime_ns
        except OSError:
            return []
        now = self._monotonic()
        seen_mtime, scanned_at = self._peers_seen
        if mtime != seen_mtime or now - scanned_at > _RESCAN_SECONDS:
            own = str(self._path) if self._path is not None else None
            with contextlib.suppress(OSError):
                self._peers = [
                    entry.path
                    for entry in os.scandir(self.directory)
                    if entry.name.endswith(".sock") and entry.path != own
                ]
                self._peers_seen = (mtime, now)
        return self._peers

    def close(self) -> None:
        """Stop listening and remove this process's socket."""
        listener, self._listener = self._listener, None
        if listener is not None and self._pid == os.getpid():
            self._closing = True
            with (
                contextlib.suppress(OSError),
                socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as waker,
            ):
                waker.sendto(b"", socket.MSG_DONTWAIT, listener.getsockname())  # let it exit
            if self._thread is not None:
                self._thread.join(timeout=2)
            listener.close()
            if self._path is not None:
                with contextlib.suppress(OSError):
                    self._path.unlink()
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.close()
