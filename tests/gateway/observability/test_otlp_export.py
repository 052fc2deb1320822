"""The gateway's OTLP export (gateway/observability/otel.py's lean tracing, span_batches.py,
otlp_transports.py) against real collectors on 127.0.0.1, over HTTP and gRPC: the variables
OpenTelemetry documents (endpoint, protocol, headers, compression, resource, service name,
sampler, batching) do what they do with the SDK's exporters."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config.tracing import tracing_from_env
from gateway.observability.otel import configured
from gateway.observability.otlp_transports import ExportSettings, GrpcSender, HttpSender
from gateway.observability.otlp_wire import encode_resource, encode_scope, export_request
from gateway.observability.tracing import SpanKind, Tracing
from tests.otlp_collector import GrpcOtlpCollector, OtlpCollector, ReceivedSpan
from tests.support.clock import Clock

PUBLISHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(params=[OtlpCollector, GrpcOtlpCollector], ids=["http", "grpc"])
def collector(request: pytest.FixtureRequest) -> Iterator[OtlpCollector | GrpcOtlpCollector]:
    with request.param() as running:
        yield running


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A clean OTEL_* environment (the SDK reads os.environ itself)."""
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    return monkeypatch


def exporting(protocol: str) -> Tracing:
    """The gateway's OTLP tracing as ``serve`` opens it: the SDK reads the process's
    environment, the gateway's exporter the ``OTEL_*`` variables its settings hold."""
    variables = dict(tracing_from_env(os.environ).variables)
    return configured("otlp", protocol, "mns-gateway", variables)


def push_spans(tracing: Tracing, count: int) -> None:
    for attempt in range(1, count + 1):
        span = tracing.start(
            "push app",
            SpanKind.CLIENT,
            parent={"traceparent": PUBLISHER},
            links=[{"traceparent": PUBLISHER}],
            attributes={"messaging.system": "smq", "messaging.smq.push.attempt": attempt},
            activate=True,
        )
        span.set({"http.response.status_code": 500})
        span.fail("http_error", "500 from the endpoint")
        span.end()


def test_spans_reach_the_collector_as_the_variables_say(
    collector: OtlpCollector | GrpcOtlpCollector, otel_env: pytest.MonkeyPatch
) -> None:
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    otel_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=shop%201,Authorization=Bearer t")
    otel_env.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    otel_env.setenv("OTEL_SERVICE_NAME", "mns-gateway-test")
    otel_env.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test,service.name=ignored")
    tracing = exporting(collector.protocol)
    push_spans(tracing, 2)
    spans = collector.wait_for(lambda got: len(got) >= 2)
    tracing.shutdown()
    first = spans[0]
    assert first.service == "mns-gateway-test"  # OTEL_SERVICE_NAME wins, as in the SDK
    assert first.resource["deployment.environment"] == "test"
    assert first.resource["telemetry.sdk.name"] == "opentelemetry"
    assert first.name == "push app" and first.kind == "client" and first.error
    assert first.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert first.parent_span_id == "b7ad6b7169203331"
    assert first.links == [("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")]
    assert first.attributes == {
        "messaging.system": "smq",
        "messaging.smq.push.attempt": 1,
        "http.response.status_code": 500,
        "error.type": "http_error",
    }
    headers = collector.headers[0]
    assert headers["x-tenant"] == "shop 1" and headers["authorization"] == "Bearer t"
    if collector.protocol == "http/protobuf":
        assert headers["content-encoding"] == "gzip"
        assert headers["content-type"] == "application/x-protobuf"


def test_the_traces_endpoint_is_taken_as_it_is(
    otel_env: pytest.MonkeyPatch,
) -> None:
    with OtlpCollector() as collector:
        otel_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.endpoint}/v1/traces")
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # not this one
        tracing = exporting("http/protobuf")
        push_spans(tracing, 1)
        tracing.shutdown()
        assert len(collector.wait_for(lambda got: len(got) >= 1)) == 1


def test_full_batches_go_at_once_and_the_rest_at_shutdown(otel_env: pytest.MonkeyPatch) -> None:
    with OtlpCollector() as collector:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        otel_env.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")  # never on schedule in this test
        otel_env.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "3")
        tracing = exporting("http/protobuf")
        push_spans(tracing, 7)
        collector.wait_for(lambda got: len(got) >= 6)
        tracing.shutdown()  # the seventh
        spans = collector.wait_for(lambda got: len(got) >= 7)
        assert sorted(s.attributes["messaging.smq.push.attempt"] for s in spans) == list(
            range(1, 8)
        )
        assert len(collector.headers) == 3  # 3 + 3 + 1


@pytest.mark.parametrize(
    ("sampler", "argument", "exported"),
    [
        ("traceidratio", "0", False),  # the SDK's general path: asked per span
        ("parentbased_traceidratio", "0", True),  # the sampled parent decides
        ("always_off", "", False),
        ("parentbased_always_off", "", True),
    ],
)
def test_the_sampler_variables_decide(
    otel_env: pytest.MonkeyPatch, sampler: str, argument: str, exported: bool
) -> None:
    with OtlpCollector() as collector:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        otel_env.setenv("OTEL_TRACES_SAMPLER", sampler)
        otel_env.setenv("OTEL_TRACES_SAMPLER_ARG", argument)
        tracing = exporting("http/protobuf")
        push_spans(tracing, 1)  # a sampled parent
        root = tracing.start("send q", SpanKind.SERVER)  # no parent: the root sampler's say
        root.end()
        tracing.shutdown()
        received: list[ReceivedSpan] = list(collector.spans)
        assert [s.name for s in received] == (["push app"] if exported else [])
        assert root.carrier()["traceparent"].endswith("-00")  # ratio 0, always_off: dropped


def test_a_collector_that_is_not_there_costs_the_spans_not_the_pushes(
    otel_env: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    tracing = exporting("http/protobuf")
    push_spans(tracing, 3)
    tracing.shutdown()  # the export fails, logged; nothing raises


def test_a_busy_collector_gets_the_batch_again_after_a_backoff(
    collector: OtlpCollector | GrpcOtlpCollector,
) -> None:
    endpoint = collector.endpoint
    if collector.protocol == "http/protobuf":
        endpoint += "/v1/traces"
    waited: list[float] = []
    clock = Clock()

    def wait(seconds: float) -> None:
        waited.append(seconds)
        clock.advance(seconds)

    settings = ExportSettings(endpoint=endpoint, timeout_s=10)
    kind = GrpcSender if collector.protocol == "grpc" else HttpSender
    send = kind(settings, wait=wait, clock=clock)
    body = export_request(encode_resource({"service.name": "x"}), encode_scope("s"), [])
    collector.refuse_next = 2
    try:
        assert send(body)
        assert waited == [1.0, 2.0]  # exponential backoff, as the SDK's exporters back off
        collector.refuse_next = 100
        waited.clear()
        assert not send(body)  # given up when the next try would start past the timeout
        assert waited == [1.0, 2.0, 4.0]  # tried at 0, 1, 3 and 7 s; 15 s is past 10 s
    finally:
        send.close()


CONSOLE = """
from gateway.observability.otel import configured
from tests.gateway.observability.test_otlp_export import push_spans
tracing = configured("console", "http/protobuf", "mns-gateway", {})
push_spans(tracing, 1)
tracing.shutdown()
"""


def test_the_console_exporter_prints_the_sdks_spans() -> None:
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "push app"' in done.stdout
    assert '"trace_id": "0x0af7651916cd43dd8448eb211c80319c"' in done.stdout
    assert '"messaging.smq.push.attempt": 1' in done.stdout
