"""A stopping gateway never waits on its trace collector past its graceful timeout: real
``mns-gateway worker`` and ``serve`` processes, tracing to a collector on 127.0.0.1 that accepts
and trickles its answer a byte at a time (or to none at all), are stopped with SIGTERM or SIGINT.

The bounds are the graceful timeout (or the export timeout) plus a generous margin for a shared,
loaded machine, far below what the process took before: a trickling collector held a worker for
ever (each read of the answer well within the socket's timeout) and ``serve`` for its whole
graceful timeout; a collector that is down held a Ctrl-C for the export's retries.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.otlp_collector import TricklingCollector
from tests.support.pushes import pushes_to

XMLNS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'
#: Room for starting Python, gevent and gunicorn's arbiter on a busy machine: not a figure of
#: merit, a bound far below the behaviour each test rules out.
MARGIN = 12.0


def unused_port() -> int:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return int(unused.getsockname()[1])


def exited_within(process: subprocess.Popen[bytes], seconds: float) -> float | None:
    """Seconds the process took to exit after the signal, or ``None`` if it did not within
    ``seconds`` (it is then killed)."""
    started = time.monotonic()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        return None
    return time.monotonic() - started


@pytest.fixture()
def api_only(tmp_path: Path) -> Iterator[RunningGateway]:
    running = start_gateway(tmp_path / "data", {"MNS_GATEWAY_DELIVERY_THREADS": "0"})
    yield running
    running.stop()


def start_worker(api: RunningGateway, tracing: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {**api.env, "MNS_GATEWAY_DATA_DIR": str(api.data_dir), "MNS_GATEWAY_PUBLIC_URL": api.url}
    env |= {"MNS_GATEWAY_DELIVERY_THREADS": "2", **tracing}
    command = [sys.executable, "-m", "gateway.cli", "worker"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def push_once(api: RunningGateway, worker: subprocess.Popen[bytes]) -> None:
    """One push made by ``worker`` and answered: a span waits for export in the worker."""
    assert worker.stdout is not None
    assert b"mns-gateway worker: pushing" in worker.stdout.readline()
    raw = api.raw()
    assert raw.send("PUT", "/topics/traced", f"<Topic {XMLNS}/>".encode()).status == 201
    with pushes_to(api.url) as endpoint:
        subscription = f"<Subscription {XMLNS}><Endpoint>{endpoint.url}</Endpoint></Subscription>"
        assert (
            raw.send("PUT", "/topics/traced/subscriptions/s", subscription.encode()).status == 201
        )
        message = f"<Message {XMLNS}><MessageBody>traced</MessageBody></Message>"
        assert raw.send("POST", "/topics/traced/messages", message.encode()).status == 201
        endpoint.wait_for(1, timeout=30)


def test_sigterm_stops_a_worker_within_its_graceful_timeout_despite_a_trickling_collector(
    api_only: RunningGateway,
) -> None:
    with TricklingCollector() as collector:
        tracing = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # the export is under way, trickled, at SIGTERM
            "MNS_GATEWAY_GRACEFUL_TIMEOUT": "2",
        }
        worker = start_worker(api_only, tracing)
        try:
            push_once(api_only, worker)
            worker.send_signal(signal.SIGTERM)
            took = exited_within(worker, 2 + MARGIN)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=10)
        assert collector.connections >= 1, "the export never reached the collector"
        assert took is not None, "the worker was still waiting on the collector"
        assert worker.returncode == 0


def test_ctrl_c_stops_a_worker_at_once_when_the_collector_is_down(
    api_only: RunningGateway,
) -> None:
    """One try, no backoff: before, the export was tried again after 1, 2, 4 and 8 s within its
    30 s timeout, and the worker's 30 s graceful timeout let it."""
    tracing = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{unused_port()}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "30",
        "OTEL_BSP_SCHEDULE_DELAY": "60000",  # exported at shutdown only
        "MNS_GATEWAY_GRACEFUL_TIMEOUT": "30",
    }
    worker = start_worker(api_only, tracing)
    try:
        push_once(api_only, worker)
        worker.send_signal(signal.SIGINT)
        took = exited_within(worker, 30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=10)
    assert took is not None and took < 15 - 5, f"took {took} s: the export was retried"
    assert worker.returncode == 0


def test_serve_stops_before_its_graceful_timeout_despite_a_trickling_collector(
    tmp_path: Path,
) -> None:
    """Nothing in flight but the spans: the last export gets its own timeout (1 s here), not
    the 40 s gunicorn would otherwise wait before killing the worker process."""
    with TricklingCollector() as collector:
        settings = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            "OTEL_BSP_SCHEDULE_DELAY": "60000",  # exported at shutdown only
            "MNS_GATEWAY_GRACEFUL_TIMEOUT": "40",
        }
        gateway = start_gateway(tmp_path / "data", settings)
        try:
            raw = gateway.raw()
            assert raw.send("PUT", "/queues/traced", f"<Queue {XMLNS}/>".encode()).status == 201
            gateway.process.send_signal(signal.SIGTERM)
            took = exited_within(gateway.process, 1 + MARGIN + 10)
        finally:
            gateway.stop()
        assert collector.connections >= 1, "the spans were never sent"
        assert took is not None, "serve waited its graceful timeout for the collector"


def test_ctrl_c_stops_serve_without_the_exports_backoff_when_the_collector_is_down(
    tmp_path: Path,
) -> None:
    """gunicorn's quick shutdown: its worker process exports the last spans at exit. Before,
    it tried again after 1, 2, 4 and 8 s within the 30 s export timeout (about 15 s)."""
    settings = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{unused_port()}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "30",
        "OTEL_BSP_SCHEDULE_DELAY": "60000",  # exported at shutdown only
        "MNS_GATEWAY_GRACEFUL_TIMEOUT": "30",
    }
    gateway = start_gateway(tmp_path / "data", settings)
    try:
        raw = gateway.raw()
        assert raw.send("PUT", "/queues/traced", f"<Queue {XMLNS}/>".encode()).status == 201
        gateway.process.send_signal(signal.SIGINT)
        took = exited_within(gateway.process, 30)
    finally:
        gateway.stop()
    assert took is not None and took < 15 - 5, f"took {took} s: the export was retried"
