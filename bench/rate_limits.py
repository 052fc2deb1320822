"""TenantRateLimitPolicy holding at 10, 100 and 1,000 per second: a queue's received messages,
and a subscription's pushes.

Runs ``mns-gateway serve --workers 2`` (two processes sharing the database: the limit is kept
there, as it is across replicas; on SQLite, and with ``--database-url`` on PostgreSQL too). For
each rate it creates a queue through the control plane (the Darabonba SDK, MaxReceivesPerSecond
set), fills it with more messages than the run can take, then lets ``--threads`` receivers ask for
batches of 16 as fast as they can for ``--seconds`` whole seconds, starting on a second boundary,
each answer counted in the second it arrives. It prints, per rate: messages received per second
on average and in the busiest second, their deviation from the limit, and the receives refused
with 429 TooManyRequests.

Pushes: for each rate a topic with one subscription to a local endpoint (``bench/endpoint.py``)
and a published backlog larger than the run can push, the subscription limited to the rate;
two ``mns-gateway worker`` processes (two replicas' delivery workers) drain it for
``--seconds``; the endpoint counts arrivals per second. It prints the same figures, after a
baseline: the same workers draining the 1,000/s run's backlog of a subscription without a
limit, so the figures say whether the limit or the machine caps the rate.

    .venv/bin/python bench/rate_limits.py [--seconds 5] [--threads 8]
        [--only receives|pushes] [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from alibabacloud_mns_open20220119 import models as m
from alibabacloud_mns_open20220119.client import Client
from alibabacloud_tea_openapi.models import Config
from backends import Backend, add_database_arguments, backends, tree_cpu_seconds
from fanout import endpoint, prepare_backlog, start_workers, stats
from harness import KEY_ID, SECRET, gateway_env, running_gateway
from queues import NS

from gateway.config.settings import Settings
from gateway.store.control import RateLimitPolicy
from gateway.store.opening import open_store
from tests.mns_http import RawClient

RATES = (10, 100, 1000)


def create_limited_queue(port: int, name: str, rate: int) -> None:
    config = Config(
        access_key_id=KEY_ID, access_key_secret=SECRET, endpoint=f"127.0.0.1:{port}",
        protocol="http", region_id="cn-hangzhou",
    )  # fmt: skip
    Client(config).create_queue(
        m.CreateQueueRequest(
            queue_name=name,
            visibility_timeout=3600,
            tenant_rate_limit_policy=m.CreateQueueRequestTenantRateLimitPolicy(
                enabled=True, max_receives_per_second=rate
            ),
        )
    )


def fill(client: RawClient, name: str, total: int) -> None:
    for start in range(0, total, 16):
        count = min(16, total - start)
        body = f"<Messages {NS}>" + "<Message><MessageBody>x</MessageBody></Message>" * count
        response = client.send("POST", f"/queues/{name}/messages", f"{body}</Messages>".encode())
        assert response.status == 201, response


def receive_for(client: RawClient, name: str, start: float, end: float) -> tuple[Counter, int]:
    """Messages received per second of ``[start, end)``, and receives refused."""
    per_second: Counter[int] = Counter()
    refused = 0
    while time.time() < start:
        time.sleep(0.001)
    while time.time() < end:
        response = client.send("GET", f"/queues/{name}/messages?numOfMessages=16")
        done = time.time()
        # Counted when the answer arrives, and only answers within the run: a receive sent just
        # before ``end`` may take its grant from the next second, and is left out with it.
        if done >= end:
            break
        if response.status == 429:
            refused += 1
        elif response.status == 200:
            per_second[int(done)] += response.body.count(b"<Message>")
    return per_second, refused


def run_rate(client: RawClient, port: int, rate: int, seconds: int, threads: int) -> str:
    name = f"limited-{rate}"
    create_limited_queue(port, name, rate)
    fill(client, name, rate * (seconds + 2) + 64)
    start = float(int(time.time()) + 2)
    end = start + seconds
    results: list[tuple[Counter, int]] = []
    lock = threading.Lock()

    def worker() -> None:
        outcome = receive_for(client, name, start, end)
        with lock:
            results.append(outcome)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(seconds + 60)
    per_second: Counter[int] = Counter()
    for counts, _ in results:
        per_second.update(counts)
    refused = sum(r for _, r in results)
    average = sum(per_second.values()) / seconds
    busiest = max(per_second.values(), default=0)

    return describe(rate, average, busiest, refused)


def push_rate(backend: Backend, rate: int | None, seconds: int, workers: int) -> str:
    """Pushes per second of a subscription limited to ``rate`` (``None``: not limited), drained
    by ``workers``, and the CPU each push cost the workers and the database server."""
    with tempfile.TemporaryDirectory(prefix="mns-bench-") as data_dir, endpoint() as port:
        database_url = backend.new_database()
        backlog = (rate or max(RATES)) * (seconds + 3)
        prepare_backlog(Path(data_dir), database_url, [f"http://127.0.0.1:{port}/"], backlog)
        if rate is not None:
            settings = Settings(data_dir=Path(data_dir), database_url=database_url or "")
            store = open_store(settings)
            policy = RateLimitPolicy(True, rate)
            store.control.set_rate_limit("subscription", "fanout/s000", policy)
            store.close()
        env = gateway_env(Path(data_dir), **backend.env(database_url))
        arrivals, cpu = measure_pushes(backend, env, port, seconds, workers)
    # Whole seconds only: the first and last second with arrivals are partial.
    counts = [arrivals[key] for key in sorted(arrivals, key=int)][1:-1]
    average, busiest = sum(counts) / max(1, len(counts)), max(counts, default=0)
    head = (
        f"  no limit:     {average:8.1f}/s on average, busiest second {busiest}"
        if rate is None
        else describe(rate, average, busiest, None)
    )
    return f"{head}; CPU/push {cpu}"


def measure_pushes(
    backend: Backend, env: dict[str, str], port: int, seconds: int, workers: int
) -> tuple[dict[str, int], str]:
    """The endpoint's arrivals per second while ``workers`` push for ``seconds`` (and the
    partial seconds around them), and the CPU per push of the workers and the database."""
    processes = start_workers(env, workers)

    def cpu() -> tuple[float, float | None]:
        workers_cpu = sum(tree_cpu_seconds(process.pid) for process in processes)
        return workers_cpu, backend.database_cpu_seconds()

    try:
        deadline = time.monotonic() + 60  # the workers' start-up, bounded
        while not stats(port)["count"] and time.monotonic() < deadline:
            time.sleep(0.1)
        before, first = cpu(), stats(port)["count"]
        time.sleep(seconds + 2)  # the measured seconds, and the partial ones around them
        after, result = cpu(), stats(port)
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(20)
    pushes = max(1, result["count"] - first)
    figures = f"workers {(after[0] - before[0]) / pushes * 1000:.2f} ms"
    if before[1] is not None and after[1] is not None:
        figures += f", database {(after[1] - before[1]) / pushes * 1000:.2f} ms"
    return result["per_second"], figures


def describe(rate: int, average: float, busiest: int, refused: int | None) -> str:
    def off(value: float) -> str:
        return f"{100 * (value - rate) / rate:+.1f} %"

    tail = "" if refused is None else f", {refused} receives refused (429)"
    return (
        f"  limit {rate:>5}/s: {average:8.1f}/s on average ({off(average)}),"
        f" busiest second {busiest} ({off(busiest)}){tail}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--only", choices=("receives", "pushes"), help="one of the two")
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            if args.only != "pushes":
                receive_rates(backend, args.seconds, args.threads)
            if args.only != "receives":
                print(f"{backend.label}, pushes of one subscription, 2 delivery workers:")
                for rate in (None, *RATES):
                    print(push_rate(backend, rate, args.seconds, 2), flush=True)


def receive_rates(backend: Backend, seconds: int, threads: int) -> None:
    env = backend.env(backend.new_database())
    with running_gateway("serve", workers=2, **env) as server:
        print(f"{backend.label}, 2 gateway processes, {threads} receivers:")
        for rate in RATES:
            print(run_rate(server.client, server.client.port, rate, seconds, threads), flush=True)


if __name__ == "__main__":
    main()
