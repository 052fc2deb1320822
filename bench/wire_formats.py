"""XML + Signature V2 against JSON + Signature V4 (x-mns-version 2026-04-09), in one run.

One ``mns-gateway serve --workers N`` on a fresh database; each round measures both wire formats
in turn (alternating which goes first, so the shared machine's noise hits both alike), each on its
own queue and topic: ``publish`` (one subscription, delivery workers off, as bench/publish.py),
``send`` (SendMessage) and ``cycle`` (receive + delete of one message). It prints per round and
format the operations per second and the gateway's CPU per operation (its process tree, from
/proc), then each format's ranges side by side.

Publish and send replay one pre-signed request with wrk (a signature holds for the 15-minute Date
window). A cycle's delete names the handle just received, so cycles are driven by Python threads
that sign each delete (V2: DeleteMessage with ``?ReceiptHandle=``; V4: the JSON API's
BatchDeleteMessage of one handle, all the 2026-04-09 SDK has): the client's signing costs the
client, not the gateway, and CPU per operation counts the gateway alone.

    .venv/bin/python bench/wire_formats.py [--rounds 4] [--seconds 6] [--workers 2]
        [--connections 16] [--cycle-threads 4] [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from backends import Backend, CpuMeter, add_database_arguments, backends
from harness import KEY_ID, SECRET, require_wrk, run_wrk, running_gateway
from publish import MESSAGE
from queues import BODY, ONE, create_queue

from tests.mns_http import RawClient
from tests.v4_signer import V4RawClient

JSON_HEADERS = {"x-mns-version": "2026-04-09", "Content-Type": "application/json"}
JSON_SEND = json.dumps({"MessageBody": BODY}).encode()
JSON_PUBLISH = json.dumps({"MessageBody": "x" * 256, "MessageTag": "bench"}).encode()
OPERATIONS = ("publish", "send", "cycle")


@dataclass(frozen=True)
class WireFormat:
    """How one format sends, publishes, receives and deletes."""

    label: str
    client: RawClient
    send_body: bytes
    publish_body: bytes
    handle: Callable[[bytes], str]
    delete: Callable[[str, str], tuple[str, bytes]]  # queue, handle -> uri, body


def _xml_handle(body: bytes) -> str:
    return re.search(rb"<ReceiptHandle>([^<]+)<", body).group(1).decode()  # type: ignore[union-attr]


def formats(port: int) -> list[WireFormat]:
    xml = RawClient("127.0.0.1", port, KEY_ID, SECRET)
    as_json = V4RawClient("127.0.0.1", port, KEY_ID, SECRET, dict(JSON_HEADERS))
    return [
        WireFormat(
            "XML + V2", xml, ONE, MESSAGE, _xml_handle,
            lambda queue, handle: (f"/queues/{queue}/messages?ReceiptHandle={handle}", b""),
        ),
        WireFormat(
            "JSON + V4", as_json, JSON_SEND, JSON_PUBLISH,
            lambda body: json.loads(body)["Messages"][0]["ReceiptHandle"],
            lambda queue, handle: (
                f"/queues/{queue}/messages", json.dumps({"ReceiptHandles": [handle]}).encode()
            ),
        ),
    ]  # fmt: skip


def prepare(client: RawClient, name: str) -> None:
    create_queue(client, name)
    assert client.send("PUT", f"/topics/{name}", b"<Topic/>").status == 201
    subscription = b"<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint></Subscription>"
    assert client.send("PUT", f"/topics/{name}/subscriptions/s", subscription).status == 201


def cycle_thread(fmt: WireFormat, queue: str, deadline: float, counts: list[int]) -> None:
    """Receive + delete until ``deadline``; appends how many messages it deleted."""
    connection = http.client.HTTPConnection(fmt.client.host, fmt.client.port, timeout=60)
    receive_uri = f"/queues/{queue}/messages?numOfMessages=1&waitseconds=0"
    if fmt.label.startswith("XML"):
        receive_uri = f"/queues/{queue}/messages?waitseconds=0"
    receive_headers = fmt.client.headers_for("GET", receive_uri, b"")
    deleted = 0
    while time.monotonic() < deadline:
        connection.request("GET", receive_uri, headers=receive_headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            continue
        uri, delete_body = fmt.delete(queue, fmt.handle(body))
        headers = fmt.client.headers_for("DELETE", uri, delete_body)
        connection.request("DELETE", uri, body=delete_body, headers=headers)
        done = connection.getresponse()
        done.read()
        deleted += done.status == 204
    connection.close()
    counts.append(deleted)


def cycles(fmt: WireFormat, queue: str, args: argparse.Namespace) -> dict[str, float]:
    counts: list[int] = []
    deadline = time.monotonic() + args.seconds
    threads = [
        threading.Thread(target=cycle_thread, args=(fmt, queue, deadline, counts))
        for _ in range(args.cycle_threads)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=args.seconds + 60)
    seconds = time.monotonic() - started
    return {"operations": sum(counts), "per_second": sum(counts) / seconds}


def measure(
    fmt: WireFormat, op: str, name: str, meter: CpuMeter, args: argparse.Namespace
) -> dict[str, float]:
    client = fmt.client
    if op == "cycle":
        # The backlog the cycles consume, sent in the same format (not measured).
        run_wrk(client, "POST", f"/queues/{name}/messages", fmt.send_body, seconds=args.seconds)
        before = meter.read()
        figures = cycles(fmt, name, args)
    else:
        uri = f"/topics/{name}/messages" if op == "publish" else f"/queues/{name}/messages"
        body = fmt.publish_body if op == "publish" else fmt.send_body
        before = meter.read()
        wrk = run_wrk(client, "POST", uri, body, seconds=args.seconds, connections=args.connections)
        assert wrk["non2xx"] == 0, wrk
        figures = {"operations": wrk["requests"], "per_second": wrk["rps"]}
    gateway, _ = meter.per_operation_ms(before, meter.read(), figures["operations"])
    return {**figures, "gateway_ms": gateway}


def spread(values: list[float], digits: int) -> str:
    low, high, middle = min(values), max(values), statistics.median(values)
    return f"{low:.{digits}f}-{high:.{digits}f} ({middle:.{digits}f})"


def run(backend: Backend, args: argparse.Namespace) -> dict[tuple[str, str], list[dict]]:
    results: dict[tuple[str, str], list[dict]] = {}
    env = {"MNS_GATEWAY_DELIVERY_THREADS": "0", **backend.env(backend.new_database())}
    with running_gateway("serve", args.workers, **env) as server:
        meter = CpuMeter(server.pid, backend)
        wire = formats(server.client.port)
        for index, fmt in enumerate(wire):
            prepare(server.client, f"bench{index}")
            run_wrk(fmt.client, "POST", f"/queues/bench{index}/messages", fmt.send_body, seconds=2)
        for round_ in range(args.rounds):
            for op in args.ops:
                order = list(enumerate(wire)) if round_ % 2 == 0 else list(enumerate(wire))[::-1]
                for index, fmt in order:
                    f = measure(fmt, op, f"bench{index}", meter, args)
                    results.setdefault((op, fmt.label), []).append(f)
                    print(
                        f"round {round_} {op:<8}{fmt.label:<10}: {f['per_second']:7.0f}/s"
                        f"  gateway CPU {f['gateway_ms']:.3f} ms/op",
                        flush=True,
                    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", nargs="+", choices=OPERATIONS, default=list(OPERATIONS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--cycle-threads", type=int, default=4)
    add_database_arguments(parser)
    args = parser.parse_args()
    require_wrk()
    with backends(args) as databases:
        backend = databases[-1]  # PostgreSQL when asked for, else SQLite
        print(f"{backend.label}, serve --workers {args.workers}, {args.rounds} rounds")
        results = run(backend, args)
    print("\nranges (median):  per second  |  gateway CPU ms/op")
    for op in args.ops:
        for label in ("XML + V2", "JSON + V4"):
            runs = results[(op, label)]
            print(
                f"{op:<8}{label:<10}: {spread([r['per_second'] for r in runs], 0):>22}"
                f"  |  {spread([r['gateway_ms'] for r in runs], 3)}"
            )


if __name__ == "__main__":
    main()
