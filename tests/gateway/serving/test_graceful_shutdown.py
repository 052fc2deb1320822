"""SIGTERM drains: real ``mns-gateway serve`` and ``mns-gateway worker`` processes finish the long
polls and pushes they hold within ``MNS_GATEWAY_GRACEFUL_TIMEOUT``, then exit 0.

This is what a Kubernetes rolling update does to a pod: the chart gives it
terminationGracePeriodSeconds above the graceful timeout, itself above the 30 s longest poll.
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import compose_store
from tests.conftest import RunningGateway, start_gateway
from tests.mns_http import RawClient, RawResponse
from tests.support.pushes import HOLD, pushes_to

XMLNS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'
GRACEFUL = {"MNS_GATEWAY_GRACEFUL_TIMEOUT": "10", "MNS_GATEWAY_LEASE_SECONDS": "2"}


def send_on(connection: http.client.HTTPConnection, raw: RawClient, uri: str) -> None:
    connection.request("GET", uri, headers=raw.headers_for("GET", uri, b""))


def answer_on(connection: http.client.HTTPConnection) -> RawResponse:
    response = connection.getresponse()
    return RawResponse(response.status, dict(response.getheaders()), response.read())


def long_poll_across_sigterm(gateway: RunningGateway, wait_seconds: int) -> RawResponse:
    """A long poll on a connection the gateway has already accepted, with SIGTERM right after."""
    raw = gateway.raw()
    assert raw.send("PUT", "/queues/held", f"<Queue {XMLNS}/>".encode()).status == 201
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    try:
        send_on(connection, raw, "/queues/held")
        assert answer_on(connection).status == 200  # accepted: the connection is a worker's
        send_on(connection, raw, f"/queues/held/messages?waitseconds={wait_seconds}")
        gateway.process.send_signal(signal.SIGTERM)
        return answer_on(connection)
    finally:
        connection.close()


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_sigterm_lets_a_long_poll_in_flight_finish(tmp_path: Path, worker_class: str) -> None:
    gateway = start_gateway(tmp_path, {**GRACEFUL, "MNS_GATEWAY_WORKER_CLASS": worker_class})
    try:
        started = time.monotonic()
        response = long_poll_across_sigterm(gateway, wait_seconds=3)
        waited = time.monotonic() - started
        assert (response.status, response.error_code()) == (404, "MessageNotExist")
        assert waited >= 2.5  # its whole term, not cut short by the shutdown
        assert gateway.process.wait(timeout=15) == 0
    finally:
        gateway.stop()


def stop_beside_an_idle_connection(tmp_path: Path, worker_class: str) -> tuple[RawResponse, float]:
    """SIGTERM while one kept-alive connection idles and another holds a 2 s long poll: the
    poll's answer, and the seconds the process took to exit (its graceful timeout is 60 s)."""
    settings = {"MNS_GATEWAY_GRACEFUL_TIMEOUT": "60", "MNS_GATEWAY_WORKER_CLASS": worker_class}
    gateway = start_gateway(tmp_path, settings)
    raw = gateway.raw()
    assert raw.send("PUT", "/queues/held", f"<Queue {XMLNS}/>".encode()).status == 201
    idle = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    polling = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    try:
        for connection in (idle, polling):
            send_on(connection, raw, "/queues/held")
            assert answer_on(connection).status == 200  # both kept alive by the worker
        send_on(polling, raw, "/queues/held/messages?waitseconds=2")
        started = time.monotonic()
        gateway.process.send_signal(signal.SIGTERM)
        answered = answer_on(polling)
        assert gateway.process.wait(timeout=30) == 0
        return answered, time.monotonic() - started
    finally:
        idle.close()
        polling.close()
        gateway.stop()


def test_idle_keep_alive_connections_do_not_hold_a_stopping_gateway(tmp_path: Path) -> None:
    """A client's kept-alive connection is closed at SIGTERM, not waited for: the process exits
    long before its graceful timeout, while a request in flight on another connection is still
    answered, with ``Connection: close``."""
    answered, stopped = stop_beside_an_idle_connection(tmp_path, "gevent")
    assert (answered.status, answered.error_code()) == (404, "MessageNotExist")
    assert answered.headers.get("Connection") == "close"
    assert stopped < 30, "the idle connection held the worker until its graceful timeout"


def test_idle_connections_do_not_hold_a_stopping_gthread_gateway(tmp_path: Path) -> None:
    """The same with gunicorn's gthread worker (27.0.1 and later), but for the header, which
    gunicorn decides: 27.0.1 answered ``keep-alive`` in one CI run of ten or so, ``close`` in
    the others (docs/deploy.md#dependency-versions)."""
    answered, stopped = stop_beside_an_idle_connection(tmp_path, "gthread")
    assert (answered.status, answered.error_code()) == (404, "MessageNotExist")
    assert stopped < 30, "the idle connection held the worker until its graceful timeout"


def test_a_graceful_timeout_shorter_than_the_poll_cuts_it(tmp_path: Path) -> None:
    """The contrast: the setting is what keeps the poll above alive."""
    gateway = start_gateway(tmp_path, {"MNS_GATEWAY_GRACEFUL_TIMEOUT": "1"})
    try:
        with pytest.raises((http.client.HTTPException, OSError)):
            long_poll_across_sigterm(gateway, wait_seconds=8)
    finally:
        gateway.stop()


def nothing_left_to_push(data_dir: Path) -> bool:
    """No delivery left in the database, leased or due (seen from an hour later)."""
    store = compose_store(
        SQLiteDatabase(data_dir / "gateway.sqlite3", synchronous="NORMAL"),
        clock=lambda: time.time() + 3600,
    )
    try:
        return store.deliveries.due_count() == 0
    finally:
        store.close()


@pytest.fixture()
def api_only(tmp_path: Path) -> Iterator[RunningGateway]:
    running = start_gateway(tmp_path, {**GRACEFUL, "MNS_GATEWAY_DELIVERY_THREADS": "0"})
    yield running
    running.stop()


def start_worker(api: RunningGateway) -> subprocess.Popen[bytes]:
    env = {**api.env, "MNS_GATEWAY_DATA_DIR": str(api.data_dir), "MNS_GATEWAY_PUBLIC_URL": api.url}
    env["MNS_GATEWAY_DELIVERY_THREADS"] = "4"
    command = [sys.executable, "-m", "gateway.cli", "worker"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def push_across_sigterm(raw: RawClient, pusher: subprocess.Popen[bytes]) -> int:
    """Publish, hold the push at the endpoint, SIGTERM ``pusher``, release; its exit status.

    Requests go on connections of their own, closed after each, so that the gthread worker
    class, which waits for idle keep-alive connections, stops as soon as the gevent one.
    """
    assert raw.send("PUT", "/topics/drained", f"<Topic {XMLNS}/>".encode()).status == 201
    with pushes_to(f"http://{raw.host}:{raw.port}", HOLD) as endpoint:
        subscription = f"<Subscription {XMLNS}><Endpoint>{endpoint.url}</Endpoint></Subscription>"
        assert (
            raw.send("PUT", "/topics/drained/subscriptions/s", subscription.encode()).status == 201
        )
        message = f"<Message {XMLNS}><MessageBody>in flight at SIGTERM</MessageBody></Message>"
        assert raw.send("POST", "/topics/drained/messages", message.encode()).status == 201
        endpoint.wait_for(1, timeout=15)
        pusher.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            pusher.wait(timeout=1)  # the push in flight keeps the process alive
        endpoint.release()
        returncode = pusher.wait(timeout=15)
        assert len(endpoint.received) == 1
    return returncode


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_sigterm_lets_a_push_in_flight_finish_in_serve(tmp_path: Path, worker_class: str) -> None:
    gateway = start_gateway(tmp_path, {**GRACEFUL, "MNS_GATEWAY_WORKER_CLASS": worker_class})
    try:
        assert push_across_sigterm(gateway.raw(), gateway.process) == 0
    finally:
        gateway.stop()
    assert nothing_left_to_push(tmp_path)  # recorded as delivered: no second push later


def test_sigterm_lets_a_push_in_flight_finish_in_a_worker(api_only: RunningGateway) -> None:
    worker = start_worker(api_only)
    try:
        assert push_across_sigterm(api_only.raw(), worker) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=10)
    assert nothing_left_to_push(api_only.data_dir)
