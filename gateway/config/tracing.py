"""Whether the gateway traces, read from OpenTelemetry's own ``OTEL_*`` variables (pure).

Tracing is on when a trace exporter is asked for (``OTEL_TRACES_EXPORTER`` other than ``none``,
or an OTLP endpoint in ``OTEL_EXPORTER_OTLP_ENDPOINT``/``_TRACES_ENDPOINT``) and
``OTEL_SDK_DISABLED`` is not ``true``. Installed but unconfigured means off: the SDK's default
exporter would otherwise send to ``localhost:4318`` and log a failure per batch on every host
that never heard of a collector. Everything else (endpoint, headers, sampler, service name) the
OpenTelemetry SDK reads itself, as it does in any other program (docs/observability.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: The variables that can turn tracing on; the SDK reads the rest of ``OTEL_*`` itself.
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
EXPORTERS = ("otlp", "console")


@dataclass(frozen=True, slots=True)
class TracingSettings:
    """``exporter``: ``otlp``, ``console`` or ``none`` (off); ``protocol``: OTLP over
    ``http/protobuf`` (the default) or ``grpc``; ``variables``: every ``OTEL_*`` variable, for
    the gateway's OTLP exporter (endpoint, headers, compression, timeout, TLS, batching:
    gateway/observability/otlp_transports.py and span_batches.py read them from here)."""

    exporter: str = "none"
    protocol: str = "http/protobuf"
    variables: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def enabled(self) -> bool:
        return self.exporter != "none"


def tracing_from_env(env: Mapping[str, str]) -> TracingSettings:
    """What ``env``'s ``OTEL_*`` variables ask for; unknown exporters count as ``otlp``, the
    SDK's default, rather than failing the start of a gateway over its tracing."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TracingSettings()
    exporters = [name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
    exporters = [name for name in exporters if name]
    if "none" in exporters:
        return TracingSettings()
    endpoint = any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)
    if not exporters and not endpoint:
        return TracingSettings()
    exporter = next((name for name in exporters if name in EXPORTERS), "otlp")
    protocol = next((env[name].strip() for name in PROTOCOL_VARIABLES if env.get(name)), "")
    variables = tuple(sorted((k, v) for k, v in env.items() if k.startswith("OTEL_")))
    return TracingSettings(exporter, "grpc" if protocol == "grpc" else "http/protobuf", variables)
