"""Queue throughput and long-poll wake-up latency over real HTTP, SDK-style signed requests.

Runs ``mns-gateway serve --workers 2`` and measures, in this order:

0. as a baseline on the same server, PublishMessage/s to a topic without subscriptions,
1. SendMessage/s (wrk replaying one pre-signed 256-byte message),
2. BatchSendMessage of 16 (messages/s),
3. receive + delete cycles/s, one message at a time: wrk signs every request itself (HMAC-SHA1
   in LuaJIT, below) because each DELETE carries the handle the previous receive returned,
4. the same with batches of 16 (BatchReceiveMessage + BatchDeleteMessage, messages/s),
5. long-poll wake-up latency: a receiver waits with ``waitseconds=10``; the time from the
   start of a SendMessage on another connection to the receive's return, p50/p99, split by
   whether the sender and the receiver were served by the same worker process (read from the
   pid inside ``x-mns-request-id``).

Cycles are counted from the queue itself (messages gone between before and after), not from the
client. Beside each rate it prints the gateway's CPU time per operation (all its processes, from
/proc), which depends far less than throughput on what else the shared machine is running, and
with ``--database-url`` the same for PostgreSQL beside SQLite, with the database server's CPU.
Targets on the 2-core machine: 2,000 sends/s, 1,000 single cycles/s, 10,000 messages/s with
batches, wake-up p99 under 20 ms. The machine is shared: figures vary between runs.

    .venv/bin/python bench/queues.py [--seconds 10] [--connections 16] [--samples 200]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import re
import statistics
import subprocess
import threading
import time
from pathlib import Path

from backends import Backend, CpuMeter, add_database_arguments, backends
from harness import KEY_ID, SECRET, BenchServer, require_wrk, run_wrk, running_gateway

from tests.mns_http import RawClient

NS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'
BODY = "x" * 256
ONE = f"<Message {NS}><MessageBody>{BODY}</MessageBody></Message>".encode()
SIXTEEN = (
    f"<Messages {NS}>"
    + f"<Message><MessageBody>{BODY}</MessageBody></Message>" * 16
    + "</Messages>"
).encode()
#: wrk script: receive, then delete what was received, signing each request (HMAC-SHA1 and
#: base64 written out for LuaJIT, which has neither built in).
CYCLE_LUA = Path(__file__).with_name("cycle.lua")


def create_queue(client: RawClient, name: str) -> None:
    body = f"<Queue {NS}><VisibilityTimeout>300</VisibilityTimeout></Queue>".encode()
    assert client.send("PUT", f"/queues/{name}", body).status == 201


def stored(client: RawClient, name: str) -> int:
    """Messages still in the queue, whatever their state."""
    text = client.send("GET", f"/queues/{name}").body.decode()
    return sum(
        int(re.search(rf"<{e}>(\d+)</{e}>", text).group(1))  # type: ignore[union-attr]
        for e in ("ActiveMessages", "InactiveMessages", "DelayMessages")
    )


def cycles(client: RawClient, name: str, batch: int, args: argparse.Namespace) -> dict[str, float]:
    """wrk running receive+delete cycles for ``args.seconds``; messages deleted per second."""
    before = stored(client, name)
    env = {
        **os.environ,
        "BENCH_KEY_ID": KEY_ID,
        "BENCH_SECRET": SECRET,
        "BENCH_QUEUE": name,
        "BENCH_BATCH": str(batch),
        "BENCH_WAIT": str(getattr(args, "wait", 0)),
    }
    command = [
        require_wrk(),
        "-t1",
        f"-c{args.connections}",
        f"-d{args.seconds}s",
        "-s",
        str(CYCLE_LUA),
        f"http://{client.host}:{client.port}",
    ]
    output = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=args.seconds + 60, check=True
    ).stdout
    line = next(line for line in output.splitlines() if line.startswith("BENCH "))
    figures = json.loads(line[len("BENCH ") :])
    figures["deleted"] = before - stored(client, name)
    figures["per_second"] = figures["deleted"] / figures["seconds"]
    return figures


class KeepAlive:
    """One persistent connection signing requests like the SDK; returns status, headers, body."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.connection = http.client.HTTPConnection(client.host, client.port, timeout=60)

    def send(self, method: str, uri: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        headers = self.client.headers_for(method, uri, body)
        self.connection.request(method, uri, body=body, headers=headers)
        response = self.connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    def close(self) -> None:
        self.connection.close()


def worker_of(headers: dict[str, str]) -> str:
    """The serving process: ``x-mns-request-id`` carries its pid in characters 8-12."""
    return headers["x-mns-request-id"][8:12]


def wake_latencies(client: RawClient, samples: int) -> dict[str, list[float]]:
    create_queue(client, "latency")
    results: queue.Queue[tuple[float, str, str]] = queue.Queue()
    waiting = threading.Event()

    def receiver() -> None:
        connection = KeepAlive(client)
        for _ in range(samples):
            waiting.set()
            status, headers, body = connection.send(
                "GET", "/queues/latency/messages?waitseconds=10"
            )
            returned = time.perf_counter()
            handle = re.search(rb"<ReceiptHandle>([^<]+)<", body)
            assert status == 200 and handle, body
            results.put((returned, worker_of(headers), handle.group(1).decode()))
        connection.close()

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    split: dict[str, list[float]] = {"same worker": [], "other worker": []}
    deleter = KeepAlive(client)
    for _ in range(samples):
        assert waiting.wait(30)
        waiting.clear()
        time.sleep(0.02)  # let the receive reach the server and go to sleep there
        sender = KeepAlive(client)  # a new connection: either worker may take it
        started = time.perf_counter()
        status, headers, _ = sender.send("POST", "/queues/latency/messages", ONE)
        assert status == 201
        sender.close()
        returned, receiving_worker, handle = results.get(timeout=30)
        same = worker_of(headers) == receiving_worker
        split["same worker" if same else "other worker"].append((returned - started) * 1000)
        deleter.send("DELETE", f"/queues/latency/messages?ReceiptHandle={handle}")
    thread.join(timeout=30)
    deleter.close()
    return split


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def measure(
    server: BenchServer, backend: Backend, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """Each phase's figures plus ``cpu_ms`` and ``db_cpu_ms``: gateway and database server CPU
    per operation (per message for batches), which, unlike throughput, barely depends on what
    else the machine runs."""
    client, meter = server.client, CpuMeter(server.pid, backend)
    for name in ("single", "batched"):
        create_queue(client, name)
    assert client.send("PUT", "/topics/baseline", b"<Topic/>").status == 201
    run_wrk(client, "POST", "/queues/single/messages", ONE, seconds=2)  # warm-up
    seconds, connections = args.seconds, args.connections
    phases = {
        "publish": lambda: run_wrk(
            client,
            "POST",
            "/topics/baseline/messages",
            ONE,
            seconds=seconds,
            connections=connections,
        ),
        "send": lambda: run_wrk(
            client, "POST", "/queues/single/messages", ONE, seconds=seconds, connections=connections
        ),
        "batch send": lambda: run_wrk(
            client,
            "POST",
            "/queues/batched/messages",
            SIXTEEN,
            seconds=seconds,
            connections=connections,
        ),
        "cycles": lambda: cycles(client, "single", 1, args),
        "batch cycles": lambda: cycles(client, "batched", 16, args),
    }
    figures: dict[str, dict[str, float]] = {}
    for key, phase in phases.items():
        before = meter.read()
        result = phase()
        if "per_second" not in result:
            result["per_second"] = result["rps"] * (16 if key == "batch send" else 1)
        operations = result["per_second"] * result["seconds"]
        result["cpu_ms"], result["db_cpu_ms"] = meter.per_operation_ms(
            before, meter.read(), operations
        )
        figures[key] = result
    return figures


LABELS = {
    "publish": "PublishMessage, no subscription (baseline)",
    "send": "SendMessage",
    "batch send": "BatchSendMessage x16 (messages)",
    "cycles": "receive + delete cycles",
    "batch cycles": "batch receive + delete x16 (messages)",
}
Run = tuple[dict[str, dict[str, float]], dict[str, list[float]]]


def report_rates(runs: dict[str, Run]) -> None:
    print(
        f"{'operation':<44}{'database':<12}{'per second':>11}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'CPU ms':>8}{'DB ms':>7}{'2-core ceiling':>16}  failed  empty"
    )
    for key, label in LABELS.items():
        for database, (figures, _) in runs.items():
            f = figures[key]
            failed = f.get("non2xx", f.get("failed", 0)) + f["errors"]
            total = f["cpu_ms"] + (f["db_cpu_ms"] or 0)
            ceiling = 2000 / total if total else float("nan")
            db = "-" if f["db_cpu_ms"] is None else f"{f['db_cpu_ms']:.3f}"
            print(
                f"{label:<44}{database:<12}{f['per_second']:>11.0f}{f['p50_ms']:>8.2f}"
                f"{f['p99_ms']:>8.2f}{f['cpu_ms']:>8.3f}{db:>7}{ceiling:>16.0f}{failed:>8.0f}"
                f"{f.get('empty', 0):>7.0f}"
            )
    print(
        "\nCPU ms: gateway CPU (all its processes) per operation, per message for batches;"
        "\nDB ms: the PostgreSQL server's. 2-core ceiling: 2 s of CPU per second divided by"
        "\ntheir sum, an upper bound for an otherwise idle machine (it leaves out wrk's own CPU"
        "\nand the disk's fsync latency)."
    )
    print("\nper-request rate vs the PublishMessage baseline on the same server:")
    for database, (figures, _) in runs.items():
        baseline = figures["publish"]["per_second"]
        send_ratio = figures["send"]["per_second"] / baseline
        cycle_ratio = 2 * figures["cycles"]["per_second"] / baseline
        print(
            f"  {database}: SendMessage {send_ratio:.2f}, receive+delete requests {cycle_ratio:.2f}"
        )


def report_wakeups(runs: dict[str, Run]) -> None:
    for database, (_, latencies) in runs.items():
        everything = [v for values in latencies.values() for v in values]
        print(f"\n{database}: long-poll wake-up, send start -> receive return ({len(everything)}):")
        for label, values in (*latencies.items(), ("all", everything)):
            if values:
                print(
                    f"  {label:<14}n={len(values):<5}p50 {percentile(values, 0.5):6.2f} ms   "
                    f"p99 {percentile(values, 0.99):6.2f} ms   max {max(values):6.2f} ms   "
                    f"mean {statistics.fmean(values):6.2f} ms"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--samples", type=int, default=200)
    add_database_arguments(parser)
    args = parser.parse_args()
    require_wrk()
    runs: dict[str, Run] = {}
    with backends(args) as databases:
        for backend in databases:
            env = backend.env(backend.new_database())
            with running_gateway("serve", workers=2, **env) as server:
                figures = measure(server, backend, args)
                runs[backend.label] = (figures, wake_latencies(server.client, args.samples))
    report_rates(runs)
    report_wakeups(runs)


if __name__ == "__main__":
    main()
