"""The gunicorn worker class ``mns-gateway serve`` uses by default: gevent, with the gateway's own
HTTP/1.1 front in place of ``gevent.pywsgi``'s request reading.

Why gevent: one event loop per process holds many idle keep-alive and long-poll connections, and
gevent's WSGI server writes responses with fewer system calls than gunicorn's own gevent worker
(docs/benchmarks.md#where-the-time-goes). Its responses are used unchanged.

What this worker decides instead of ``gevent.pywsgi`` (docs/http.md):

* **Framing.** Requests are framed by :mod:`gateway.serving.http1.framing` (llhttp, strict):
  conflicting or malformed framing is answered ``400`` and the connection closed, where
  ``gevent.pywsgi`` ran the bytes after a Content-Length beside a chunked body as a second
  request, and read chunked bodies the application then saw as empty. Bodies are read whole,
  within ``MNS_GATEWAY_MAX_BODY_BYTES``, and handed on sized.
* **Time.** A client has ``MNS_GATEWAY_HEADER_TIMEOUT`` seconds from connecting (on a kept-alive
  connection, from the first byte of its next request) to send the whole head, and a body may
  stall that long between reads; a kept-alive connection idles for gunicorn's ``keepalive``.
* **Room.** At most ``MNS_GATEWAY_MAX_CONNECTIONS`` connections per process
  (:class:`~gateway.serving.http1.connections.ConnectionTable`): a newcomer replaces the connection
  that has waited on its client longest, and is answered ``503`` only when all are being served. So
  idle or slow connections cannot lock the process out, and health probes keep answering.

Refusals are answered by the application itself (:mod:`gateway.serving.http1.refusal`), so they are
MNS ``<Error>`` documents like every other error. Run it under your own gunicorn with
``-k gateway.serving.pywsgi_worker.PyWSGIWorker``; it reads its limits from ``MNS_GATEWAY_*`` like
``gateway.serving.wsgi:app`` (gunicorn's ``--worker-connections`` does not apply to it).
"""

from __future__ import annotations

import contextlib
import resource
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any, Final

import gevent
from gunicorn.workers.ggevent import GeventPyWSGIWorker, PyWSGIHandler

from gateway.config.settings import Settings, settings_from_env
from gateway.errors.mns import MNSError
from gateway.serving.http1.connections import ConnectionTable, Slot
from gateway.serving.http1.environ import request_environ
from gateway.serving.http1.framing import Phase, Request, RequestParser
from gateway.serving.http1.peer import bytes_waiting, client_closed
from gateway.serving.http1.refusal import refusal_response
from gateway.serving.patching import entry_points_read_once

_READ_BYTES: Final = 65536
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
#: After a refusal, what the client is still sending is read and dropped for this long (and at
#: most this much), so that closing does not reset the connection before the answer is read.
LINGER_SECONDS: Final = 2.0
LINGER_BYTES: Final = 4 * 1024 * 1024
#: Greenlets beyond MNS_GATEWAY_MAX_CONNECTIONS, for connections being turned away.
REJECTION_RESERVE: Final = 64
#: File descriptors kept for everything but client connections (database, logs, pushes).
FD_RESERVE: Final = 256
#: A response body up to this size is written with the response's head in one system call.
ONE_WRITE_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class FrontLimits:
    header_timeout: float
    max_connections: int
    max_body_bytes: int

    @classmethod
    def from_settings(cls, settings: Settings) -> FrontLimits:
        return cls(settings.header_timeout, settings.max_connections, settings.max_body_bytes)


class _Headers:
    """The request's header fields for gunicorn's access log (``items()``)."""

    __slots__ = ("_fields",)

    def __init__(self, fields: tuple[tuple[str, str], ...]) -> None:
        self._fields = fields

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)


class FramedHandler(PyWSGIHandler):  # type: ignore[misc]
    """Serves one connection: frames its requests, runs them, keeps its timeouts."""

    #: Set per worker by :class:`PyWSGIWorker`.
    idle_timeout: float = 75.0
    limits: FrontLimits = FrontLimits.from_settings(Settings())
    connections: ConnectionTable = ConnectionTable(limits.max_connections)

    def __init__(self, sock: socket.socket, address: Any, server: Any) -> None:
        # Not gevent's constructor: nothing here reads through a buffered file.
        self.socket = sock
        self.client_address = address
        self.server = server

    def handle(self) -> None:
        accepted = time.monotonic()
        slot = self.connections.admit(self._give_up, lambda: bytes_waiting(self.socket))
        try:
            if slot is None:
                self._refuse(MNSError("TooManyConnections"))
            else:
                self._serve(slot, accepted + self.limits.header_timeout)
        finally:
            if slot is not None:
                slot.release()
            with contextlib.suppress(OSError):
                self.socket.close()

    def _serve(self, slot: Slot, head_deadline: float | None) -> None:
        parser = RequestParser(max_body_bytes=self.limits.max_body_bytes)
        while True:
            try:
                request = self._read_request(parser, slot, head_deadline)
            except MNSError as refusal:
                self._refuse(refusal)
                return
            if request is None:
                return
            slot.serving()
            self._respond(request)
            if self.close_connection or parser.exhausted or self.connections.draining:
                self._close_after_response()
                return
            # A pipelined request may have begun already: its head's deadline runs from now.
            idle = parser.phase is Phase.IDLE
            slot.waiting(idle=idle)
            head_deadline = None if idle else time.monotonic() + self.limits.header_timeout

    # reading --------------------------------------------------------------------------------
    def _read_request(
        self, parser: RequestParser, slot: Slot, head_deadline: float | None
    ) -> Request | None:
        """The next request; ``None`` when the connection ends quietly (the client closed it,
        or let it idle past the timeout); raises the :class:`MNSError` to refuse it with."""
        while (request := parser.pop()) is None:
            if parser.exhausted:
                return None
            if parser.take_continue():
                self._send(_CONTINUE)
            data = self._receive(self._read_timeout(parser.phase, head_deadline))
            if data is None:  # timed out
                if parser.phase is Phase.IDLE:
                    return None
                raise MNSError("RequestTimeout", _timeout_message(parser.phase, self.limits))
            if not data:
                return None
            if head_deadline is None:  # the first bytes of a kept-alive connection's next request
                head_deadline = time.monotonic() + self.limits.header_timeout
                slot.idle = False
            parser.feed(data)
        return request

    def _read_timeout(self, phase: Phase, head_deadline: float | None) -> float:
        if phase is Phase.BODY:
            return self.limits.header_timeout
        if head_deadline is None:  # a kept-alive connection, between requests
            return self.idle_timeout
        return head_deadline - time.monotonic()

    def _receive(self, timeout: float) -> bytes | None:
        """Up to a buffer of bytes; ``b""`` at the end of the stream, ``None`` on timeout."""
        if timeout <= 0:
            return None
        try:
            self.socket.settimeout(timeout)
            return self.socket.recv(_READ_BYTES)
        except TimeoutError:
            return None
        except OSError:
            return b""

    def _send(self, data: bytes) -> bool:
        try:
            self.socket.settimeout(self.idle_timeout)
            self.socket.sendall(data)
        except OSError:
            return False
        return True

    # answering ------------------------------------------------------------------------------
    def _respond(self, request: Request) -> None:
        """Run the application and write its response (gevent.pywsgi's writing)."""
        self.requestline = f"{request.method} {request.target} {request.version}"
        self.command, self.path, self.request_version = (
            request.method,
            request.target,
            request.version,
        )
        self.close_connection = not request.keep_alive
        self.headers = _Headers(request.headers)
        self.environ = request_environ(
            request, self.server.environ, self.client_address, self._client_connected
        )
        self.application = self.server.application
        self.socket.settimeout(self.idle_timeout)
        self.time_start = time.time()
        self.status = self.result = None
        self.headers_sent = self.response_use_chunked = self.connection_upgraded = False
        self.response_length = 0
        try:
            self.run_application()
        except OSError:  # the client went away while the response was being written
            self.close_connection = True
        except Exception:
            self.handle_error(*sys.exc_info())
        finally:
            self.time_finish = time.time()
            self.log_request()

    def _write_with_headers(self, data: bytes) -> None:
        """gevent.pywsgi's, but a body of up to :data:`ONE_WRITE_BYTES` goes out with the head
        in one write: gevent sends them apart, and the second system call costs more than
        copying a small body (most MNS answers are a few hundred bytes or none). A chunked
        body (one without a length) is framed by ``_write``, after its head, as gevent does."""
        self.headers_sent = True
        self.finalize_headers()  # decides whether the body is chunked
        # start_response has encoded the status and the headers (latin-1), as gevent's does.
        response = bytearray(b"HTTP/1.1 ")
        response += self.status
        response += b"\r\n"
        for name, value in self.response_headers:
            response += name + b": " + value + b"\r\n"
        response += b"\r\n"
        if self.response_use_chunked or len(data) > ONE_WRITE_BYTES:
            self._sendall(response)
            self._write(data)
            return
        response += data
        self._sendall(response)

    def _sendall(self, data: bytes | bytearray) -> None:
        """gevent.pywsgi's, with one ``send()`` for what fits the socket's buffer: gevent's
        ``sendall()`` asks the kernel for the buffer's size (a system call) on every call."""
        try:
            sent = self.socket.send(data)
            if sent < len(data):
                self.socket.sendall(memoryview(data)[sent:])
        except OSError as exc:
            self.status = f"socket error: {exc}"
            if self.code > 0:
                self.code = -self.code
            raise
        self.response_length += len(data)

    def start_response(self, status: str, headers: Any, exc_info: Any = None) -> Any:
        write = super().start_response(status, headers, exc_info)
        if self.connections.draining:  # stopping: this is the connection's last response
            self.close_connection = True
        if self.close_connection and self.request_version == "HTTP/1.1":
            self._announce_close()
        return write

    def _announce_close(self) -> None:
        """The client asked to close, or the worker is stopping (RFC 9112, section 9.6): say
        that the server will close after this response."""
        if all(name.lower() != b"connection" for name, _ in self.response_headers):
            self.response_headers.append((b"Connection", b"close"))

    def log_request(self) -> None:
        # Building the access-log entry is a measurable share of a publish, even when gunicorn
        # then drops it (docs/benchmarks.md#where-the-time-goes).
        if getattr(self.server.log, "access_log_enabled", True):
            super().log_request()

    def _client_connected(self) -> bool:
        return not client_closed(self.socket)

    def _refuse(self, error: MNSError) -> None:
        """Answer ``error`` (the application renders it), then close the connection."""
        status, response = refusal_response(self.server.application, self.server.environ, error)
        if status in (400, 431):
            warn = getattr(self.server.log, "warning", None)
            if warn is not None:
                warn("refused a request from %s: %s", self.client_address, error.message)
        if self._send(response):
            self._linger()

    def _close_after_response(self) -> None:
        """Close after the last response; drain first if the client already sent more."""
        if bytes_waiting(self.socket):
            self._linger()

    def _linger(self) -> None:
        """Half-close, then drop what the client still sends until it closes too, or for
        :data:`LINGER_SECONDS`: closing with unread bytes would reset the connection, and the
        client could lose the answer before reading it."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_WR)
        deadline, drained = time.monotonic() + LINGER_SECONDS, 0
        while drained < LINGER_BYTES:
            data = self._receive(deadline - time.monotonic())
            if not data:
                return
            drained += len(data)

    def _give_up(self) -> None:
        """Make room for a newer connection: whatever this one waits for ends now."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)


def _timeout_message(phase: Phase, limits: FrontLimits) -> str:
    part = "body" if phase is Phase.BODY else "head"
    return f"The request {part} was not received within {limits.header_timeout:g} seconds."


def _room_for_connections(wanted: int) -> int:
    """Raise the soft file-descriptor limit as far as ``wanted`` connections need (up to the
    hard limit) and return how many connections fit: accepting past the limit fails with
    EMFILE, which would turn away every newcomer, health probes included."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + REJECTION_RESERVE + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - REJECTION_RESERVE - FD_RESERVE))


class PyWSGIWorker(GeventPyWSGIWorker):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._quitting = False
        limits = FrontLimits.from_settings(settings_from_env())
        capacity = _room_for_connections(limits.max_connections)
        if capacity < limits.max_connections:
            self.log.warning(
                "MNS_GATEWAY_MAX_CONNECTIONS=%d does not fit the open-file limit: holding %d",
                limits.max_connections,
                capacity,
            )
        self.worker_connections = capacity + REJECTION_RESERVE
        self.connections = ConnectionTable(capacity)
        # keepalive <= 0 asks gunicorn not to keep connections alive: a second's grace is close.
        self.wsgi_handler = type(
            "FramedHandler",
            (FramedHandler,),
            {
                "idle_timeout": max(float(self.cfg.keepalive), 1.0),
                "limits": limits,
                "connections": self.connections,
            },
        )

    def patch(self) -> None:
        """gunicorn's monkey-patching, the entry points read once
        (:func:`~gateway.serving.patching.entry_points_read_once`)."""
        with entry_points_read_once():
            super().patch()

    def handle_quit(self, sig: int, frame: Any) -> None:
        """SIGINT and SIGQUIT: quit at once, once. Ctrl-C in a terminal sends SIGINT to the
        whole process group, so the worker gets it from the terminal and then SIGQUIT from the
        arbiter; gunicorn would exit in a greenlet for each, and the second one's
        ``SystemExit`` arrived while the interpreter was already shutting down, printed as a
        traceback on every Ctrl-C."""
        if self._quitting:
            return
        self._quitting = True
        super().handle_quit(sig, frame)

    def handle_exit(self, sig: int, frame: Any) -> None:
        """SIGTERM: stop accepting (gunicorn), and stop keeping connections alive, so that
        clients' idle keep-alive connections do not hold the process until the graceful
        timeout; requests in flight still finish (docs/deploy.md#stopping-gracefully)."""
        super().handle_exit(sig, frame)
        # Not here: a Python signal handler runs between any two bytecodes of whichever
        # greenlet holds the thread, such as a handler's between its ``recv`` returning the
        # next request and marking its connection busy, and the drain would close that
        # connection under a request already read. The hub runs callbacks only between
        # greenlets, where every connection's state is whole.
        gevent.get_hub().loop.run_callback(self.connections.drain)
