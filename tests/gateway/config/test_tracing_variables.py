"""``OTEL_*`` values the gateway's tracing cannot follow are refused at start like its own
settings, one line naming the variable and what is supported (issue 47): ``zipkin`` was taken
for ``otlp``, ``http/json`` sent as protobuf, and an endpoint without a scheme failed every
export with a misleading error."""

from __future__ import annotations

import pytest

from gateway.config.settings import settings_from_env
from gateway.config.tracing import TracingSettings, tracing_from_env
from gateway.errors.commands import SettingsError

ON = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}


@pytest.mark.parametrize(
    ("env", "variable", "supported"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER", "otlp, console or none"),
        ({"OTEL_TRACES_EXPORTER": "otlp,jaeger"}, "OTEL_TRACES_EXPORTER", "otlp, console"),
        (
            {**ON, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "http/protobuf or grpc",
        ),
        (
            {**ON, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "json"},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "http/protobuf or grpc",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http:// or https:// URL",
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://collector/v1/traces"},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http:// or https:// URL",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:port"},
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http:// or https:// URL",
        ),
        ({**ON, "OTEL_EXPORTER_OTLP_COMPRESSION": "br"}, "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ({**ON, "OTEL_EXPORTER_OTLP_TIMEOUT": "1e300"}, "OTEL_EXPORTER_OTLP_TIMEOUT", "at most"),
        ({**ON, "OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, "OTEL_EXPORTER_OTLP_TIMEOUT", "above 0"),
        ({**ON, "OTEL_BSP_SCHEDULE_DELAY": "soon"}, "OTEL_BSP_SCHEDULE_DELAY", "a number"),
        ({**ON, "OTEL_BSP_MAX_QUEUE_SIZE": "nan"}, "OTEL_BSP_MAX_QUEUE_SIZE", "a number"),
    ],
)
def test_what_tracing_cannot_follow_is_refused(
    env: dict[str, str], variable: str, supported: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        settings_from_env(env)
    message = str(refused.value)
    assert message.startswith(f"{variable}={env[variable]!r} is not supported by mns-gateway: use ")
    assert supported in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector", "OTEL_TRACES_EXPORTER": "otlp"},
        {**ON, "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "2.5"},
        {**ON, "OTEL_BSP_SCHEDULE_DELAY": "500", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "64"},
        {"OTEL_TRACES_EXPORTER": "console,otlp", **ON},
    ],
)
def test_what_it_supports_is_taken(env: dict[str, str]) -> None:
    assert settings_from_env(env).tracing.enabled


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "zipkin"},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},  # no exporter, no endpoint: off
    ],
)
def test_with_tracing_off_nothing_else_is_looked_at(env: dict[str, str]) -> None:
    """Another program's OTEL_* in the same environment does not stop a gateway not tracing."""
    assert tracing_from_env(env) == TracingSettings()
