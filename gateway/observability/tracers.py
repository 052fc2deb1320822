"""Which tracer a process gets: the no-op one, or OpenTelemetry's when ``OTEL_*`` asks for traces.
Apart from :mod:`gateway.observability.tracing` so that OpenTelemetry's side
(:mod:`gateway.observability.otel`), which implements that seam, is imported from here only.
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.errors.commands import TracingUnavailableError
from gateway.observability.tracing import NO_TRACING, Tracing


def open_tracing(
    exporter: str,
    protocol: str,
    service_name: str,
    variables: Mapping[str, str] | None = None,
) -> Tracing:
    """The tracer asked for (:class:`gateway.config.tracing.TracingSettings`' exporter,
    protocol and ``OTEL_*`` variables): :data:`NO_TRACING` for exporter ``none``, else
    OpenTelemetry's (which needs the ``otel`` extra; without it, a
    :class:`TracingUnavailableError`)."""
    if exporter == "none":
        return NO_TRACING
    try:
        from gateway.observability.otel import configured  # only now: the optional extra
    except ImportError as error:
        raise TracingUnavailableError(
            "OTEL_* asks for traces but OpenTelemetry is not installed: "
            "pip install 'mns-push[otel]' (or unset OTEL_TRACES_EXPORTER and the OTLP endpoint)"
        ) from error
    return configured(exporter, protocol, service_name, variables or {})
