"""Delivered pushes per second and publish-to-delivery latency, into local endpoints.

Three measurements, each printed as a table row:

1. Throughput: a backlog of published messages (1 topic x 1, 10 and 100 subscriptions, all to one
   local endpoint) is drained by ``mns-gateway worker`` processes (the API-less delivery worker,
   as a deployment that separates the two runs it); pushes/s = pushes / (last - first arrival).
2. The same with 10 healthy subscriptions plus one whose endpoint never answers (every push to
   it times out), against the 10 healthy ones alone: healthy throughput should stay within 10%.
3. Latency: ``mns-gateway serve`` (API and delivery in one process) with one subscription,
   publishes paced at 200 msg/s for ``--seconds``; p50/p99 of arrival - x-mns-publish-time.

With ``--database-url`` each measurement runs on PostgreSQL beside SQLite, and the throughput
rows also give the CPU each push cost the workers and the database server.

Targets on the 2-core machine: >= 1,500 signed pushes/s (1,200 on PostgreSQL on the same
machine); p99 < 50 ms at 200 msg/s; healthy throughput within 10% beside a timing-out endpoint.

    .venv/bin/python bench/fanout.py [--pushes 6000] [--seconds 10] [--workers 2]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backends import Backend, add_database_arguments, backends, tree_cpu_seconds
from harness import ROOT, free_port, gateway_env, running_gateway

from gateway.config.settings import Settings
from gateway.store.opening import open_store
from gateway.topics.records import Subscription, TopicMessage

BODY = "x" * 256


@contextmanager
def endpoint(hang: bool = False) -> Iterator[int]:
    port = free_port()
    args = [sys.executable, str(ROOT / "bench" / "endpoint.py"), str(port)] + (
        ["--hang"] if hang else []
    )
    process = subprocess.Popen(args)
    try:
        for _ in range(100):
            try:
                stats(port)
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def stats(port: int, path: str = "/stats") -> dict:  # type: ignore[type-arg]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("GET", path)
    return json.loads(connection.getresponse().read())


def prepare_backlog(
    data_dir: Path, database_url: str | None, routes: list[str], messages: int
) -> None:
    """Topic, subscriptions and a published backlog, written straight into the store."""
    settings = Settings(
        data_dir=data_dir, sqlite_synchronous="NORMAL", database_url=database_url or ""
    )
    store = open_store(settings)
    topics = store.topics
    topics.create_topic("fanout", 65536, False)
    for i, url in enumerate(routes):
        topics.subscribe(Subscription("fanout", f"s{i:03d}", url))
    now = store.now_ms()
    batch = [TopicMessage(f"M{n:08d}", "fanout", BODY, "X", now) for n in range(messages)]
    for start in range(0, len(batch), 500):
        topics.publish_all(batch[start : start + 500])
    store.close()


def start_workers(env: dict[str, str], count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` ``mns-gateway worker`` processes (replicas' delivery workers), each in its
    own session so that it and its children can be stopped together."""
    return [
        subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "worker"],
            env=env,
            cwd=ROOT,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]


def drain(  # type: ignore[type-arg]
    data_dir: Path,
    backend: Backend,
    database_url: str | None,
    workers: int,
    port: int,
    expected: int,
    timeout: float = 120,
    extra: dict[str, str] | None = None,
) -> dict:
    """Run the workers until ``expected`` pushes arrived; the endpoint's stats, plus the CPU
    per push of the workers (``worker_cpu_ms``) and of the database (``database_cpu_ms``).
    ``extra``: more settings for the workers."""
    env = gateway_env(
        data_dir, MNS_GATEWAY_PUSH_TIMEOUT="5", **backend.env(database_url), **(extra or {})
    )
    processes = start_workers(env, workers)
    try:
        return watch(processes, backend, port, expected, timeout)
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(20)


def watch(  # type: ignore[type-arg]
    processes: list[subprocess.Popen[bytes]],
    backend: Backend,
    port: int,
    expected: int,
    timeout: float,
) -> dict:
    """Wait for ``expected`` pushes; the endpoint's stats with the CPU per push of each side,
    counted from the first push on (the workers' start-up is not a push's)."""

    def cpu() -> tuple[float, float | None]:
        workers_cpu = sum(tree_cpu_seconds(process.pid) for process in processes)
        return workers_cpu, backend.database_cpu_seconds()

    deadline = time.monotonic() + timeout
    # Polled on /count: the full stats hold every latency, costly to send at 100,000 pushes.
    while time.monotonic() < deadline and stats(port, "/count")["count"] == 0:
        time.sleep(0.02)
    started, first = cpu(), stats(port, "/count")["count"]
    while time.monotonic() < deadline and stats(port, "/count")["count"] < expected:
        time.sleep(0.2)
    result, finished = stats(port), cpu()
    pushes = max(result["count"] - first, 1)
    result["worker_cpu_ms"] = (finished[0] - started[0]) / pushes * 1000
    result["database_cpu_ms"] = (
        None
        if started[1] is None or finished[1] is None
        else (finished[1] - started[1]) / pushes * 1000
    )
    return result


def throughput(
    backend: Backend, subscriptions: int, pushes: int, workers: int, slow: bool = False
) -> dict:  # type: ignore[type-arg]
    """Pushes/s (``rate``) draining a backlog, with the CPU per push of each side."""
    with endpoint() as port, endpoint(hang=True) as dead, tempfile.TemporaryDirectory() as tmp:
        routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(subscriptions)]
        if slow:
            routes.append(f"http://127.0.0.1:{dead}/never")
        messages = max(1, pushes // subscriptions)
        url = backend.new_database()
        prepare_backlog(Path(tmp), url, routes, messages)
        result = drain(Path(tmp), backend, url, workers, port, messages * subscriptions)
        span = (result["last"] or 0) - (result["first"] or 0)
        result["rate"] = result["count"] / span if span > 0 else 0.0
        return result


def paced_latency(backend: Backend, rate: int, seconds: int) -> dict[str, float]:
    env = backend.env(backend.new_database())
    with endpoint() as port, running_gateway("serve", 1, **env) as server:
        client = server.client
        assert client.send("PUT", "/topics/paced", b"<Topic/>").status == 201
        sub = f"<Subscription><Endpoint>http://127.0.0.1:{port}/p</Endpoint></Subscription>"
        assert client.send("PUT", "/topics/paced/subscriptions/s", sub.encode()).status == 201
        body = f"<Message><MessageBody>{BODY}</MessageBody></Message>".encode()
        headers = client.headers_for("POST", "/topics/paced/messages", body)
        connection = http.client.HTTPConnection(client.host, client.port, timeout=10)
        total = rate * seconds
        start = time.monotonic()
        for n in range(total):
            time.sleep(max(0.0, start + n / rate - time.monotonic()))
            connection.request("POST", "/topics/paced/messages", body, headers)
            connection.getresponse().read()
        deadline = time.monotonic() + 10
        while stats(port)["count"] < total and time.monotonic() < deadline:
            time.sleep(0.1)
        latencies = sorted(stats(port)["latencies_ms"])
    return {
        "count": len(latencies),
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99) - 1],
    }


def _cpu(result: dict) -> str:  # type: ignore[type-arg]
    database = result["database_cpu_ms"]
    text = f"worker CPU {result['worker_cpu_ms']:.2f} ms/push"
    return text if database is None else f"{text}, database {database:.2f} ms/push"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pushes", type=int, default=6000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as databases:
        print(f"throughput: backlog drained by {args.workers} `mns-gateway worker` processes")
        for subscriptions in (1, 10, 100):
            for backend in databases:
                r = throughput(backend, subscriptions, args.pushes, args.workers)
                print(
                    f"  {backend.label:<11} 1 topic x {subscriptions:>3} subscriptions:"
                    f" {r['rate']:>7.0f} pushes/s ({r['count']} pushes; {_cpu(r)})",
                    flush=True,
                )
        for backend in databases:
            healthy = throughput(backend, 10, args.pushes, args.workers)["rate"]
            beside = throughput(backend, 10, args.pushes, args.workers, slow=True)["rate"]
            print(
                f"  {backend.label:<11} 10 healthy alone: {healthy:.0f}/s; beside a timing-out"
                f" endpoint: {beside:.0f}/s ({beside / healthy:.0%} of alone)",
                flush=True,
            )
        for backend in databases:
            latency = paced_latency(backend, 200, args.seconds)
            print(
                f"{backend.label}: latency at 200 msg/s on `mns-gateway serve`:"
                f" p50 {latency['p50']:.1f} ms, p99 {latency['p99']:.1f} ms"
                f" over {latency['count']} pushes",
                flush=True,
            )


if __name__ == "__main__":
    main()
