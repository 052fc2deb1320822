"""Reading an endpoint's answer to a push: its status, a bounded body, and whether the
connection may carry the next push.

The parsing is httptools' (llhttp, the parser of Node.js and uvicorn): it costs a tenth of
``http.client``, which builds an ``email`` message for the headers of every response, and on the
delivery path that was a twentieth of all the CPU a push takes. Only the status and the body are
kept; the framing rules (Content-Length, chunked, a body that ends when the connection does,
interim 1xx answers, keep-alive) are llhttp's.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Final

import httptools

from gateway.errors.delivery import MalformedResponseError

_READ_BYTES: Final = 65536


class _Collector:
    """Receives httptools' callbacks for one response (and notices anything after it)."""

    __slots__ = (
        "body",
        "complete",
        "extra",
        "framed",
        "headers_done",
        "keep_alive",
        "limit",
        "parser",
        "status",
    )

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.body = bytearray()
        self.complete = self.extra = self.framed = self.headers_done = self.keep_alive = False
        self.status = 0
        self.parser = httptools.HttpResponseParser(self)

    def on_message_begin(self) -> None:
        self.extra = self.complete

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.status = self.parser.get_status_code()

    def on_body(self, data: bytes) -> None:
        if len(self.body) <= self.limit:
            self.body += data

    def on_message_complete(self) -> None:
        if 100 <= self.status < 200:  # an interim answer: the real one follows
            self.framed = self.headers_done = False
        else:
            # Asked now: once the callback returns, llhttp resets for the next message.
            self.keep_alive = self.parser.should_keep_alive()
            self.complete = True

    @property
    def over_limit(self) -> bool:
        return len(self.body) > self.limit


def read_response(
    sock: socket.socket, remaining: Callable[[], float], limit: int
) -> tuple[int, bytes, bool]:
    """Read one response: (status, body up to ``limit`` bytes, whether the socket is reusable).

    ``remaining()`` gives the seconds left for the attempt (and raises once there are none).
    A body over ``limit`` is not read to its end: the connection is given up instead.
    """
    response = _Collector(limit)
    while not (response.complete or response.over_limit):
        sock.settimeout(remaining())
        data = sock.recv(_READ_BYTES)
        if not data:
            return _at_end_of_stream(response)
        try:
            response.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            raise MalformedResponseError(f"malformed HTTP response: {exc}") from exc
    reusable = (
        response.complete and response.keep_alive and not (response.extra or response.over_limit)
    )
    return response.status, bytes(response.body[: limit + 1]), reusable


def _at_end_of_stream(response: _Collector) -> tuple[int, bytes, bool]:
    """The endpoint closed the connection: complete only if the body was meant to end so."""
    if not response.headers_done:
        raise MalformedResponseError("the endpoint closed the connection without answering")
    if response.framed:
        raise MalformedResponseError("the endpoint closed the connection mid-response")
    return response.status, bytes(response.body[: response.limit + 1]), False
