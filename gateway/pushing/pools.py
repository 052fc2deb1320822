"""Idle keep-alive sockets to one push route, and the slots bounding its concurrency."""

from __future__ import annotations

import queue
import select
import socket
import ssl
import threading


def _is_dropped(sock: socket.socket) -> bool:
    """A kept-alive socket the peer closed (or wrote to unasked) is readable: don't reuse it."""
    if isinstance(sock, ssl.SSLSocket):  # TLS records cannot be peeked at
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    sock.settimeout(0)  # one non-blocking peek: cheaper than a poll object, even under gevent
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


class Slots:
    """At most ``size`` holders at once, as a semaphore: a queue of ``size`` tokens. Under gevent
    and with threads alike, its queue is written in C, where ``threading.BoundedSemaphore`` is
    Python around a condition variable (two lock rounds and a notify per push)."""

    def __init__(self, size: int) -> None:
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(size):
            self._tokens.put(None)

    def acquire(self, timeout: float) -> bool:
        """Take a slot, waiting up to ``timeout`` seconds; whether one was taken."""
        try:
            self._tokens.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return False
        return True

    def release(self) -> None:
        """Give back a slot taken with :meth:`acquire` (and only such a one)."""
        self._tokens.put(None)


class OriginPool:
    """Idle keep-alive sockets to one origin, and the slots bounding its concurrency."""

    def __init__(self, size: int) -> None:
        self.slots = Slots(size)
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def take_idle(self) -> socket.socket | None:
        while True:
            with self._lock:
                sock = self._idle.pop() if self._idle else None
            if sock is None or not _is_dropped(sock):
                return sock
            sock.close()

    def give_back(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(sock)
                return
        sock.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()
