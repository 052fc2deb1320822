"""Sending encoded OTLP export requests (:mod:`gateway.observability.otlp_wire`) to a collector,
over ``http/protobuf`` or ``grpc``, configured by the ``OTEL_EXPORTER_OTLP_*`` variables as the
SDK's OTLP exporters read them (each ``_TRACES_`` variable before its general one): endpoint,
headers, timeout (seconds, as the installed SDK reads it), compression (``gzip``, ``deflate``,
``none``), certificate, client key and certificate, and for gRPC ``insecure``.

The SDK's exporters take SDK spans and encode them themselves; the gateway's spans arrive as
bytes, so these send bytes: one kept-alive HTTP session, or one gRPC channel with the
collector's ``Export`` method called on raw bytes. Like the SDK's, they try a request again
after a transient failure (a connection error; HTTP 429, 502, 503, 504; gRPC UNAVAILABLE and
the like) with exponential backoff (1 s, 2 s, 4 s, ...) while the timeout allows, on the
export thread: deliveries never wait for it.

The timeout is each export's overall deadline, retries included: a collector that accepts and
trickles its answer a byte at a time would otherwise hold an HTTP export for ever, each read
well within the socket's timeout (gRPC calls carry the deadline themselves). At shutdown
(:meth:`HttpSender.finish`) a failed export is not tried again, and :meth:`HttpSender.abort`
cuts the one in flight: the span batcher drops spans rather than hold a stopping process.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import logging
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse, urlsplit

log = logging.getLogger(__name__)

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HTTP_DEFAULT = "http://localhost:4318/"
GRPC_DEFAULT = "http://localhost:4317"
COMPRESSIONS = ("gzip", "deflate", "none")
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
RETRYABLE_CODES = frozenset(
    {"UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "ABORTED", "CANCELLED"}
)
#: ``wait(seconds)``: how the backoff waits (a test's is instant).
Wait = Callable[[float], object]
#: ``schedule(seconds, action)``: run ``action`` after ``seconds`` (on another thread or
#: greenlet) unless the returned function, which cancels it, is called first.
Schedule = Callable[[float, Callable[[], None]], Callable[[], None]]


def _timer(seconds: float, action: Callable[[], None]) -> Callable[[], None]:
    timer = threading.Timer(seconds, action)
    timer.daemon = True
    timer.start()
    return timer.cancel


def with_retries(
    attempt: Callable[[float], bool | None],
    timeout_s: float,
    wait: Wait,
    clock: Callable[[], float] = time.monotonic,
    give_up: Callable[[], bool] = lambda: False,
) -> bool:
    """``attempt(seconds_left)`` until it says True (sent) or False (failed for good); ``None``
    (transient) tries again after 1 s, 2 s, 4 s, ... while the next try still starts within
    ``timeout_s`` and ``give_up()`` (shutting down) is false."""
    deadline, delay = clock() + timeout_s, 1.0
    while True:
        outcome = attempt(max(0.0, deadline - clock()))
        if outcome is not None:
            return outcome
        if give_up() or clock() + delay >= deadline:
            return False
        wait(delay)
        delay *= 2


def setting(env: Mapping[str, str], name: str, default: str = "") -> str:
    """``OTEL_EXPORTER_OTLP_TRACES_{name}``, else ``OTEL_EXPORTER_OTLP_{name}``, else
    ``default``."""
    return (
        env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}", "").strip()
        or env.get(f"OTEL_EXPORTER_OTLP_{name}", "").strip()
        or default
    )


def parse_headers(value: str) -> dict[str, str]:
    """``key1=value1,key2=value2`` (W3C baggage form, URL-encoded), keys lower-cased; malformed
    entries are left out with a warning, as the SDK does."""
    headers = {}
    for entry in value.split(","):
        key, equals, item = entry.partition("=")
        key, item = unquote(key).strip().lower(), unquote(item).strip()
        if not entry.strip():
            continue
        if not equals or not key:
            log.warning("OTEL_EXPORTER_OTLP_HEADERS: %r is not key=value; left out", entry)
            continue
        headers[key] = item
    return headers


@dataclass(frozen=True, slots=True)
class ExportSettings:
    """What the variables say, for either protocol."""

    endpoint: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    compression: str = "none"
    certificate: str = ""
    client_key: str = ""
    client_certificate: str = ""
    insecure: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str], protocol: str) -> ExportSettings:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        if not endpoint:
            base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
            if protocol == "grpc":
                endpoint = base or GRPC_DEFAULT
            else:  # the signal's path is added to the general endpoint, as the spec says
                endpoint = f"{(base or HTTP_DEFAULT).removesuffix('/')}/v1/traces"
        compression = setting(env, "COMPRESSION", "none").lower()
        if compression not in COMPRESSIONS:
            log.warning("OTEL_EXPORTER_OTLP_COMPRESSION=%r is unknown: none", compression)
            compression = "none"
        try:
            timeout = float(setting(env, "TIMEOUT", "10"))
        except ValueError:
            log.warning("OTEL_EXPORTER_OTLP_TIMEOUT is not a number; using 10 s")
            timeout = 10.0
        return cls(
            endpoint=endpoint,
            headers=parse_headers(setting(env, "HEADERS")),
            timeout_s=timeout,
            compression=compression,
            certificate=setting(env, "CERTIFICATE"),
            client_key=setting(env, "CLIENT_KEY"),
            client_certificate=setting(env, "CLIENT_CERTIFICATE"),
            insecure=setting(env, "INSECURE").lower(),
        )


def compress(body: bytes, compression: str) -> bytes:
    if compression == "gzip":
        return gzip.compress(body, compresslevel=6)
    if compression == "deflate":
        return zlib.compress(body)
    return body


class HttpSender:
    """OTLP/HTTP with protobuf bodies, on one kept-alive ``http.client`` connection (opened
    again after a failure). Not ``requests``, as the SDK's exporter uses: per request it reads
    the proxy and netrc settings and builds its adapters' state, and that was most of what
    the export thread cost a push (docs/benchmarks.md#tracing)."""

    def __init__(
        self,
        settings: ExportSettings,
        wait: Wait | None = None,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = _timer,
    ) -> None:
        self._settings = settings
        self._finishing = threading.Event()
        self._aborted = False
        self._wait, self._clock, self._schedule = wait or self._finishing.wait, clock, schedule
        url = urlsplit(settings.endpoint)
        self._https = url.scheme == "https"
        self._host, self._port = url.hostname or "localhost", url.port
        self._target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        self._headers = {
            **settings.headers,
            "Content-Type": "application/x-protobuf",
            "Host": url.netloc,
        }
        if settings.compression != "none":
            self._headers["Content-Encoding"] = settings.compression
        self._connection: http.client.HTTPConnection | None = None

    def __call__(self, body: bytes) -> bool:
        if self._aborted:
            return False
        data = compress(body, self._settings.compression)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self._cut()

        def ended() -> bool:
            return self._aborted or expired.is_set()

        cancel = self._schedule(self._settings.timeout_s, expire)
        try:
            return with_retries(
                lambda _: self._post(data, ended),
                self._settings.timeout_s,
                self._wait,
                self._clock,
                give_up=lambda: ended() or self._finishing.is_set(),
            )
        finally:
            cancel()

    def finish(self) -> None:
        """Shutting down: a failed export is not tried again (a backoff under way ends)."""
        self._finishing.set()

    def abort(self) -> None:
        """Give up the export in flight, and every later one, at once."""
        self._aborted = True
        self.finish()
        self._cut()

    def _cut(self) -> None:
        """Shut the connection's socket down under the export reading or writing on it (from
        another thread or greenlet: a ``close`` would not wake a blocked read); that export
        fails with a connection error."""
        connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):  # closed already
                sock.shutdown(socket.SHUT_RDWR)

    def _connect(self) -> http.client.HTTPConnection:
        timeout = self._settings.timeout_s
        if not self._https:
            return http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        context = ssl.create_default_context(cafile=self._settings.certificate or None)
        if self._settings.client_certificate:
            context.load_cert_chain(
                self._settings.client_certificate, self._settings.client_key or None
            )
        return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=context)

    def _post(self, data: bytes, ended: Callable[[], bool]) -> bool | None:
        """One request; ``ended()`` says the export was cut (:meth:`_cut` found no socket yet,
        or shut it down under a read, which may then look like a complete answer)."""
        if self._connection is None:
            self._connection = self._connect()
        connection = self._connection
        try:
            if connection.sock is None:
                connection.connect()
            if ended():
                self._drop(connection)
                return False
            connection.request("POST", self._target, data, self._headers)
            answer = connection.getresponse()
            answer.read()  # the connection is kept for the next batch
            if ended():
                self._drop(connection)
                return False
        except (OSError, http.client.HTTPException) as error:
            log.warning("exporting spans to %s failed: %s", self._settings.endpoint, error)
            self._drop(connection)
            return None
        if 200 <= answer.status < 300:
            return True
        log.warning("%s answered %s", self._settings.endpoint, answer.status)
        return None if answer.status in RETRYABLE_STATUSES else False

    def _drop(self, connection: http.client.HTTPConnection) -> None:
        connection.close()
        if self._connection is connection:
            self._connection = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as file:
        return file.read()


class GrpcSender:
    """OTLP/gRPC: the collector's ``TraceService/Export`` called with the request's bytes."""

    def __init__(
        self,
        settings: ExportSettings,
        wait: Wait | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import grpc  # the otel extra's OTLP/gRPC exporter brings it

        self._finishing = threading.Event()
        self._wait, self._clock = wait or self._finishing.wait, clock
        url = urlparse(settings.endpoint)
        target = url.netloc or settings.endpoint
        insecure = url.scheme == "http"
        if url.scheme != "https" and settings.insecure:
            insecure = settings.insecure == "true"
        compression = {"gzip": grpc.Compression.Gzip, "deflate": grpc.Compression.Deflate}.get(
            settings.compression, grpc.Compression.NoCompression
        )
        if insecure:
            self._channel = grpc.insecure_channel(target, compression=compression)
        else:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(settings.certificate),
                private_key=_read(settings.client_key),
                certificate_chain=_read(settings.client_certificate),
            )
            self._channel = grpc.secure_channel(target, credentials, compression=compression)
        # No serializers: the request is bytes already, the (empty) answer is not read.
        self._export: Callable[..., Any] = self._channel.unary_unary(EXPORT_METHOD)
        self._metadata = tuple(settings.headers.items())
        self._settings = settings
        self._error: type[Exception] = grpc.RpcError

    def __call__(self, body: bytes) -> bool:
        return with_retries(
            self._call_within(body),
            self._settings.timeout_s,
            self._wait,
            self._clock,
            give_up=self._finishing.is_set,
        )

    def finish(self) -> None:
        """Shutting down: a failed export is not tried again (a backoff under way ends)."""
        self._finishing.set()

    def abort(self) -> None:
        """Cancel the call in flight (closing the channel does), and fail every later one."""
        self.finish()
        self._channel.close()

    def _call_within(self, body: bytes) -> Callable[[float], bool | None]:
        return lambda seconds_left: self._call(body, seconds_left)

    def _call(self, body: bytes, seconds_left: float) -> bool | None:
        """One call, its deadline what is left of the export's (the retries' included)."""
        if seconds_left <= 0:
            return False
        try:
            self._export(body, metadata=self._metadata, timeout=seconds_left)
        except self._error as error:
            log.warning("exporting spans to %s failed: %s", self._settings.endpoint, error)
            code = error.code() if callable(getattr(error, "code", None)) else None
            return None if getattr(code, "name", "") in RETRYABLE_CODES else False
        return True

    def close(self) -> None:
        self._channel.close()
