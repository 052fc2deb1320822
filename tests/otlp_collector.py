"""Local OTLP trace receivers for tests: over HTTP (``POST /v1/traces``) and gRPC
(``TraceService/Export``), requests decoded with ``opentelemetry-proto``, every span kept as a
plain :class:`ReceivedSpan` and each request's headers (or gRPC metadata) beside them."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

#: ``Span.SpanKind`` numbers of the protocol.
KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    links: list[tuple[str, str]] = field(default_factory=list)  # (trace id, span id)
    error: bool = False
    resource: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def decode(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest.FromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        service=str(resource.get("service.name", "")),
                        name=span.name,
                        kind=KINDS.get(span.kind, "unspecified"),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                        error=span.status.code == 2,  # STATUS_CODE_ERROR
                        resource=resource,
                    )
                )
    return spans


class _Collector:
    def __init__(self, decode_at_once: bool = True) -> None:
        #: False: requests are kept as bytes and decoded by :meth:`all_spans` (a benchmark's
        #: collector, whose decoding would otherwise compete for the CPU it measures).
        self.decode_at_once = decode_at_once
        self.bodies: list[bytes] = []
        self.spans: list[ReceivedSpan] = []
        #: Each export request's headers (HTTP, lower-cased names) or metadata (gRPC).
        self.headers: list[dict[str, str]] = []
        #: How many export requests to refuse next, as a collector that is busy (HTTP 503,
        #: gRPC UNAVAILABLE) refuses them.
        self.refuse_next = 0
        self._arrived = threading.Condition()

    def _refused(self) -> bool:
        with self._arrived:
            if self.refuse_next <= 0:
                return False
            self.refuse_next -= 1
            return True

    def _take(self, body: bytes, headers: dict[str, str]) -> None:
        if self.decode_at_once:
            self._received(decode(body), headers)
        else:
            with self._arrived:
                self.bodies.append(body)

    def all_spans(self) -> list[ReceivedSpan]:
        """Every span so far, the kept requests' decoded now."""
        with self._arrived:
            bodies, spans = list(self.bodies), list(self.spans)
        return spans + [span for body in bodies for span in decode(body)]

    def _received(self, spans: list[ReceivedSpan], headers: dict[str, str]) -> None:
        with self._arrived:
            self.spans.extend(spans)
            self.headers.append(headers)
            self._arrived.notify_all()

    def wait_for(
        self, found: Callable[[list[ReceivedSpan]], bool], timeout: float = 20
    ) -> list[ReceivedSpan]:
        """The spans so far, once ``found`` says they are enough (else an AssertionError)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while not found(self.spans):
                left = deadline - time.monotonic()
                assert left > 0, f"spans never arrived; got {[s.name for s in self.spans]}"
                self._arrived.wait(left)
            return list(self.spans)


class OtlpCollector(_Collector):
    """Listens on 127.0.0.1; ``endpoint`` is what ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes."""

    protocol = "http/protobuf"

    def __init__(self, decode_at_once: bool = True) -> None:
        super().__init__(decode_at_once)
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # kept alive, as exporters' sessions keep it

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if collector._refused():
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                encoding = self.headers.get("Content-Encoding")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                headers = {name.lower(): value for name, value in self.headers.items()}
                if self.path == "/v1/traces":
                    collector._take(body, headers)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    def __enter__(self) -> OtlpCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


class GrpcOtlpCollector(_Collector):
    """OTLP/gRPC on 127.0.0.1 (insecure); ``endpoint`` is ``http://127.0.0.1:PORT``."""

    protocol = "grpc"

    def __init__(self, decode_at_once: bool = True) -> None:
        import grpc

        super().__init__(decode_at_once)

        def export(request: bytes, context: grpc.ServicerContext) -> bytes:
            if self._refused():
                context.abort(grpc.StatusCode.UNAVAILABLE, "busy")
            metadata = {item.key: item.value for item in context.invocation_metadata()}
            self._take(request, metadata)
            return ExportTraceServiceResponse().SerializeToString()

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},  # bytes in, bytes out
        )
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self._server.add_generic_rpc_handlers((handler,))
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"

    def __enter__(self) -> GrpcOtlpCollector:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)


class TricklingCollector:
    """A collector that accepts every connection, reads what it is sent, and answers one byte
    every ``every`` seconds, never finishing the answer: each read of an exporter waiting for it
    succeeds within its timeout, so only an overall deadline ends the export. ``endpoint`` is
    what ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes; ``connections`` counts those accepted. Every
    loop is bounded by ``__exit__``."""

    def __init__(self, every: float = 0.2) -> None:
        import socket

        self.every = every
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._trickle, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _trickle(self, connection: Any) -> None:
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nX-Slow: "
        with connection:
            connection.settimeout(self.every)
            sent = 0
            while not self._stopped.wait(self.every):
                try:
                    connection.recv(65536)  # whatever was sent; the answer never ends
                except TimeoutError:
                    pass
                except OSError:
                    return
                try:
                    connection.sendall(answer[sent : sent + 1] if sent < len(answer) else b"x")
                except OSError:
                    return
                sent += 1

    def __enter__(self) -> TricklingCollector:
        thread = threading.Thread(target=self._accept, daemon=True)
        self._threads.append(thread)
        thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(5)
