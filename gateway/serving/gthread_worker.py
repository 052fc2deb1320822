"""gunicorn's ``gthread`` worker with the gateway's answers (``MNS_GATEWAY_WORKER_CLASS=gthread``).

Framing is gunicorn's own HTTP/1.1 parser here, which is strict too: it refuses a Content-Length
beside a Transfer-Encoding, repeated or non-numeric Content-Lengths, unknown transfer codings,
chunked HTTP/1.0, bad chunk sizes and missing CRLFs (tests/gateway/serving/http1 runs these attacks
against both worker classes). What differs from gunicorn is only how a refusal is answered: as
the application's MNS ``<Error>`` (:mod:`gateway.serving.http1.refusal`), never gunicorn's HTML
page, and never a 5xx for what the client sent. Chunked bodies are read whole, within
``MNS_GATEWAY_MAX_BODY_BYTES``, before the application runs (:func:`in_front`).

Connection limits are gunicorn's: ``worker_connections`` (``MNS_GATEWAY_MAX_CONNECTIONS``), and
one thread per request being read or run. A read that stalls for ``MNS_GATEWAY_HEADER_TIMEOUT``
ends its connection, but a client trickling its head byte by byte holds a thread for as long as
it likes: the default worker class, with one deadline for the whole head and connections given
up oldest first, is the one to face the internet with (docs/deploy.md#connection-limits).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn import util
from gunicorn.http import errors
from gunicorn.http.wsgi import base_environ
from gunicorn.workers import gthread

from gateway.config.settings import settings_from_env
from gateway.errors.mns import MNSError
from gateway.serving.http1.environ import CLIENT_CONNECTED, size_body
from gateway.serving.http1.peer import client_closed
from gateway.serving.http1.refusal import WSGIApp, refusal_response

_TOO_LARGE = (errors.LimitRequestLine, errors.LimitRequestHeaders)
_BAD_TARGET = (errors.InvalidRequestLine, errors.InvalidRequestMethod)


def refusal_for(exc: BaseException) -> MNSError:
    """The MNS error for what gunicorn's parser refused (``InternalError`` for anything else)."""
    if isinstance(exc, MNSError):
        return exc
    if isinstance(exc, _TOO_LARGE):
        return MNSError("RequestHeaderTooLarge")
    if isinstance(exc, _BAD_TARGET):
        return MNSError("InvalidRequestURL")
    if isinstance(exc, errors.ParseException):
        return MNSError("MalformedRequest", f"The HTTP request is malformed: {exc}.")
    return MNSError("InternalError")


def in_front(app: WSGIApp, max_body_bytes: int) -> WSGIApp:
    """``app`` behind what gunicorn leaves to the application: a chunked body is read here,
    within the limit, so a malformed chunk is a refusal of the request (raised to
    :meth:`ThreadWorker.handle_error`, which closes the connection) rather than an error in
    the middle of the application; and :data:`~gateway.serving.http1.environ.CLIENT_CONNECTED` is
    set."""

    def fronted(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterable[bytes]:
        try:
            size_body(environ, max_body_bytes)
        except MNSError as refusal:  # answered in the client's format (the JSON API's version)
            refusal.client_version = environ.get("HTTP_X_MNS_VERSION")
            raise
        sock = environ.get("gunicorn.socket")
        if sock is not None:
            environ[CLIENT_CONNECTED] = lambda: not client_closed(sock)
        return app(environ, start_response)

    return fronted


class ThreadWorker(gthread.ThreadWorker):  # type: ignore[misc]
    def init_process(self) -> None:
        # A receive timeout on the listening sockets, which accepted connections inherit (on
        # Linux): a blocking read of a head or body that stalls for MNS_GATEWAY_HEADER_TIMEOUT
        # fails and the thread is freed. gunicorn reads them without any timeout.
        seconds = settings_from_env().header_timeout
        timeout = struct.pack("ll", int(seconds), int(seconds % 1 * 1_000_000))
        for listener in self.sockets:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeout)
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = in_front(self.wsgi, settings_from_env().max_body_bytes)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        refusal = refusal_for(exc)
        if refusal.status >= 500:
            self.log.exception("Error handling request")
        else:
            self.log.warning("Invalid request from %s: %s", addr, exc)
        _, response = refusal_response(self.wsgi, base_environ(self.cfg), refusal)
        try:
            util.write(client, response)
        except OSError:
            self.log.debug("Failed to send the refusal.")
