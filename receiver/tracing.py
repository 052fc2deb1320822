"""A ``process`` span per verified push (docs/receiver.md#tracing), with the OpenTelemetry API
(the receiver's ``otel`` extra); imported only by an :class:`~receiver.MNSReceiver` built with
``tracing=True``, so a receiver without it never imports ``opentelemetry``.

By the messaging conventions' default the span is a child of the HTTP server span (the current
span, e.g. Flask's instrumentation's; without one, the push's own ``traceparent``: the gateway's
attempt) and links to the message's creation context, which an mns-push gateway sends as
``mns-creation-traceparent``. With ``trace_parent="creation"`` (the conventions' opt-in
parent-child mode) the creation context is the parent and the HTTP context the link.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from receiver.notification import Notification

CREATION_HEADER = "mns-creation-traceparent"
INSTRUMENTATION = "mns-push.receiver"
_PROPAGATOR = TraceContextTextMapPropagator()


class PushSpan:
    """The span of one push, from its arrival to its answer."""

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def notification(self, notification: Notification) -> None:
        self._span.update_name(f"process {notification.topic_name}")
        self._span.set_attributes(
            {
                "messaging.system": "smq",
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": notification.topic_name,
                "messaging.destination.subscription.name": notification.subscription_name,
                "messaging.message.id": notification.message_id,
            }
        )
        if notification.message_tag:
            self._span.set_attribute("messaging.smq.message.tag", notification.message_tag)

    def refused(self, reason: str, description: str) -> None:
        self._span.set_attribute("error.type", reason)
        self._span.set_status(Status(StatusCode.ERROR, description))

    def answered(self, status: int, outcome: str) -> None:
        self._span.set_attribute("http.response.status_code", status)
        self._span.set_attribute("messaging.smq.handler.outcome", outcome)
        if status >= 400 and self._span.is_recording():
            self._span.set_attribute("error.type", outcome)
            self._span.set_status(Status(StatusCode.ERROR, outcome))

    def end(self) -> None:
        self._span.end()


def _span_context(carrier: Mapping[str, str]) -> trace.SpanContext | None:
    context = trace.get_current_span(
        _PROPAGATOR.extract(carrier, context=otel_context.Context())
    ).get_span_context()
    return context if context.is_valid else None


class PushTracer:
    """Starts :class:`PushSpan` s on ``tracer_provider`` (the global one by default)."""

    def __init__(self, tracer_provider: Any = None, trace_parent: str = "http") -> None:
        if trace_parent not in ("http", "creation"):
            raise ValueError(f"trace_parent must be 'http' or 'creation', not {trace_parent!r}")
        self._tracer = trace.get_tracer(INSTRUMENTATION, tracer_provider=tracer_provider)
        self._creation_parent = trace_parent == "creation"

    def start(self, headers: Mapping[str, str]) -> PushSpan:
        """``headers``: the push's, lowercased."""
        current = trace.get_current_span().get_span_context()
        http = current if current.is_valid else _span_context(headers)
        creation = _span_context({"traceparent": headers.get(CREATION_HEADER, "")})
        parent, link = (creation, http) if self._creation_parent else (http, creation)
        context = (
            trace.set_span_in_context(trace.NonRecordingSpan(parent))
            if parent is not None
            else otel_context.Context()
        )
        span = self._tracer.start_span(
            "process",
            context=context,
            kind=SpanKind.CONSUMER,
            links=[Link(link)] if link is not None else [],
        )
        return PushSpan(span)


class SpanRecorder:
    """An OpenTelemetry SDK tracer provider whose spans are kept in memory, for tests
    (:func:`receiver.testing.span_recorder`; needs ``opentelemetry-sdk``)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[Any]:
        """The finished spans (``ReadableSpan``), oldest first."""
        return list(self.exporter.get_finished_spans())

    def attributes(self) -> list[dict[str, Any]]:
        """Each finished span's name, status and attributes, as plain dicts."""
        return [
            {
                "name": span.name,
                "status": span.status.status_code.name,
                "trace_id": trace.format_trace_id(span.context.trace_id),
                "parent_span_id": trace.format_span_id(span.parent.span_id)
                if span.parent
                else None,
                "links": [trace.format_span_id(link.context.span_id) for link in span.links],
                **dict(span.attributes or {}),
            }
            for span in self.spans()
        ]
