"""What the fault tests share: a push endpoint that counts arrivals, clients that send and publish
through the official SDK while a fault happens, and the tally of what was acknowledged, delivered,
lost and duplicated (printed at the end of the run by this package's conftest).

Each fault test starts real processes (``mns-gateway serve``, ``mns-gateway worker``, PostgreSQL),
makes clients send queue messages and publish to a topic subscribed by the shipped push
recorder (:func:`push_endpoint`), breaks something for a few seconds, repairs it, and then
checks that every acknowledged send is receivable and every acknowledged publish was pushed,
without restarting the gateway.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mns.account import Account
from mns.mns_exception import MNSClientNetworkException, MNSServerException
from mns.queue import Message, QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.testing import PushRecorder
from gateway.testing.process import START_TIMEOUT, free_port, is_ready
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway
from tests.support.pushes import arrivals

#: Seconds a request may wait for the database in these tests (MNS_GATEWAY_DATABASE_TIMEOUT).
DATABASE_TIMEOUT = 2.0
#: Push leases in these tests. Outcomes of pushes made during an outage are retried for half a
#: lease, so it is longer than twice an outage here (as the default 60 s is for outages up to
#: 30 s); a push whose outcome was lost anyway is made again once its lease lapses.
LEASE_SECONDS = 10.0
#: What every gateway and worker in a fault test runs with: the leases above, quick retries, and
#: the bounded database wait.
FAULT_ENV = {
    "MNS_GATEWAY_LEASE_SECONDS": str(LEASE_SECONDS),
    "MNS_GATEWAY_RETRY_SCALE": "0.01",
    "MNS_GATEWAY_DATABASE_TIMEOUT": str(DATABASE_TIMEOUT),
}
WAIT_SECONDS = 60.0
TALLIES: list[Tally] = []


@contextmanager
def push_endpoint() -> Iterator[PushRecorder]:
    """The shipped recorder in raw mode: during a fault the gateway (and the certificate URL a
    verifying endpoint would fetch) may be down while pushes made before it still arrive."""
    with PushRecorder.raw() as recorder:
        yield recorder


def first_seen(endpoint: PushRecorder) -> dict[str, float]:
    """When each MessageId first arrived (``time.monotonic()``)."""
    seen: dict[str, float] = {}
    for push in endpoint.received:
        seen.setdefault(push.message_id, push.arrived)
    return seen


@dataclass(frozen=True)
class Failure:
    """A request the gateway refused during the fault: what it answered and how long it took."""

    code: str
    seconds: float


@dataclass
class Traffic:
    """Queue sends and topic publishes acknowledged (MessageId -> when), and failures."""

    sent: dict[str, float] = field(default_factory=dict)
    published: dict[str, float] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def first_ack_after(self, moment: float) -> float | None:
        with self.lock:
            times = [t for t in (*self.sent.values(), *self.published.values()) if t >= moment]
        return min(times, default=None)


def sdk(url: str) -> Account:
    return Account(url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)


def set_up(url: str, endpoint: PushRecorder) -> None:
    """Queue ``q``, and topic ``t`` with one subscription pushing to ``endpoint``."""
    account = sdk(url)
    account.get_queue("q").create(QueueMeta())
    topic = account.get_topic("t")
    topic.create(TopicMeta())
    topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint.url_for("/push")))


def _client_loop(
    url: str, traffic: Traffic, stop: threading.Event, kind: str, pace: float, body: str
) -> None:
    account = sdk(url)
    queue, topic = account.get_queue("q"), account.get_topic("t")
    acked = traffic.sent if kind == "send" else traffic.published
    while not stop.is_set():
        started = time.monotonic()
        try:
            if kind == "send":
                message_id = queue.send_message(Message(body)).message_id
            else:
                message_id = topic.publish_message(TopicMessage(body)).message_id
        except MNSServerException as exc:
            failure = Failure(exc.type, time.monotonic() - started)
        except MNSClientNetworkException as exc:
            failure = Failure(f"network: {exc.type}", time.monotonic() - started)
        else:
            with traffic.lock:
                acked[message_id] = time.monotonic()
            stop.wait(pace)
            continue
        with traffic.lock:
            traffic.failures.append(failure)
        stop.wait(pace)


@contextmanager
def traffic(
    urls: list[str], *, clients: int = 2, pace: float = 0.02, body: str = "m"
) -> Iterator[Traffic]:
    """``clients`` sending and as many publishing clients per URL, each pausing ``pace`` s
    between requests, until the block ends."""
    state, stop = Traffic(), threading.Event()
    threads = [
        threading.Thread(target=_client_loop, args=(url, state, stop, kind, pace, body))
        for url in urls
        for kind in ("send", "publish")
        for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    try:
        yield state
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT_SECONDS)


def receive_all(url: str) -> Counter[str]:
    """Every message of queue ``q`` (received and deleted), by MessageId."""
    queue, seen = sdk(url).get_queue("q"), Counter[str]()
    for _ in range(10_000):
        try:
            messages = queue.batch_receive_message(16, 1)
        except MNSServerException as exc:
            if exc.type == "MessageNotExist":
                return seen
            raise
        seen.update(message.message_id for message in messages)
        queue.batch_delete_message([message.receipt_handle for message in messages])
    raise AssertionError("queue q never emptied")


def until(condition: Callable[[], bool], timeout: float = WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@dataclass(frozen=True)
class Count:
    acknowledged: int
    delivered: int
    lost: int
    duplicated: int

    def __str__(self) -> str:
        return (
            f"{self.acknowledged} acknowledged / {self.delivered} delivered / "
            f"{self.lost} lost / {self.duplicated} duplicated"
        )


def count(acked: dict[str, float], arrived: Counter[str]) -> Count:
    delivered = [message_id for message_id in acked if arrived[message_id]]
    return Count(
        len(acked),
        len(delivered),
        len(acked) - len(delivered),
        sum(1 for message_id in delivered if arrived[message_id] > 1),
    )


@dataclass(frozen=True)
class Tally:
    """One fault's figures, as docs/deploy.md#database-and-disk-faults quotes them."""

    fault: str
    sends: Count
    publishes: Count
    failed_requests: int
    slowest_failure: float
    recovery_seconds: float
    caught_up_seconds: float

    def row(self) -> str:
        """The line of docs/deploy.md's table of figures."""
        sends, publishes = self.sends, self.publishes
        return (
            f"| {self.fault} | {sends.acknowledged} / {sends.delivered} / {sends.lost} / "
            f"{sends.duplicated} | {publishes.acknowledged} / {publishes.delivered} / "
            f"{publishes.lost} / {publishes.duplicated} | {self.failed_requests} "
            f"({self.slowest_failure:.1f} s) | {self.recovery_seconds:.1f} s | "
            f"{self.caught_up_seconds:.1f} s |"
        )

    def line(self) -> str:
        return (
            f"{self.fault}: sends {self.sends}; publishes {self.publishes}; "
            f"{self.failed_requests} requests refused (slowest {self.slowest_failure:.1f} s); "
            f"serving again {self.recovery_seconds:.1f} s after the repair, every acknowledged "
            f"message delivered {self.caught_up_seconds:.1f} s after it"
        )


def settle(
    fault: str, url: str, state: Traffic, endpoint: PushRecorder, repaired_at: float
) -> Tally:
    """Wait for every acknowledged publish to be pushed, drain the queue, and tally the run."""
    until(lambda: set(state.published) <= set(arrivals(endpoint)))
    pushed = first_seen(endpoint)
    caught_up = max((pushed[m] for m in state.published if m in pushed), default=0)
    # A push made twice arrives at the latest once the lease of its lost outcome lapsed.
    time.sleep(max(0.5, repaired_at + LEASE_SECONDS + 1.0 - time.monotonic()))
    first_ack = state.first_ack_after(repaired_at)
    tally = Tally(
        fault,
        count(state.sent, receive_all(url)),
        count(state.published, arrivals(endpoint)),
        len(state.failures),
        max((failure.seconds for failure in state.failures), default=0.0),
        (first_ack - repaired_at) if first_ack is not None else float("inf"),
        max(0.0, caught_up - repaired_at),
    )
    TALLIES.append(tally)
    print(tally.line())
    return tally


def start_serve(
    data_dir: Path, env: dict[str, str], *, log_file: Path | None = None
) -> RunningGateway:
    """``mns-gateway serve`` on ``data_dir``; its output in ``log_file`` (by default beside the
    data dir; a test filling the data dir's disk puts it elsewhere)."""
    if log_file is None:
        return start_gateway(data_dir, {**FAULT_ENV, **env})
    full_env = {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        **FAULT_ENV,
        **env,
    }
    return RunningGateway.start(data_dir, full_env, log_file=log_file)


@dataclass
class WorkerProcess:
    """``mns-gateway worker`` beside an API-only gateway, its output in ``log``, its probes on
    ``port``."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_worker(api: RunningGateway, log: Path) -> WorkerProcess:
    """Started, and ready: its ``/readyz`` answers 200."""
    port = free_port()
    env = {
        **api.env,
        "MNS_GATEWAY_DATA_DIR": str(api.data_dir),
        "MNS_GATEWAY_PUBLIC_URL": api.url,
        "MNS_GATEWAY_DELIVERY_THREADS": "8",
    }
    with log.open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "worker", "--probes", f"127.0.0.1:{port}"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = WorkerProcess(process, log, port)
    if not until(lambda: process.poll() is not None or is_ready(port), START_TIMEOUT):
        worker.stop()
        raise AssertionError(f"mns-gateway worker was not ready: {log_text(log)[-2000:]}")
    assert process.poll() is None, log_text(log)[-2000:]
    return worker


def http_get(port: int, path: str) -> tuple[int, bytes, float]:
    """One GET on 127.0.0.1:``port``: the status, the body and how long it took."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read(), time.monotonic() - started
    finally:
        connection.close()


def log_text(*paths: Path | None) -> str:
    return "".join(p.read_text(errors="replace") for p in paths if p is not None and p.exists())


def assert_quiet_log(text: str) -> None:
    """An outage is an expected condition: warnings, never a traceback."""
    assert "Traceback" not in text, text[-4000:]
    assert "unhandled error" not in text, text[-4000:]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
