"""Whether the gateway traces, read from OpenTelemetry's own ``OTEL_*`` variables (pure).

Tracing is on when a trace exporter is asked for (``OTEL_TRACES_EXPORTER`` other than ``none``,
or an OTLP endpoint in ``OTEL_EXPORTER_OTLP_ENDPOINT``/``_TRACES_ENDPOINT``) and
``OTEL_SDK_DISABLED`` is not ``true``. Installed but unconfigured means off: the SDK's default
exporter would otherwise send to ``localhost:4318`` and log a failure per batch on every host
that never heard of a collector. Everything else (endpoint, headers, sampler, service name) the
OpenTelemetry SDK reads itself, as it does in any other program (docs/observability.md).

What the gateway cannot do is refused at start, one line naming the variable and what it
supports, as for its own settings (:func:`check_tracing_variables`): an exporter other than
``otlp``, ``console`` or ``none`` (``zipkin`` was taken for ``otlp``), a protocol other than
``http/protobuf`` or ``grpc`` (``http/json`` was sent as protobuf), an endpoint without a scheme
(every export then failed with a misleading error), and compressions, timeouts and batch sizes
the exporter would have replaced by its defaults or could not wait for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from gateway.errors.commands import SettingsError

#: The variables that can turn tracing on; the SDK reads the rest of ``OTEL_*`` itself.
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
EXPORTERS = ("otlp", "console")
PROTOCOLS = ("http/protobuf", "grpc")
COMPRESSIONS = ("gzip", "deflate", "none")
#: ``OTEL_BSP_*`` (milliseconds and counts) and ``OTEL_EXPORTER_OTLP_*TIMEOUT`` (seconds, as the
#: installed SDK reads it): their largest values, far inside what a thread can wait.
NUMBER_LIMITS: Mapping[str, float] = {
    "OTEL_BSP_SCHEDULE_DELAY": 3_600_000,
    "OTEL_BSP_MAX_QUEUE_SIZE": 1_000_000,
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 1_000_000,
    "OTEL_EXPORTER_OTLP_TIMEOUT": 3600,
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": 3600,
}


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
    check_tracing_variables(env, exporters)
    exporter = next((name for name in exporters if name in EXPORTERS), "otlp")
    protocol = next((env[name].strip() for name in PROTOCOL_VARIABLES if env.get(name)), "")
    variables = tuple(sorted((k, v) for k, v in env.items() if k.startswith("OTEL_")))
    return TracingSettings(exporter, "grpc" if protocol == "grpc" else "http/protobuf", variables)


def check_tracing_variables(env: Mapping[str, str], exporters: list[str]) -> None:
    """Raise a :class:`SettingsError` naming the first ``OTEL_*`` variable the gateway's
    tracing cannot follow (tracing is on: the others are nobody's business)."""
    unsupported = [name for name in exporters if name not in EXPORTERS]
    if unsupported:
        raise _refused("OTEL_TRACES_EXPORTER", env, "otlp, console or none")
    for name in PROTOCOL_VARIABLES:
        if (value := env.get(name, "").strip()) and value not in PROTOCOLS:
            raise _refused(name, env, "http/protobuf or grpc")
    grpc = next((env[n].strip() for n in PROTOCOL_VARIABLES if env.get(n, "").strip()), "")
    for name in ENDPOINT_VARIABLES:
        value = env.get(name, "").strip()
        if value and not _endpoint(value, grpc=grpc == "grpc"):
            raise _refused(name, env, _ENDPOINT_RULE)
    for name in ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
        if (value := env.get(name, "").strip()) and value.lower() not in COMPRESSIONS:
            raise _refused(name, env, "gzip, deflate or none")
    for name, largest in NUMBER_LIMITS.items():
        if (value := env.get(name, "").strip()) and not _within(value, largest):
            raise _refused(name, env, f"a number above 0 and at most {largest:.0f}")


_ENDPOINT_RULE = "an http:// or https:// URL with a host (for grpc, also HOST:PORT)"


def _endpoint(value: str, *, grpc: bool) -> bool:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        return False
    if parts.scheme in ("http", "https") and parts.hostname:
        return True
    # gRPC's own form, which its channel takes as it is: a host and a port, no scheme.
    host, colon, port = value.rpartition(":")
    return grpc and bool(colon and host and "/" not in value and port.isdigit())


def _within(value: str, largest: float) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return math.isfinite(number) and 0 < number <= largest


def _refused(name: str, env: Mapping[str, str], supported: str) -> SettingsError:
    return SettingsError(f"{name}={env[name]!r} is not supported by mns-gateway: use {supported}")
