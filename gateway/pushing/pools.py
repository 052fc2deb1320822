"""Idle keep-alive sockets to one push route, and the slots bounding its concurrency."""

from __future__ import annotations

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


class OriginPool:
    """Idle keep-alive sockets to one origin, and the slots bounding its concurrency."""

    def __init__(self, size: int) -> None:
        self.slots = threading.BoundedSemaphore(size)
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
