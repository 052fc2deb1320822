"""The OpenTelemetry side of :mod:`gateway.observability.tracing`: the one module of the gateway
that imports ``opentelemetry`` (an import-linter contract holds it to that), and only when
tracing is configured.

The SDK reads the standard variables itself: ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` (the resource), ``OTEL_TRACES_SAMPLER`` and its argument (the
sampler), ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers, timeout, compression). Spans are exported
in batches on the SDK's own thread, so a request or push never waits for the collector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import Link, Status, StatusCode
from opentelemetry.trace import SpanKind as OtelKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.observability.tracing import AttributeValue, Carrier, Span, SpanKind

_KINDS = {
    SpanKind.SERVER: OtelKind.SERVER,
    SpanKind.CLIENT: OtelKind.CLIENT,
    SpanKind.PRODUCER: OtelKind.PRODUCER,
    SpanKind.CONSUMER: OtelKind.CONSUMER,
    SpanKind.INTERNAL: OtelKind.INTERNAL,
}
_PROPAGATOR = TraceContextTextMapPropagator()
INSTRUMENTATION = "mns-push.gateway"


def _exporter(exporter: str, protocol: str) -> SpanExporter:
    if exporter == "console":
        return ConsoleSpanExporter()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
            OTLPSpanExporter,
        )
    return OTLPSpanExporter()


def _attributes(attributes: Mapping[str, AttributeValue | None] | None) -> dict[str, Any]:
    return {k: v for k, v in (attributes or {}).items() if v is not None}


class OtelSpan:
    __slots__ = ("_span", "_token")

    def __init__(self, span: trace.Span, token: object | None) -> None:
        self._span = span
        self._token = token

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        self._span.set_attributes(_attributes(attributes))

    def rename(self, name: str) -> None:
        self._span.update_name(name)

    def fail(self, error_type: str, description: str = "") -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, description or error_type))

    def carrier(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(self._span))
        return carrier

    @property
    def trace_id(self) -> str:
        context = self._span.get_span_context()
        return trace.format_trace_id(context.trace_id) if context.is_valid else ""

    @property
    def otel_span(self) -> trace.Span:
        return self._span

    def end(self) -> None:
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        self._span.end()


def _context(parent: Span | Carrier | None) -> otel_context.Context | None:
    if parent is None:
        return otel_context.Context()  # a root: not whatever this thread happens to hold
    if isinstance(parent, OtelSpan):
        return trace.set_span_in_context(parent.otel_span)
    if isinstance(parent, Mapping):
        return _PROPAGATOR.extract(parent, context=otel_context.Context())
    return otel_context.Context()  # a no-op span: nothing to be a child of


def _links(carriers: Sequence[Carrier]) -> list[Link]:
    links = []
    for carrier in carriers:
        context = trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
        if context.is_valid:
            links.append(Link(context))
    return links


class OtelTracing:
    """Spans of an SDK tracer provider of the gateway's own (not the process-global one, so
    tests can run gateways side by side)."""

    enabled = True

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)

    @classmethod
    def configured(cls, exporter: str, protocol: str, service_name: str) -> OtelTracing:
        """Exporting with ``exporter`` (``otlp`` over ``protocol``, or ``console``)."""
        # The variables win over the default name, as the SDK documents.
        resource = Resource.create({"service.name": service_name}).merge(
            OTELResourceDetector().detect()
        )
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(_exporter(exporter, protocol)))
        return cls(provider)

    def start(
        self,
        name: str,
        kind: SpanKind,
        *,
        parent: Span | Carrier | None = None,
        links: Sequence[Carrier] = (),
        attributes: Mapping[str, AttributeValue | None] | None = None,
        start_ns: int | None = None,
        activate: bool = False,
    ) -> Span:
        span = self._tracer.start_span(
            name,
            context=_context(parent),
            kind=_KINDS[kind],
            attributes=_attributes(attributes),
            links=_links(links),
            start_time=start_ns,
        )
        token = otel_context.attach(trace.set_span_in_context(span)) if activate else None
        return OtelSpan(span, token)

    def current_carrier(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier

    def shutdown(self) -> None:
        self._provider.shutdown()
