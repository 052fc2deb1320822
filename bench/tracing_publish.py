"""CPU per PublishMessage with tracing off and on (the API side of issue 37's measure).

``mns-gateway serve`` (one process, delivery off, SQLite) takes pre-signed PublishMessage
requests from wrk for ``--seconds`` after a warm-up, to a topic with one subscription; the
gateway's CPU per publish from /proc. Two ways, alternating their order each round: ``off``
(no ``OTEL_*``) and ``on`` (``OTEL_EXPORTER_OTLP_ENDPOINT`` at a local OTLP/HTTP receiver in
this process, ``OTEL_TRACES_SAMPLER=always_on``: a ``send`` span per publish, exported, and the
span's ``traceparent`` added to each stored message). Then each way's range and, per round, on
against off.

    .venv/bin/python bench/tracing_publish.py [--seconds 5] [--rounds 3] [--connections 8]
"""

from __future__ import annotations

import argparse
import os
import time

from backends import Backend, CpuMeter
from harness import require_wrk, run_wrk, running_gateway
from publish import MESSAGE

from tests.otlp_collector import OtlpCollector

WAYS = ("off", "on")


def measure(way: str, collector: OtlpCollector, args: argparse.Namespace) -> dict[str, float]:
    traced = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_TRACES_SAMPLER": "always_on",
    }
    env = {"MNS_GATEWAY_DELIVERY_THREADS": "0", **(traced if way == "on" else {})}
    spans_before = len(collector.spans)
    with running_gateway("serve", 1, **env) as server:
        client = server.client
        assert client.send("PUT", "/topics/traced", b"<Topic/>").status == 201
        body = b"<Subscription><Endpoint>http://127.0.0.1:9/s</Endpoint></Subscription>"
        assert client.send("PUT", "/topics/traced/subscriptions/s", body).status == 201
        uri = "/topics/traced/messages"
        run_wrk(client, "POST", uri, MESSAGE, seconds=2, connections=args.connections)
        meter = CpuMeter(server.pid, Backend("SQLite"))
        before = meter.read()
        figures = run_wrk(
            client, "POST", uri, MESSAGE, seconds=args.seconds, connections=args.connections
        )
        figures["cpu_ms"], _ = meter.per_operation_ms(before, meter.read(), figures["requests"])
    time.sleep(0.2)
    figures["spans"] = len(collector.spans) - spans_before
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    require_wrk()
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print(f"{'round':>5}  {'tracing':<8} {'CPU ms/publish':>14} {'publish/s':>10} {'spans':>7}")
    with OtlpCollector() as collector:
        for round_number in range(args.rounds):
            for way in WAYS if round_number % 2 == 0 else WAYS[::-1]:
                figures = measure(way, collector, args)
                cpu[way].append(figures["cpu_ms"])
                print(
                    f"{round_number + 1:>5}  {way:<8} {figures['cpu_ms']:>14.3f} "
                    f"{figures['rps']:>10.0f} {figures['spans']:>7}",
                    flush=True,
                )
    print(f"load average after: {os.getloadavg()[0]:.1f}\n")
    for way, values in cpu.items():
        print(f"{way:<4} CPU ms/publish {min(values):.3f} - {max(values):.3f}")
    ratios = [f"{on / off - 1:+.0%}" for on, off in zip(cpu["on"], cpu["off"], strict=True)]
    print(f"on against off per round: {', '.join(ratios)}")


if __name__ == "__main__":
    main()
