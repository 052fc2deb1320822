"""The OpenTelemetry side of :mod:`gateway.observability.tracing`: the one module of the gateway
that imports ``opentelemetry`` (an import-linter contract holds it to that), and only when
tracing is configured.

The SDK reads the standard variables itself: ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` (the resource), ``OTEL_TRACES_SAMPLER`` and its argument (the
sampler), ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers, timeout, compression). Spans are exported
in batches on the SDK's own thread, so a request or push never waits for the collector.
"""

from __future__ import annotations

import re
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
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)
from opentelemetry.trace import SpanKind as OtelKind

from gateway.observability.tracing import AttributeValue, Carrier, Span, SpanKind

_KINDS = {
    SpanKind.SERVER: OtelKind.SERVER,
    SpanKind.CLIENT: OtelKind.CLIENT,
    SpanKind.PRODUCER: OtelKind.PRODUCER,
    SpanKind.CONSUMER: OtelKind.CONSUMER,
    SpanKind.INTERNAL: OtelKind.INTERNAL,
}
#: W3C trace context's traceparent: version, trace id, parent id, flags (and, past version 00,
#: more fields). Parsed here rather than by the SDK's propagator: a push attempt reads one per
#: attempt and the propagator's generic path was a tenth of a traced push's CPU.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_ROOT = otel_context.Context()
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
        return _carrier(self._span.get_span_context())

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


def span_context(carrier: Carrier) -> SpanContext | None:
    """The remote span context a carrier names, or ``None`` when its traceparent is missing or
    invalid (W3C trace context: version ff, all-zero ids and a version-00 value with more
    fields are invalid)."""
    match = _TRACEPARENT.fullmatch(carrier.get("traceparent", "").strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    context = SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(int(flags, 16) & TraceFlags.SAMPLED),
        trace_state=TraceState.from_header([carrier["tracestate"]])
        if carrier.get("tracestate")
        else None,
    )
    return context if context.is_valid else None


def _carrier(context: SpanContext) -> dict[str, str]:
    if not context.is_valid:
        return {}
    carrier = {
        "traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-"
        f"{context.trace_flags & TraceFlags.SAMPLED:02x}"
    }
    if context.trace_state:
        carrier["tracestate"] = context.trace_state.to_header()
    return carrier


def _context(parent: Span | Carrier | None) -> otel_context.Context:
    if isinstance(parent, OtelSpan):
        return trace.set_span_in_context(parent.otel_span, _ROOT)
    if isinstance(parent, Mapping) and (remote := span_context(parent)) is not None:
        return trace.set_span_in_context(NonRecordingSpan(remote), _ROOT)
    return _ROOT  # a root: not whatever this thread happens to hold


def _links(carriers: Sequence[Carrier]) -> list[Link]:
    return [Link(context) for carrier in carriers if (context := span_context(carrier))]


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
        return _carrier(trace.get_current_span().get_span_context())

    def shutdown(self) -> None:
        self._provider.shutdown()
