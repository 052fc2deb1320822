"""The tracing seam: what the API and the delivery worker ask of a tracer.

:class:`Tracing` is a typed collaborator, injected like the operation log and the metrics. Its
no-op implementation, :data:`NO_TRACING`, is what runs unless tracing is configured
(:mod:`gateway.config.tracing`); only then does :func:`gateway.observability.tracers.
open_tracing` import :mod:`gateway.observability.otel`, and with it OpenTelemetry (the ``otel``
extra). Without the extra, or with tracing off, no
``opentelemetry`` module is ever imported and every call below is a constant-time no-op.

Contexts cross process boundaries as W3C trace-context headers (``traceparent``,
``tracestate``), so the callers never see an OpenTelemetry type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Final, Protocol

#: What a span attribute may hold (OpenTelemetry's primitive attribute values).
AttributeValue = str | bool | int | float | Sequence[str]
#: A span context as W3C trace-context headers: ``traceparent`` and, optionally, ``tracestate``.
Carrier = Mapping[str, str]

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"
#: Push header naming the message's creation context, so a receiver can link its ``process``
#: span to it (the push's own ``traceparent`` is the attempt's). Not an ``x-mns-*`` header:
#: nothing signed changes.
CREATION_HEADER: Final = "mns-creation-traceparent"


class SpanKind(StrEnum):
    SERVER = "server"
    CLIENT = "client"
    PRODUCER = "producer"
    CONSUMER = "consumer"
    INTERNAL = "internal"


class Span(Protocol):
    """One span, started by :meth:`Tracing.start`; ``end`` it exactly once."""

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add attributes; ``None`` values are left out."""

    def rename(self, name: str) -> None: ...

    def fail(self, error_type: str, description: str = "") -> None:
        """Mark the span failed, with ``error.type`` (low cardinality: an MNS error code, an
        outcome)."""

    def carrier(self) -> dict[str, str]:
        """This span's context as trace-context headers (empty when not recorded)."""

    @property
    def trace_id(self) -> str:
        """32 hex digits, or ``""`` when not traced."""

    def end(self) -> None: ...


class Tracing(Protocol):
    """Starts spans. ``enabled`` is False for the no-op: callers may skip building attributes."""

    @property
    def enabled(self) -> bool: ...

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
        """A span, child of ``parent`` (a span, or a carrier from another process; a carrier
        without a valid ``traceparent`` starts a new trace). ``activate`` makes it this
        thread's current span until it ends, for :meth:`current_carrier`."""

    def current_carrier(self) -> dict[str, str]:
        """The thread's current span as trace-context headers; empty when there is none."""

    def shutdown(self, timeout: float | None = None) -> None:
        """Export what is pending within ``timeout`` seconds (``None``: the exporter's own
        limit), dropping what is not sent by then; called once, at shutdown."""


class _NoSpan:
    __slots__ = ()

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        return None

    def rename(self, name: str) -> None:
        return None

    def fail(self, error_type: str, description: str = "") -> None:
        return None

    def carrier(self) -> dict[str, str]:
        return {}

    @property
    def trace_id(self) -> str:
        return ""

    def end(self) -> None:
        return None


NO_SPAN: Final[Span] = _NoSpan()


class NoTracing:
    """Tracing off: every span is :data:`NO_SPAN`."""

    enabled = False

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
        return NO_SPAN

    def current_carrier(self) -> dict[str, str]:
        return {}

    def shutdown(self, timeout: float | None = None) -> None:
        return None


NO_TRACING: Final[Tracing] = NoTracing()


def trace_id_of(carrier: Carrier) -> str:
    """The trace id (32 hex digits) of a ``traceparent``, or ``""``."""
    parts = carrier.get(TRACEPARENT, "").split("-")
    return parts[1] if len(parts) >= 4 and len(parts[1]) == 32 else ""
