"""The OpenTelemetry side of :mod:`gateway.observability.tracing`: the one module of the gateway
that imports ``opentelemetry`` (an import-linter contract holds it to that), and only when
tracing is configured.

The SDK reads the standard variables itself: ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` (the resource), ``OTEL_TRACES_SAMPLER`` and its argument (the
sampler), the id generator. With the OTLP exporter (the default, and the one that matters for
cost) the spans themselves are the gateway's own lean records
(:mod:`~gateway.observability.lean_spans`), encoded straight to OTLP protobuf
(:mod:`~gateway.observability.otlp_wire`) in batches on a thread of their own
(:mod:`~gateway.observability.span_batches`, the ``OTEL_BSP_*`` variables) and sent as the
``OTEL_EXPORTER_OTLP_*`` variables say (:mod:`~gateway.observability.otlp_transports`): the
SDK's span and encoder were most of a traced push's extra CPU (docs/benchmarks.md#tracing). The
``console`` exporter, a debugging aid, keeps the SDK's spans and its printer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, DEFAULT_ON
from opentelemetry.sdk.trace.sampling import Sampler as OtelSampler
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

from gateway.observability import lean_spans
from gateway.observability.lean_spans import LeanTracing, Sampler, Sampling, remote_context
from gateway.observability.otlp_transports import ExportSettings, GrpcSender, HttpSender
from gateway.observability.otlp_wire import encode_resource, encode_scope
from gateway.observability.span_batches import BatchSettings, SpanBatcher
from gateway.observability.tracing import AttributeValue, Carrier, Span, SpanKind, Tracing

_KINDS = {
    SpanKind.SERVER: OtelKind.SERVER,
    SpanKind.CLIENT: OtelKind.CLIENT,
    SpanKind.PRODUCER: OtelKind.PRODUCER,
    SpanKind.CONSUMER: OtelKind.CONSUMER,
    SpanKind.INTERNAL: OtelKind.INTERNAL,
}
_ROOT = otel_context.Context()
INSTRUMENTATION = "mns-push.gateway"


def configured(
    exporter: str, protocol: str, service_name: str, variables: Mapping[str, str]
) -> Tracing:
    """Exporting with ``exporter`` (``otlp`` over ``protocol``, or ``console``); the OTLP
    exporter's settings from ``variables`` (``OTEL_*``, as settings read them)."""
    # The variables win over the default name, as the SDK documents.
    resource = Resource.create({"service.name": service_name}).merge(
        OTELResourceDetector().detect()
    )
    provider = TracerProvider(resource=resource)  # the sampler and ids, from OTEL_* too
    if exporter == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        return OtelTracing(provider)
    return lean_tracing(provider, protocol, variables)


def lean_tracing(provider: TracerProvider, protocol: str, env: Mapping[str, str]) -> LeanTracing:
    """The provider's resource, sampler and id generator, with the gateway's own spans,
    batches and OTLP transport."""
    settings = ExportSettings.from_env(env, protocol)
    send = GrpcSender(settings) if protocol == "grpc" else HttpSender(settings)
    batcher = SpanBatcher(
        send,
        encode_resource(dict(provider.resource.attributes)),
        encode_scope(INSTRUMENTATION),
        BatchSettings.from_env(env),
        provider.resource.schema_url,
        finish=send.finish,
        abort=send.abort,
    )

    def close(timeout: float | None = None) -> None:
        # The last spans get one export's time at most, and never more than the caller has
        # left: a slow collector does not keep a stopping process for its graceful timeout.
        batcher.close(settings.timeout_s if timeout is None else min(timeout, settings.timeout_s))
        send.close()
        provider.shutdown()

    ids = provider.id_generator
    return LeanTracing(
        sampler=sampler_of(provider.sampler),
        new_trace_id=ids.generate_trace_id,
        new_span_id=ids.generate_span_id,
        sink=batcher.add,
        close=close,
    )


def sampler_of(sampler: OtelSampler) -> Sampler:
    """The SDK's sampler as the lean spans ask it; its two defaults (``always_on`` and
    ``parentbased_always_on``) without building the SDK's context objects per span."""
    if sampler is ALWAYS_ON:
        return lean_spans.always_on
    if sampler is DEFAULT_ON:
        return lean_spans.parent_or_always_on

    def sample(
        parent: lean_spans.SpanContext | None,
        trace_id: int,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, AttributeValue],
        links: Sequence[lean_spans.SpanContext],
    ) -> Sampling:
        context = (
            trace.set_span_in_context(NonRecordingSpan(_otel_context(parent)), _ROOT)
            if parent
            else _ROOT
        )
        result = sampler.should_sample(
            context,
            trace_id,
            name,
            _KINDS[kind],
            attributes,  # type: ignore[arg-type]
            [Link(_otel_context(link)) for link in links],
        )
        state = result.trace_state.to_header() if result.trace_state is not None else None
        return Sampling(result.decision.is_sampled(), result.attributes or None, state)

    return sample


def _otel_context(context: lean_spans.SpanContext) -> SpanContext:
    return SpanContext(
        context.trace_id,
        context.span_id,
        is_remote=context.remote,
        trace_flags=TraceFlags(TraceFlags.SAMPLED if context.sampled else 0),
        trace_state=TraceState.from_header([context.trace_state]) if context.trace_state else None,
    )


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
    invalid (:func:`gateway.observability.lean_spans.remote_context`)."""
    context = remote_context(carrier)
    return _otel_context(context) if context else None


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
    tests can run gateways side by side): the ``console`` exporter's."""

    enabled = True

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)

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

    def shutdown(self, timeout: float | None = None) -> None:
        # The console exporter prints: nothing to wait for past the SDK's own flush.
        self._provider.shutdown()
