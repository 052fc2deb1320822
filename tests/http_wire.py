"""Reading one HTTP/1.1 message off a raw socket, for tests that look at the exact bytes."""

from __future__ import annotations

import socket


def _receive(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the peer closed the connection mid-message")
    return chunk


def read_message(sock: socket.socket) -> tuple[bytes, bytes]:
    """The head (start line and headers) and the Content-Length body of the next message."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _receive(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        body += _receive(sock)
    return head, body
