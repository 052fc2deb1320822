"""Idle keep-alive sockets to one push route, and the slots bounding its concurrency."""

from __future__ import annotations

import queue
import select
import socket
import ssl
from collections import deque


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
        # A deque's append and pop are atomic, so the idle sockets need no lock of their own
        # (under gevent a lock is Python on both sides: two rounds of it per push).
        self._idle: deque[socket.socket] = deque()
        self._closed = False

    def take_idle(self) -> socket.socket | None:
        """The most recently used idle socket the peer has not closed, if any."""
        while True:
            try:
                sock = self._idle.pop()
            except IndexError:
                return None
            if not _is_dropped(sock):
                return sock
            sock.close()

    def give_back(self, sock: socket.socket) -> None:
        self._idle.append(sock)
        if self._closed:  # closed meanwhile: whichever of the two looks last closes it
            self._close_idle()

    def close(self) -> None:
        self._closed = True
        self._close_idle()

    def _close_idle(self) -> None:
        while True:
            try:
                self._idle.pop().close()
            except IndexError:
                return
