"""A queue's TenantRateLimitPolicy holding at 10, 100 and 1,000 received messages per second.

Runs ``mns-gateway serve --workers 2`` (two processes sharing the database: the limit is kept
there, as it is across replicas; on SQLite, and with ``--database-url`` on PostgreSQL too). For
each rate it creates a queue through the control plane (the Darabonba SDK, MaxReceivesPerSecond
set), fills it with more messages than the run can take, then lets ``--threads`` receivers ask for
batches of 16 as fast as they can for ``--seconds`` whole seconds, starting on a second boundary,
each answer counted in the second it arrives. It prints, per rate: messages received per second
on average and in the busiest second, their deviation from the limit, and the receives refused
with 429 TooManyRequests.

    .venv/bin/python bench/rate_limits.py [--seconds 5] [--threads 8]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import Counter

from alibabacloud_mns_open20220119 import models as m
from alibabacloud_mns_open20220119.client import Client
from alibabacloud_tea_openapi.models import Config
from backends import add_database_arguments, backends
from harness import KEY_ID, SECRET, running_gateway
from queues import NS

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

    def off(value: float) -> str:
        return f"{100 * (value - rate) / rate:+.1f} %"

    return (
        f"  limit {rate:>5}/s: {average:8.1f}/s on average ({off(average)}),"
        f" busiest second {busiest} ({off(busiest)}), {refused} receives refused (429)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=8)
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            env = backend.env(backend.new_database())
            with running_gateway("serve", workers=2, **env) as server:
                print(f"{backend.label}, 2 gateway processes, {args.threads} receivers:")
                for rate in RATES:
                    line = run_rate(
                        server.client, server.client.port, rate, args.seconds, args.threads
                    )
                    print(line, flush=True)


if __name__ == "__main__":
    main()
