"""``mns-gateway worker``: delivery in its own process, beside an API-only gateway.

Both worker classes are run: gevent (the default: pushes on greenlets) and gthread (OS threads).
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway
from tests.http_wire import http_get
from tests.support.pushes import HANG, pushes_to

from .doc_verifier import received_value, verify_as_a_receiver

API_ONLY = {"MNS_GATEWAY_DELIVERY_THREADS": "0", "MNS_GATEWAY_LEASE_SECONDS": "2"}


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[RunningGateway]:
    running = start_gateway(tmp_path, API_ONLY)
    yield running
    running.stop()


def start_worker(api: RunningGateway, worker_class: str, *options: str) -> subprocess.Popen[bytes]:
    env = {
        **api.env,
        "MNS_GATEWAY_DATA_DIR": str(api.data_dir),
        "MNS_GATEWAY_PUBLIC_URL": api.url,
        "MNS_GATEWAY_DELIVERY_THREADS": "4",
        "MNS_GATEWAY_WORKER_CLASS": worker_class,
    }
    command = [sys.executable, "-m", "gateway.cli", "worker", *options]
    stdout = subprocess.PIPE if options else subprocess.DEVNULL
    return subprocess.Popen(command, env=env, stdout=stdout, stderr=subprocess.PIPE)


def stop(worker: subprocess.Popen[bytes]) -> int:
    worker.send_signal(signal.SIGTERM)
    try:
        return worker.wait(timeout=20)
    finally:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_a_worker_process_delivers_signed_pushes_and_stops_on_sigterm(
    api: RunningGateway, worker_class: str
) -> None:
    account = Account(api.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = account.get_topic("apart")
    topic.create(TopicMeta())
    with pushes_to(api.url) as endpoint:
        topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint.url))
        published = [topic.publish_message(TopicMessage(f"m{n}")) for n in range(5)]
        worker = start_worker(api, worker_class)
        try:
            pushes = endpoint.wait_for(5, timeout=15)
        finally:
            returncode = stop(worker)
    assert returncode == 0, worker.stderr.read() if worker.stderr else ""
    ids = {received_value(push, "x-mns-message-id") for push in pushes}
    assert ids == {message.message_id for message in published}
    assert all(verify_as_a_receiver(push, trusted_prefix=f"{api.url}/certs/") for push in pushes)


def test_a_killed_worker_process_loses_nothing(api: RunningGateway) -> None:
    account = Account(api.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = account.get_topic("crash")
    topic.create(TopicMeta())
    with pushes_to(api.url, HANG) as endpoint:
        topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint.url))
        published = topic.publish_message(TopicMessage("survive"))
        first = start_worker(api, "gevent")
        try:
            endpoint.wait_for(1, timeout=15)  # the push is in flight, its answer held back
        finally:  # a push that never came must not leave the worker polling for the session
            first.kill()
            first.wait(timeout=10)
        second = start_worker(api, "gevent")
        try:
            pushes = endpoint.wait_for(2, timeout=15)
        finally:
            stop(second)
    assert [received_value(p, "x-mns-message-id") for p in pushes] == [published.message_id] * 2


def probe_address(worker: subprocess.Popen[bytes]) -> tuple[str, int]:
    """Where the worker said its probes listen (its first line of output)."""
    assert worker.stdout is not None
    line = worker.stdout.readline().decode()
    match = re.search(r"probes and metrics on http://([0-9.]+):(\d+)$", line.strip())
    assert match, line
    return match[1], int(match[2])


SUCCEEDED = 'mns_delivery_attempts_total{outcome="success",result="succeeded"} 1.0'


def metrics_once_counted(address: tuple[str, int], line: str, seconds: float = 10.0) -> str:
    """The worker's metrics once ``line`` is among them (a push is counted when its answer has
    been read, a moment after the endpoint saw it), or as they are at the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        status, body = http_get(address, "/metrics")
        assert status == 200
        metrics = body.decode()
        if line in metrics.splitlines() or time.monotonic() > deadline:
            return metrics
        time.sleep(0.05)


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_a_worker_answers_probes_and_counts_its_pushes_in_its_metrics(
    api: RunningGateway, worker_class: str
) -> None:
    account = Account(api.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = account.get_topic("probed")
    topic.create(TopicMeta())
    with pushes_to(api.url) as endpoint:
        topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint.url))
        worker = start_worker(api, worker_class, "--probes", "127.0.0.1:0")
        try:
            address = probe_address(worker)
            topic.publish_message(TopicMessage("counted"))
            endpoint.wait_for(1, timeout=15)
            assert http_get(address, "/healthz") == (200, b"ok\n")
            assert http_get(address, "/readyz") == (200, b"ready\n")
            metrics = metrics_once_counted(address, SUCCEEDED)
        finally:
            returncode = stop(worker)
    assert returncode == 0, worker.stderr.read() if worker.stderr else ""
    assert SUCCEEDED in metrics.splitlines(), metrics


def test_a_probe_address_that_is_not_host_and_port_stops_the_worker_in_one_line(
    api: RunningGateway,
) -> None:
    worker = start_worker(api, "gevent", "--probes", "8081")
    assert worker.wait(timeout=30) == 1
    assert worker.stderr is not None
    assert worker.stderr.read().decode().strip().splitlines()[-1] == (
        "mns-gateway worker: probe address '8081' is not HOST:PORT"
    )


def test_a_taken_probe_port_stops_the_worker_in_one_line(api: RunningGateway) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        worker = start_worker(api, "gevent", "--probes", f"127.0.0.1:{port}")
        assert worker.wait(timeout=30) == 1
    assert worker.stderr is not None
    assert worker.stderr.read().decode().strip().splitlines()[-1] == (
        f"mns-gateway worker: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
