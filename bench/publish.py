"""PublishMessage throughput and latency over real HTTP, SDK-style signed requests.

Runs ``mns-gateway serve`` (one worker process) and ``gunicorn gateway.wsgi:app`` with 2 workers,
each against a topic with 1 and with 10 subscriptions, and prints requests/s and p50/p99 latency.
Delivery workers are turned off so the figures describe the publish path alone; bench/fanout.py
measures deliveries. Target on the 2-core machine: >= 2,000 publishes/s with one subscription,
p99 < 30 ms.

    .venv/bin/python bench/publish.py [--seconds 10] [--connections 16]
"""

from __future__ import annotations

import argparse

from harness import require_wrk, run_wrk, running_gateway, worker_cpu_seconds

MESSAGE = (
    '<?xml version="1.0" encoding="UTF-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/">'
    "<MessageBody>" + "x" * 256 + "</MessageBody><MessageTag>bench</MessageTag></Message>"
).encode()


def measure(
    mode: str, workers: int, subscriptions: int, args: argparse.Namespace
) -> dict[str, float]:
    env = {"MNS_GATEWAY_DELIVERY_THREADS": "0", "MNS_GATEWAY_WORKER_CLASS": args.worker_class}
    with running_gateway(mode, workers, **env) as client:
        assert client.send("PUT", "/topics/bench", b"<Topic/>").status == 201
        for i in range(subscriptions):
            body = f"<Subscription><Endpoint>http://127.0.0.1:9/{i}</Endpoint></Subscription>"
            assert (
                client.send("PUT", f"/topics/bench/subscriptions/s{i}", body.encode()).status == 201
            )
        run_wrk(
            client,
            "POST",
            "/topics/bench/messages",
            MESSAGE,
            seconds=2,
            connections=args.connections,
        )  # warm-up
        cpu_before = worker_cpu_seconds(client.port)
        figures = run_wrk(
            client,
            "POST",
            "/topics/bench/messages",
            MESSAGE,
            seconds=args.seconds,
            connections=args.connections,
        )
        # CPU per publish is the figure to compare on a shared machine: requests/s moves with
        # whatever else runs, the workers' own CPU time per request much less.
        cpu = worker_cpu_seconds(client.port) - cpu_before
        figures["cpu_us"] = cpu / max(figures["requests"], 1) * 1e6
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--worker-class",
        default="gevent",
        help="MNS_GATEWAY_WORKER_CLASS: gevent, gthread, or a gunicorn class path to compare",
    )
    args = parser.parse_args()
    require_wrk()
    print(
        f"{'server':<24}{'subs':>5}{'publish/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'cpu us/req':>12}  statuses"
    )
    for mode, workers in (("serve", 1), ("gunicorn", 2)):
        for subscriptions in (1, 10):
            figures = measure(mode, workers, subscriptions, args)
            label = f"{mode} ({workers} worker{'s' if workers > 1 else ''})"
            print(
                f"{label:<24}{subscriptions:>5}{figures['rps']:>12.0f}{figures['p50_ms']:>9.2f}"
                f"{figures['p99_ms']:>9.2f}{figures['cpu_us']:>12.0f}"
                f"{figures['errors'] + figures['non2xx']:>8.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
