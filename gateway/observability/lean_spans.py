"""The gateway's spans, recorded by hand: the :class:`~gateway.observability.tracing.Tracing`
seam implemented with a plain slotted record per span instead of the OpenTelemetry SDK's
``Span`` (pure: no ``opentelemetry`` import, no IO; the sampler, the ids, the clock and where an
ended span goes are injected by :mod:`gateway.observability.otel`).

Why: the SDK's span checks every attribute's type on every ``set``, builds its context objects
and runs its processor chain, much of what tracing added to a push; this record costs a small
part of that (docs/benchmarks.md#tracing). What it keeps of the SDK's behaviour: the
sampler decides (and a sampler's attributes and trace state are kept), unsampled spans are not
recorded and propagate flags ``00``, ``None`` attribute values are left out, a span ends once,
``set`` after ``end`` is ignored, W3C trace context in and out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Final, NamedTuple

from gateway.observability.tracing import (
    TRACEPARENT,
    TRACESTATE,
    AttributeValue,
    Carrier,
    Span,
    SpanKind,
)
from gateway.protocol.trace_context import normalized_tracestate as valid_trace_state
from gateway.protocol.trace_context import parse_traceparent

_PARSED: dict[str, SpanContext | None] = {}
_PARSED_LIMIT: Final = 4096
_UNKNOWN: Final = object()


class SpanContext(NamedTuple):
    """A span's identity as trace context carries it (a tuple: the cheapest record to make,
    one per span)."""

    trace_id: int
    span_id: int
    sampled: bool
    remote: bool = False
    trace_state: str = ""


@dataclass(frozen=True, slots=True)
class Sampling:
    """A sampler's decision: record and export, plus what it adds."""

    sampled: bool
    attributes: Mapping[str, AttributeValue] | None = None
    trace_state: str | None = None  # None: the parent's


#: (parent or None, new trace id, name, kind, attributes, links) -> decision.
Sampler = Callable[
    [SpanContext | None, int, str, SpanKind, Mapping[str, AttributeValue], Sequence[SpanContext]],
    Sampling,
]
SAMPLED: Final = Sampling(True)
DROPPED: Final = Sampling(False)


def always_on(*_: object) -> Sampling:
    """The SDK's ``always_on``."""
    return SAMPLED


def parent_or_always_on(parent: SpanContext | None, *_: object) -> Sampling:
    """The SDK's default, ``parentbased_always_on``: the parent's decision, else sampled."""
    return SAMPLED if parent is None or parent.sampled else DROPPED


def remote_context(carrier: Carrier) -> SpanContext | None:
    """The remote span context a carrier names, or ``None`` when its traceparent is missing or
    invalid (W3C trace context: version ff, all-zero ids and a version-00 value with more
    fields are invalid)."""
    traceparent = carrier.get(TRACEPARENT, "")
    state = carrier.get(TRACESTATE)
    if not state:
        # A message fanned out to N subscriptions is pushed N times with one traceparent (and
        # retried with it): parsed once. Bounded, and cleared when full.
        known = _PARSED.get(traceparent, _UNKNOWN)
        if known is _UNKNOWN:
            if len(_PARSED) >= _PARSED_LIMIT:
                _PARSED.clear()
            known = _PARSED[traceparent] = _parse(traceparent, "")
        return known  # type: ignore[return-value]
    return _parse(traceparent, state)


def _parse(traceparent: str, state: str) -> SpanContext | None:
    parsed = parse_traceparent(traceparent)
    if parsed is None:
        return None
    return SpanContext(
        parsed.trace_id,
        parsed.parent_id,
        parsed.sampled,
        True,
        valid_trace_state(state) if state else "",
    )


def carrier_of(context: SpanContext) -> dict[str, str]:
    carrier = {
        TRACEPARENT: f"00-{context.trace_id:032x}-{context.span_id:016x}-"
        f"{'01' if context.sampled else '00'}"
    }
    if context.trace_state:
        carrier[TRACESTATE] = context.trace_state
    return carrier


class UnsampledSpan:
    """A span the sampler dropped: it carries its context on (flags ``00``) and records
    nothing."""

    __slots__ = ("_current", "_token", "context")

    def __init__(self, context: SpanContext, current: ContextVar[Span | None]) -> None:
        self.context = context
        self._current = current
        self._token: Token[Span | None] | None = None

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        return None

    def rename(self, name: str) -> None:
        return None

    def fail(self, error_type: str, description: str = "") -> None:
        return None

    def carrier(self) -> dict[str, str]:
        return carrier_of(self.context)  # a new dict each time: callers add to it

    @property
    def trace_id(self) -> str:
        return f"{self.context.trace_id:032x}"

    def end(self) -> None:
        if self._token is not None:
            self._current.reset(self._token)
            self._token = None


class RecordedSpan(UnsampledSpan):
    """A sampled span: what :func:`gateway.observability.otlp_wire.encode_span` writes.
    Handed to the tracing's sink once, when it ends."""

    __slots__ = (
        "_tracing",
        "attributes",
        "end_ns",
        "error",
        "kind",
        "links",
        "name",
        "parent_remote",
        "parent_span_id",
        "start_ns",
    )

    def __init__(
        self,
        tracing: LeanTracing,
        context: SpanContext,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        start_ns: int,
    ) -> None:
        self.context = context  # UnsampledSpan's, set here: one call fewer per span
        self._current = tracing.current
        self._token = None
        self._tracing: LeanTracing | None = tracing
        self.name = name
        self.kind = kind.value
        self.parent_span_id = parent.span_id if parent else 0
        self.parent_remote = parent.remote if parent else False
        self.start_ns = start_ns
        self.end_ns = 0
        self.attributes: dict[str, object] = {}
        self.links: Sequence[SpanContext] = ()
        self.error: str | None = None  # the status description when the span failed

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        if self._tracing is not None:
            own = self.attributes
            for key, value in attributes.items():
                if value is not None:
                    own[key] = value

    def rename(self, name: str) -> None:
        if self._tracing is not None:
            self.name = name

    def fail(self, error_type: str, description: str = "") -> None:
        if self._tracing is not None:
            self.attributes["error.type"] = error_type
            self.error = description or error_type

    def end(self) -> None:
        super().end()
        tracing, self._tracing = self._tracing, None
        if tracing is not None:
            self.end_ns = tracing.clock_ns()
            tracing.sink(self)


class LeanTracing:
    """Spans as :class:`RecordedSpan` records; ``sink`` gets each sampled span as it ends
    (:class:`gateway.observability.span_batches.SpanBatcher`)."""

    enabled = True

    def __init__(
        self,
        *,
        sampler: Sampler,
        new_trace_id: Callable[[], int],
        new_span_id: Callable[[], int],
        sink: Callable[[RecordedSpan], None],
        close: Callable[[float | None], None] = lambda timeout: None,
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.sampler = sampler
        self.new_trace_id = new_trace_id
        self.new_span_id = new_span_id
        self.sink = sink
        self.clock_ns = clock_ns
        self._close = close
        #: This tracing's current span, per thread (and per context): set by ``activate``.
        self.current: ContextVar[Span | None] = ContextVar(f"span-{id(self)}", default=None)

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
        parent_context = _parent(parent)
        linked = [
            context
            for carrier in links
            # a push links to the context it is a child of: parsed once
            if (context := parent_context if carrier is parent else remote_context(carrier))
        ]
        given = _present(attributes)
        trace_id = parent_context.trace_id if parent_context else self.new_trace_id()
        sampler = self.sampler
        decision = (  # always_on, the bench's and a full trace's: not even a call
            SAMPLED
            if sampler is always_on
            else sampler(parent_context, trace_id, name, kind, given, linked)
        )
        state = decision.trace_state
        if state is None:
            state = parent_context.trace_state if parent_context else ""
        context = SpanContext(trace_id, self.new_span_id(), decision.sampled, False, state)
        span: UnsampledSpan
        if decision.sampled:
            span = recorded = RecordedSpan(
                self, context, name, kind, parent_context, start_ns or self.clock_ns()
            )
            recorded.attributes = {**given, **decision.attributes} if decision.attributes else given
            recorded.links = linked
        else:
            span = UnsampledSpan(context, self.current)
        if activate:
            span._token = self.current.set(span)
        return span

    def current_carrier(self) -> dict[str, str]:
        span = self.current.get()
        return span.carrier() if span is not None else {}

    def shutdown(self, timeout: float | None = None) -> None:
        self._close(timeout)


def _present(attributes: Mapping[str, AttributeValue | None] | None) -> dict[str, object]:
    """A copy of ``attributes`` without its ``None`` values (copied in C when there are none,
    as on a push's span)."""
    if not attributes:
        return {}
    if None not in attributes.values():
        return dict(attributes)
    return {key: value for key, value in attributes.items() if value is not None}


def _parent(parent: Span | Carrier | None) -> SpanContext | None:
    if isinstance(parent, UnsampledSpan):
        return parent.context
    if isinstance(parent, dict | Mapping):  # dict first: the ABC's check is slower
        return remote_context(parent)
    return None  # a root: not whatever this thread happens to hold
