"""What the client at the other end of a server connection has done, asked without blocking."""

from __future__ import annotations

import contextlib
import socket


def _peek(sock: socket.socket) -> bytes | None:
    """The next byte waiting on ``sock``, ``b""`` if the client closed or reset its side, or
    ``None`` if nothing has arrived. Works on blocking, timed and gevent sockets alike: the
    socket's timeout is put back as it was."""
    timeout = sock.gettimeout()
    try:
        sock.settimeout(0)
        return sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return None
    except OSError:
        return b""
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(timeout)


def client_closed(sock: socket.socket) -> bool:
    """True once the client has closed (or reset) its side; bytes waiting, such as a pipelined
    request, mean it is still there."""
    return _peek(sock) == b""


def bytes_waiting(sock: socket.socket) -> bool:
    """True if the client has sent bytes not yet read."""
    return bool(_peek(sock))
