"""Endpoint health: one failing endpoint among ten subscriptions, with the circuit breaker on
and off (docs/delivery.md#endpoint-health; figures in docs/benchmarks.md#endpoint-health).

A topic with 10 subscriptions: 9 to a healthy local endpoint (``bench/endpoint.py``), one
(``s009``) to an endpoint that (a) refuses connections, (b) answers 500 or (c) hangs until the
push timeout (5 s), and ``--messages`` published messages (written straight into the store).
``--workers`` ``mns-gateway worker`` processes drain the healthy subscriptions' pushes; then the
attempts made to the failing endpoint meanwhile (started before the healthy backlog was drained;
counted a push timeout later, once those in flight settled) are counted in the store. With the
breaker on, the failing endpoint then comes back (a healthy endpoint on its port) with the same
workers running: the probe closes the breaker, and the run waits for its whole backlog, timing it
from the probe's arrival (the breaker closes as that push settles) and counting what was lost
(dead letters, deliveries still pending).

Printed per backend: the 9 healthy subscriptions' rate alone (no failing subscription), then per
failure the attempts to the failing endpoint with the breaker off and on (and how many fewer),
the healthy rate beside it as a share of the rate alone, the workers' CPU per healthy push, and
the recovery. Every figure of a row comes from one run of this script, so ratios compare runs
made minutes apart on the same machine. On PostgreSQL each run's database is dropped after it and
the server checkpointed, so that no run goes beside the one before's autovacuum and checkpoint.

The breaker's longest cool-down is capped at 60 s here (``MNS_GATEWAY_BREAKER_MAX_COOL_DOWN``,
default 300 s), only so that the recovery does not wait up to five minutes for its probe; it
makes more probes (attempts) with the breaker on, never fewer.

    .venv/bin/python bench/endpoint_health.py [--messages 1000] [--workers 2]
        [--failures refused,500,hang] [--only SQLite|PostgreSQL]
        [--database-url auto|postgresql://...] [--rounds N]

``--rounds N`` runs, instead, N rounds of a run alone and a run beside each failure with the
breaker on, their order alternating, and prints each round's ratios and their range: the way to
judge the healthy rate, which moves with the machine between runs minutes apart.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from backends import Backend, add_database_arguments, backends
from fanout import endpoint, prepare_backlog, start_workers, stats, watch
from harness import ROOT, free_port, gateway_env

from gateway.composition import open_store
from gateway.config.settings import Settings

FAILURES = ("refused", "500", "hang")
FAILING = "s009"
#: Caps the wait for a probe once the endpoint is back (see the module's docstring).
MAX_COOL_DOWN_S = 60
PUSH_TIMEOUT_S = 5


class _Answering500(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


class _FailingServer(http.server.ThreadingHTTPServer):
    """Keeps its connections, so that stopping it closes the kept-alive ones too (as a restarted
    endpoint's would be): else their threads would go on answering 500 after it "came back"."""

    daemon_threads = True

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Answering500)
        self.connections: set[socket.socket] = set()

    def get_request(self) -> tuple[socket.socket, object]:
        connection, address = super().get_request()
        self.connections.add(connection)
        return connection, address

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def start_endpoint(port: int, hang: bool = False) -> subprocess.Popen[bytes]:
    """``bench/endpoint.py`` on ``port``, once it answers."""
    args = [sys.executable, str(ROOT / "bench" / "endpoint.py"), str(port)]
    process = subprocess.Popen(args + (["--hang"] if hang else []))
    for _ in range(200):
        try:
            stats(port, "/count")
            return process
        except OSError:
            time.sleep(0.05)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


class FailingEndpoint:
    """The failing subscription's endpoint, of one ``kind``; :meth:`recover` replaces it with a
    healthy one on the same port (the endpoint comes back)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/down"
        self.server: _FailingServer | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> FailingEndpoint:
        if self.kind == "500":
            self.server = _FailingServer(self.port)
            threading.Thread(target=self.server.serve_forever, daemon=True).start()
        elif self.kind == "hang":
            self.process = start_endpoint(self.port, hang=True)
        return self

    def recover(self) -> None:
        self._stop_failing()
        self.process = start_endpoint(self.port)

    def _stop_failing(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.process is not None:
            stop(self.process)
            self.process = None

    def __exit__(self, *exc: object) -> None:
        self._stop_failing()


def _count(data_dir: Path, url: str | None, sql: str) -> int:
    store = open_store(Settings(data_dir=data_dir, database_url=url or ""))
    try:
        return store.database.read(lambda c: c.execute(sql, (FAILING,)).fetchone()["n"])
    finally:
        store.close()


def attempts_to(data_dir: Path, url: str | None, until_ms: int) -> int:
    """Attempts to the failing subscription's endpoint started by ``until_ms``: those of its
    deliveries still pending, and those in its dead letters' histories (with the breaker off,
    a delivery whose retries are spent moves there with them). None was delivered: its
    endpoint never accepted one. Called a push timeout after ``until_ms``, so that the
    attempts in flight then (all of them, to an endpoint that hangs) have settled."""
    pending = _count(
        data_dir,
        url,
        "SELECT COUNT(*) AS n FROM delivery_attempts a JOIN deliveries d"
        f" ON d.id = a.delivery_id WHERE d.subscription_name = ? AND a.attempted_at <= {until_ms}",
    )
    store = open_store(Settings(data_dir=data_dir, database_url=url or ""))
    try:
        histories = store.database.read(
            lambda c: c.execute(
                "SELECT attempts FROM dead_letters WHERE subscription_name = ?", (FAILING,)
            ).fetchall()
        )
    finally:
        store.close()
    dead = sum(
        1
        for row in histories
        for attempt in json.loads(row["attempts"])
        if attempt["attempted_at_ms"] <= until_ms
    )
    return pending + dead


def lost(data_dir: Path, url: str | None) -> tuple[int, int]:
    """The failing subscription's dead letters, and its deliveries still pending."""
    dead = _count(
        data_dir, url, "SELECT COUNT(*) AS n FROM dead_letters WHERE subscription_name = ?"
    )
    pending = _count(
        data_dir, url, "SELECT COUNT(*) AS n FROM deliveries WHERE subscription_name = ?"
    )
    return dead, pending


def recovery(down: FailingEndpoint, data_dir: Path, url: str | None, messages: int) -> dict:  # type: ignore[type-arg]
    """Bring the endpoint back and wait for its backlog: when the probe arrived (the breaker
    closes as it settles), how long the backlog took after it, and what was lost."""
    came_back = time.time()
    down.recover()
    deadline = time.monotonic() + MAX_COOL_DOWN_S + 300
    while time.monotonic() < deadline and stats(down.port, "/count")["count"] < messages:
        time.sleep(0.2)
    # The last pushes' outcomes are recorded a moment after they arrive (the settler batches
    # them): read what is still pending once they are, or 10 s on. And a backlog that reached
    # its count with pushes made twice is still short of some: they are waited for too.
    settled = time.monotonic() + 10
    dead, pending = lost(data_dir, url)
    while pending and time.monotonic() < settled:
        time.sleep(0.2)
        dead, pending = lost(data_dir, url)
    seen = stats(down.port, "/count")
    first, last = seen["first"] or came_back, seen["last"] or came_back
    return {
        "probe_after_s": first - came_back,
        "backlog_s": last - first,
        "recovered": seen["count"],
        "dead": dead,
        "pending": pending,
    }


def run(  # type: ignore[type-arg]
    backend: Backend,
    messages: int,
    workers: int,
    failure: str | None,
    breaker: bool,
    recover: bool = True,
) -> dict:
    """Drain the 9 healthy subscriptions' backlog (beside a failing one unless ``failure`` is
    None); their rate and CPU, the attempts made to the failing one meanwhile and, with the
    breaker on (and ``recover``), its recovery."""
    expected = messages * 9
    with (
        endpoint() as port,
        tempfile.TemporaryDirectory() as tmp,
        FailingEndpoint(failure or "refused") as down,
    ):
        data_dir = Path(tmp)
        routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(9)]
        if failure is not None:
            routes.append(down.url)  # subscription s009
        url = backend.new_database()
        prepare_backlog(data_dir, url, routes, messages)
        env = gateway_env(
            data_dir,
            MNS_GATEWAY_PUSH_TIMEOUT=str(PUSH_TIMEOUT_S),
            MNS_GATEWAY_BREAKER="1" if breaker else "0",
            MNS_GATEWAY_BREAKER_MAX_COOL_DOWN=str(MAX_COOL_DOWN_S),
            **backend.env(url),
        )
        processes = start_workers(env, workers)
        try:
            result = watch(processes, backend, port, expected, max(120.0, expected / 50))
            drained_ms = int(time.time() * 1000)
            span = (result["last"] or 0) - (result["first"] or 0)
            result["rate"] = result["count"] / span if span > 0 else 0.0
            result["complete"] = result["count"] >= expected
            result.pop("latencies_ms", None)
            result.pop("per_second", None)
            if failure is not None:
                time.sleep(PUSH_TIMEOUT_S + 1)  # the attempts in flight settle
                result["failing_attempts"] = attempts_to(data_dir, url, drained_ms)
                if breaker and recover:
                    result["recovery"] = recovery(down, data_dir, url, messages)
            return result
        finally:
            for process in processes:
                _stop_group(process)
            backend.drop_database(url)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(20)


def _row(failure: str, alone: dict, off: dict, on: dict) -> str:  # type: ignore[type-arg]
    fewer = 1 - on["failing_attempts"] / max(1, off["failing_attempts"])
    back = on["recovery"]
    partial = "" if on["complete"] and off["complete"] else " (a drain timed out: partial)"
    return (
        f"  {failure:>7}: attempts to it {off['failing_attempts']} off,"
        f" {on['failing_attempts']} on ({fewer:.1%} fewer); healthy"
        f" {on['rate'] / alone['rate']:.0%} of alone with the breaker"
        f" ({off['rate'] / alone['rate']:.0%} without); worker CPU per healthy push"
        f" {on['worker_cpu_ms']:.2f} ms ({off['worker_cpu_ms']:.2f} without,"
        f" {alone['worker_cpu_ms']:.2f} alone){partial}\n"
        f"           back: probe {back['probe_after_s']:.0f} s after it came back; backlog of"
        f" {back['recovered']} delivered {back['backlog_s']:.1f} s after the probe;"
        f" lost: {back['dead']} dead-lettered, {back['pending']} still pending"
    )


def _load() -> str:
    """When the row was printed and the machine's load then (figures swing with it)."""
    one, five, _ = os.getloadavg()
    at = time.strftime("%H:%M:%S", time.gmtime())
    return f"\n           [{at} UTC, load {one:.1f} / {five:.1f}]"


def _database_cpu(alone: dict, on: dict) -> str:  # type: ignore[type-arg]
    """The database server's CPU per healthy push, where it is measured (PostgreSQL here)."""
    if alone.get("database_cpu_ms") is None or on.get("database_cpu_ms") is None:
        return ""
    return (
        f"; database CPU per healthy push {alone['database_cpu_ms']:.2f} ms alone,"
        f" {on['database_cpu_ms']:.2f} ms beside"
        f" ({on['database_cpu_ms'] / alone['database_cpu_ms']:.0%})"
    )


def interleaved(backend: Backend, args: argparse.Namespace, failure: str) -> None:
    """``--rounds`` pairs of runs, alone and beside ``failure`` with the breaker on, the order
    alternating (alone first in odd rounds), so the machine's drift hits both alike: each
    round's ratio, then their range. A single ratio moves with the machine by more than the
    issue's 5 % margin (docs/benchmarks.md#endpoint-health)."""
    ratios, cpu = [], []
    for number in range(1, args.rounds + 1):
        pair: dict[str, dict] = {}  # type: ignore[type-arg]
        order = ("alone", "on") if number % 2 else ("on", "alone")
        for kind in order:
            beside = None if kind == "alone" else failure
            pair[kind] = run(backend, args.messages, args.workers, beside, True, recover=False)
        alone, on = pair["alone"], pair["on"]
        ratios.append(on["rate"] / alone["rate"])
        cpu.append(on["worker_cpu_ms"] / alone["worker_cpu_ms"])
        print(
            f"  round {number} ({' then '.join(order)}): healthy {alone['rate']:.0f}/s alone,"
            f" {on['rate']:.0f}/s beside {failure} with the breaker ({ratios[-1]:.0%});"
            f" worker CPU per healthy push {alone['worker_cpu_ms']:.2f} ms alone,"
            f" {on['worker_cpu_ms']:.2f} ms beside ({cpu[-1]:.0%}); attempts to it"
            f" {on['failing_attempts']}" + _database_cpu(alone, on) + _load(),
            flush=True,
        )
    print(
        f"  {failure}, {args.rounds} rounds: healthy rate beside it {min(ratios):.0%}-"
        f"{max(ratios):.0%} of alone (median {statistics.median(ratios):.0%}); CPU per healthy"
        f" push {min(cpu):.0%}-{max(cpu):.0%} of alone (median {statistics.median(cpu):.0%})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--failures", default=",".join(FAILURES))
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="instead: this many rounds of a run alone and one beside each failure with the"
        " breaker on, interleaved (no breaker-off run, no recovery)",
    )
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            started = time.monotonic()
            if args.rounds:
                print(f"{backend.label}, {args.messages} messages x 10 subscriptions:", flush=True)
                for failure in args.failures.split(","):
                    interleaved(backend, args, failure)
                print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
                continue
            alone = run(backend, args.messages, args.workers, None, True)
            print(
                f"{backend.label}, {args.messages} messages x 10 subscriptions:"
                f" 9 healthy alone {alone['rate']:.0f} pushes/s,"
                f" {alone['worker_cpu_ms']:.2f} ms worker CPU per push" + _load(),
                flush=True,
            )
            for failure in args.failures.split(","):
                off = run(backend, args.messages, args.workers, failure, False)
                on = run(backend, args.messages, args.workers, failure, True)
                print(_row(failure, alone, off, on) + _load(), flush=True)
            print(f"  ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
