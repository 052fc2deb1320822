"""``mns-gateway worker``: delivery in its own process, beside an API-only gateway.

Both worker classes are run: gevent (the default: pushes on greenlets) and gthread (OS threads).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway

from .doc_verifier import received_value, verify_as_a_receiver
from .scripted_endpoint import scripted_endpoint

API_ONLY = {"MNS_GATEWAY_DELIVERY_THREADS": "0", "MNS_GATEWAY_LEASE_SECONDS": "2"}


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[RunningGateway]:
    running = start_gateway(tmp_path, API_ONLY)
    yield running
    running.stop()


def start_worker(api: RunningGateway, worker_class: str) -> subprocess.Popen[bytes]:
    env = {
        **api.env,
        "MNS_GATEWAY_DATA_DIR": str(api.data_dir),
        "MNS_GATEWAY_PUBLIC_URL": api.url,
        "MNS_GATEWAY_DELIVERY_THREADS": "4",
        "MNS_GATEWAY_WORKER_CLASS": worker_class,
    }
    command = [sys.executable, "-m", "gateway.cli", "worker"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


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
    with scripted_endpoint() as endpoint:
        topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint.url))
        published = [topic.publish_message(TopicMessage(f"m{n}")) for n in range(5)]
        worker = start_worker(api, worker_class)
        try:
            pushes = endpoint.wait_for(5)
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
    with scripted_endpoint("hang") as endpoint:
        topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint.url))
        published = topic.publish_message(TopicMessage("survive"))
        first = start_worker(api, "gevent")
        endpoint.wait_for(1)  # the push is in flight, its answer held back
        first.kill()
        first.wait(timeout=10)
        second = start_worker(api, "gevent")
        try:
            pushes = endpoint.wait_for(2)
        finally:
            stop(second)
    assert [received_value(p, "x-mns-message-id") for p in pushes] == [published.message_id] * 2
