"""The tracing seam (issue 37): what turns it on, that nothing of OpenTelemetry is imported
without it, and the creation context a message carries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config.tracing import TracingSettings, tracing_from_env
from gateway.protocol.properties import trace_context, with_trace_context

REPO = Path(__file__).resolve().parents[3]
PUBLISHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
GATEWAY = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, TracingSettings()),  # installed but unconfigured: off
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, TracingSettings("otlp")),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"},
            TracingSettings("otlp"),
        ),
        ({"OTEL_TRACES_EXPORTER": "console"}, TracingSettings("console")),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            TracingSettings("otlp", "grpc"),
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",  # the traces' own wins
            },
            TracingSettings("otlp", "grpc"),
        ),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}, TracingSettings()),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, TracingSettings()),
    ],
)
def test_the_standard_variables_turn_tracing_on(env: dict[str, str], expected: object) -> None:
    assert tracing_from_env(env) == expected


def test_a_publishers_context_is_kept_untouched() -> None:
    mine = {"SystemProperties": [{"Name": "traceparent", "Type": "STRING", "Value": PUBLISHER}]}
    assert with_trace_context(mine, {"traceparent": GATEWAY}) == mine
    assert trace_context(mine) == {"traceparent": PUBLISHER}


def test_the_gateways_context_is_added_beside_other_properties() -> None:
    properties = {
        "UserProperties": [{"Name": "k", "Type": "STRING", "Value": "v"}],
        "SystemProperties": [
            {"Name": "baggage", "Type": "STRING", "Value": "a=1"},
            {"Name": "tracestate", "Type": "STRING", "Value": "stale=1"},  # without a parent
        ],
    }
    carried = with_trace_context(properties, {"traceparent": GATEWAY, "tracestate": "g=1"})
    assert carried["UserProperties"] == properties["UserProperties"]
    assert carried["SystemProperties"] == [
        {"Name": "baggage", "Type": "STRING", "Value": "a=1"},
        {"Name": "traceparent", "Type": "STRING", "Value": GATEWAY},
        {"Name": "tracestate", "Type": "STRING", "Value": "g=1"},
    ]
    assert with_trace_context({}, {}) == {}  # not traced: nothing added


BLOCK_OPENTELEMETRY = """
import importlib.abc, sys

class NoOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError(f"{name} is not installed (blocked by the test)")
        return None

sys.meta_path.insert(0, NoOpenTelemetry())
"""

SERVE_A_REQUEST = """
import sys, tempfile
from pathlib import Path
from gateway.composition import build_app, build_runtime
from gateway.config.settings import settings_from_env
from receiver import MNSReceiver

settings = settings_from_env().with_overrides(data_dir=Path(tempfile.mkdtemp()))
runtime = build_runtime(settings, with_worker=True)
app = build_app(settings, runtime)
assert "x-mns-request-id" in app.test_client().put("/queues/q").headers  # every hook ran
MNSReceiver()
runtime.close()
loaded = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
print(loaded)
assert not loaded, loaded
"""


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**base, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("blocked", [True, False], ids=["not installed", "installed but off"])
def test_without_tracing_no_opentelemetry_module_is_imported(blocked: bool) -> None:
    """A gateway serving a request and a receiver, with the extra missing, or installed and not
    configured: ``opentelemetry`` never enters ``sys.modules``."""
    code = (BLOCK_OPENTELEMETRY if blocked else "") + SERVE_A_REQUEST
    done = run_python(code, {})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("[]")


def test_tracing_asked_for_without_the_extra_is_a_one_line_error() -> None:
    code = BLOCK_OPENTELEMETRY + (
        "from gateway.observability.tracers import open_tracing\n"
        "open_tracing('otlp', 'http/protobuf', 'mns-gateway')\n"
    )
    done = run_python(code, {})
    assert done.returncode == 1
    assert "TracingUnavailableError: OTEL_* asks for traces but OpenTelemetry is not installed" in (
        done.stderr
    )
    assert "pip install 'mns-push[otel]'" in done.stderr
