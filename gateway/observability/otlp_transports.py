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
"""

from __future__ import annotations

import gzip
import http.client
import logging
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


def _pause(seconds: float) -> object:
    return threading.Event().wait(seconds)


def with_retries(
    attempt: Callable[[], bool | None],
    timeout_s: float,
    wait: Wait = _pause,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """``attempt()`` until it says True (sent) or False (failed for good); ``None`` (transient)
    tries again after 1 s, 2 s, 4 s, ... while the next try still starts within ``timeout_s``."""
    deadline, delay = clock() + timeout_s, 1.0
    while True:
        outcome = attempt()
        if outcome is not None:
            return outcome
        if clock() + delay >= deadline:
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
        wait: Wait = _pause,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._wait, self._clock = wait, clock
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
        data = compress(body, self._settings.compression)
        return with_retries(
            lambda: self._post(data), self._settings.timeout_s, self._wait, self._clock
        )

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

    def _post(self, data: bytes) -> bool | None:
        if self._connection is None:
            self._connection = self._connect()
        try:
            self._connection.request("POST", self._target, data, self._headers)
            answer = self._connection.getresponse()
            answer.read()  # the connection is kept for the next batch
        except (OSError, http.client.HTTPException) as error:
            log.warning("exporting spans to %s failed: %s", self._settings.endpoint, error)
            self.close()
            return None
        if 200 <= answer.status < 300:
            return True
        log.warning("%s answered %s", self._settings.endpoint, answer.status)
        return None if answer.status in RETRYABLE_STATUSES else False

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
        wait: Wait = _pause,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import grpc  # the otel extra's OTLP/gRPC exporter brings it

        self._wait, self._clock = wait, clock
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
            lambda: self._call(body), self._settings.timeout_s, self._wait, self._clock
        )

    def _call(self, body: bytes) -> bool | None:
        try:
            self._export(body, metadata=self._metadata, timeout=self._settings.timeout_s)
        except self._error as error:
            log.warning("exporting spans to %s failed: %s", self._settings.endpoint, error)
            code = error.code() if callable(getattr(error, "code", None)) else None
            return None if getattr(code, "name", "") in RETRYABLE_CODES else False
        return True

    def close(self) -> None:
        self._channel.close()
