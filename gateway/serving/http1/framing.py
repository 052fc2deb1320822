"""Request framing: where each HTTP/1.1 request on a connection begins and ends (pure).

A server and whatever sits in front of it (a proxy, a load balancer) must agree on where one
request ends, or the bytes one takes for a body the other runs as a second request (request
smuggling). So framing is decided once, here, strictly: llhttp (Node.js's parser, through
httptools) refuses a Content-Length beside a Transfer-Encoding, two Content-Lengths, a length
that is not ASCII digits, a Transfer-Encoding that does not end in ``chunked``, bad chunk sizes
and missing CRLFs; on top of it this module refuses chunked HTTP/1.0, versions other than 1.0
and 1.1, a missing or repeated Host, a target that is neither a path nor a URL, heads over
``max_head_bytes`` and bodies over ``max_body_bytes`` (RFC 9112, section 6.3;
docs/http.md#framing).
A refusal is final: the connection cannot be read any further and must be closed.

:class:`RequestParser` is fed bytes as they arrive and hands out complete requests, bodies
decoded and whole; it does no IO, so the worker classes decide how to wait for bytes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Final

import httptools

from gateway.errors.mns import MNSError, body_too_large
from gateway.protocol.request_target import parse_request_target

#: The request line and headers; a receipt handle in a query string is a few hundred bytes.
DEFAULT_MAX_HEAD_BYTES: Final = 32 * 1024
DEFAULT_MAX_FIELDS: Final = 100
#: Chunk-size lines and trailers of a chunked body may add at most this much (or the body
#: limit, if larger) to the body on the wire.
_MIN_FRAMING_ALLOWANCE: Final = 64 * 1024
_VERSIONS: Final = {"1.1": "HTTP/1.1", "1.0": "HTTP/1.0"}


def malformed(reason: str) -> MNSError:
    return MNSError("MalformedRequest", f"The HTTP request is malformed: {reason}.")


@dataclass(frozen=True, slots=True)
class Request:
    """One framed request. Text is the bytes decoded as ISO-8859-1, as WSGI wants it."""

    method: str
    target: str
    version: str
    #: The header fields as sent, in order, without the trailers of a chunked body.
    headers: tuple[tuple[str, str], ...]
    body: bytes
    #: Whether the connection may carry another request after this one's response.
    keep_alive: bool


class Phase(Enum):
    IDLE = "idle"  # between requests: nothing of the next one has arrived
    HEAD = "head"  # the request line and headers are arriving
    BODY = "body"


class RequestParser:
    """Frames the requests in the bytes of one connection (see the module docstring)."""

    def __init__(
        self,
        *,
        max_body_bytes: int,
        max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
        max_fields: int = DEFAULT_MAX_FIELDS,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.max_head_bytes = max_head_bytes
        self.max_fields = max_fields
        self._max_body_wire = max_body_bytes + max(max_body_bytes, _MIN_FRAMING_ALLOWANCE)
        self._parser = httptools.HttpRequestParser(self)
        self._ready: deque[Request] = deque()
        self._error: MNSError | None = None
        self._done = False  # refused, or upgraded: nothing after it is a request of ours
        self.phase = Phase.IDLE
        self._start_message()
        self._continue_wanted = False

    # feeding ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Parse ``data``, the next bytes of the connection. Never raises: a refusal is kept
        and raised by :meth:`pop` once the requests before it have been handed out."""
        view = memoryview(data)
        while view and not self._done:
            if self.phase is Phase.BODY:
                piece, view = view, view[:0]
                self._wire_bytes += len(piece)
                if self._wire_bytes > self._max_body_wire:
                    return self._refuse(malformed("the chunked framing is too large"))
            else:  # a head is never read past its limit, however the bytes arrive
                room = self.max_head_bytes - self._head_bytes
                if room <= 0:
                    return self._refuse(_head_too_large(self.max_head_bytes))
                piece, view = view[:room], view[room:]
                self._head_bytes += len(piece)
            self._parse(piece)
        return None

    def _parse(self, piece: memoryview) -> None:
        try:
            self._parser.feed_data(piece)
        except httptools.HttpParserUpgrade:
            # llhttp stops at an Upgrade or CONNECT request: answer it, then close.
            self._done = True
            if self._ready:
                last = self._ready.pop()
                self._ready.append(_without_keep_alive(last))
            elif self._error is None:
                self._error = malformed("protocol upgrades are not supported")
        except (httptools.HttpParserInvalidMethodError, httptools.HttpParserInvalidURLError):
            self._refuse(MNSError("InvalidRequestURL"))
        except httptools.HttpParserError as exc:
            # A refusal raised inside a callback arrives as HttpParserCallbackError.
            self._refuse(self._error or malformed(str(exc).rstrip(".")))

    def _refuse(self, error: MNSError) -> None:
        # Answered in the client's format when its head said which (the JSON API's version).
        error.client_version = error.client_version or self._header("x-mns-version")
        self._error = self._error or error
        self._done = True

    def _stop(self, error: MNSError) -> _Refused:
        """Keep ``error`` as the refusal; the exception to raise from a callback, which is the
        only way to stop llhttp there."""
        self._refuse(error)
        return _Refused(error.message)

    # handing out --------------------------------------------------------------------------
    def pop(self) -> Request | None:
        """The next complete request, ``None`` until one is; raises the refusal (an
        :class:`MNSError`) once every request framed before it has been handed out."""
        if self._ready:
            return self._ready.popleft()
        if self._error is not None:
            raise self._error
        return None

    @property
    def exhausted(self) -> bool:
        """Nothing more will come out of this connection: it was refused or upgraded."""
        return self._done and not self._ready

    def take_continue(self) -> bool:
        """True once per request that sent ``Expect: 100-continue`` and whose body is still
        to come: the caller answers ``100 Continue`` so the client sends it."""
        wanted, self._continue_wanted = self._continue_wanted, False
        return wanted

    # httptools callbacks ------------------------------------------------------------------
    def _start_message(self) -> None:
        self._target: list[bytes] = []
        self._headers: list[tuple[str, str]] = []
        self._body = bytearray()
        self._head_bytes = 0
        self._wire_bytes = 0

    def on_message_begin(self) -> None:
        self._start_message()
        self.phase = Phase.HEAD

    def on_url(self, fragment: bytes) -> None:
        self._target.append(fragment)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.phase is not Phase.HEAD:
            return  # a trailer of a chunked body: framing only, never a header of the request
        if len(self._headers) >= self.max_fields:
            raise self._stop(_head_too_large(self.max_head_bytes))
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        self.phase = Phase.BODY
        if (error := self._head_error()) is not None:
            raise self._stop(error)
        length = self._header("content-length")
        expects_body = self._header("transfer-encoding") is not None or int(length or 0) > 0
        expectation = (self._header("expect") or "").strip().lower()
        self._continue_wanted = expects_body and expectation == "100-continue"

    def _head_error(self) -> MNSError | None:
        version = self._parser.get_http_version()
        if version not in _VERSIONS:
            return malformed(f"HTTP/{version} is not supported")
        if not _is_path_or_url(b"".join(self._target).decode("latin-1")):
            return MNSError("InvalidRequestURL")
        if version == "1.1" and len(self._all("host")) != 1:
            return malformed("an HTTP/1.1 request needs exactly one Host header")
        if len(self._all("content-type")) > 1:  # signed: two would be two readings of one request
            return malformed("a request has at most one Content-Type header")
        if version == "1.0" and self._header("transfer-encoding") is not None:
            return malformed("Transfer-Encoding is not HTTP/1.0")
        length = self._header("content-length")
        if length is not None and int(length) > self.max_body_bytes:
            return body_too_large(self.max_body_bytes)
        return None

    def on_body(self, data: bytes) -> None:
        self._continue_wanted = False
        self._body += data
        if len(self._body) > self.max_body_bytes:
            raise self._stop(body_too_large(self.max_body_bytes))

    def on_message_complete(self) -> None:
        self._continue_wanted = False
        self._ready.append(
            Request(
                method=self._parser.get_method().decode("ascii"),
                target=b"".join(self._target).decode("latin-1"),
                version=_VERSIONS[self._parser.get_http_version()],
                headers=tuple(self._headers),
                body=bytes(self._body),
                # Asked now: once the callback returns, llhttp resets for the next message.
                keep_alive=self._parser.should_keep_alive(),
            )
        )
        self.phase = Phase.IDLE
        self._start_message()

    def _all(self, name: str) -> list[str]:
        return [value for field, value in self._headers if field.lower() == name]

    def _header(self, name: str) -> str | None:
        values = self._all(name)
        return values[0] if values else None


class _Refused(Exception):
    """Raised inside a callback to stop llhttp; the refusal itself is kept by the parser."""


def _is_path_or_url(target: str) -> bool:
    """The origin form (``/queues/q``), or the absolute form a client sends to a proxy
    (``http://host/queues/q``), which a server must accept too (RFC 9112, section 3.2.2); not
    the asterisk form (``*``) or the authority form (``CONNECT``'s ``host:port``)."""
    return target.startswith("/") or parse_request_target(target).authority is not None


def _head_too_large(limit: int) -> MNSError:
    return MNSError(
        "RequestHeaderTooLarge",
        f"The request line and headers are larger than {limit} bytes or 100 fields.",
    )


def _without_keep_alive(request: Request) -> Request:
    return Request(
        request.method, request.target, request.version, request.headers, request.body, False
    )
