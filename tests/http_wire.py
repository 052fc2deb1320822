"""Reading one HTTP/1.1 message off a raw socket, for tests that look at the exact bytes."""

from __future__ import annotations

import http.client
import socket

import httptools

from tests.mns_http import RawResponse


def _receive(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the peer closed the connection mid-message")
    return chunk


def read_message(sock: socket.socket) -> tuple[bytes, bytes]:
    """The head (start line and headers) and the Content-Length body of the next message.
    Gathered in a bytearray: adding chunks to bytes copies everything so far each time, which
    made a 32 MiB body take seconds on a busy machine."""
    data = bytearray()
    while b"\r\n\r\n" not in data:
        data += _receive(sock)
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    body = bytearray(rest)
    while len(body) < length:
        body += _receive(sock)
    return head, bytes(body)


class _ResponseCollector:
    def __init__(self) -> None:
        self.responses: list[RawResponse] = []
        self.parser = httptools.HttpResponseParser(self)
        self._headers: dict[str, str] = {}
        self._body = bytearray()

    def on_message_begin(self) -> None:
        self._headers, self._body = {}, bytearray()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, data: bytes) -> None:
        self._body += data

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if status >= 200:  # 100 Continue is not an answer
            self.responses.append(RawResponse(status, self._headers, bytes(self._body)))


def read_responses(
    sock: socket.socket, count: int | None = None, timeout: float = 10.0
) -> tuple[list[RawResponse], bool]:
    """Responses read off ``sock`` (``count`` of them, or until it closes or stays silent for
    ``timeout`` s), and whether the server closed the connection."""
    collector = _ResponseCollector()
    sock.settimeout(timeout)
    while count is None or len(collector.responses) < count:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return collector.responses, False
        except ConnectionResetError:
            return collector.responses, True
        if not data:
            return collector.responses, True
        collector.parser.feed_data(data)
    return collector.responses, False


def is_closed(sock: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the server closes ``sock`` (sending nothing more) within ``timeout`` s."""
    responses, closed = read_responses(sock, timeout=timeout)
    return closed and not responses


def read_bodiless_response(
    sock: socket.socket, timeout: float = 10.0
) -> tuple[RawResponse | None, bytes]:
    """The answer to a HEAD (which has no body whatever its Content-Length says), read until the
    server closes; and any bytes after its head, which should be none."""
    data = b""
    sock.settimeout(timeout)
    while chunk := sock.recv(65536):
        data += chunk
    head, found, rest = data.partition(b"\r\n\r\n")
    if not found:
        return None, data
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return RawResponse(int(status_line.split(" ")[1]), headers, b""), rest


def http_get(address: tuple[str, int], path: str) -> tuple[int, bytes]:
    """One GET on a connection of its own: the status and the body."""
    connection = http.client.HTTPConnection(*address, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
