"""PublishMessage throughput and latency over real HTTP, SDK-style signed requests.

Runs ``mns-gateway serve`` (one worker process) and ``gunicorn gateway.serving.wsgi:app`` with 2
workers,
each against a topic with 1 and with 10 subscriptions, and prints requests/s, p50/p99 latency and
the CPU each publish cost the gateway (and, on PostgreSQL, the database server). Delivery workers
are turned off so the figures describe the publish path alone; bench/fanout.py measures
deliveries. Targets on the 2-core machine: >= 2,000 publishes/s with one subscription on SQLite,
>= 1,500 on PostgreSQL on the same machine, p99 < 30 ms.

    .venv/bin/python bench/publish.py [--seconds 10] [--connections 16] [--database-url auto|URL]
"""

from __future__ import annotations

import argparse

from backends import Backend, CpuMeter, add_database_arguments, backends
from harness import require_wrk, run_wrk, running_gateway

MESSAGE = (
    '<?xml version="1.0" encoding="UTF-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/">'
    "<MessageBody>" + "x" * 256 + "</MessageBody><MessageTag>bench</MessageTag></Message>"
).encode()


def measure(
    backend: Backend, mode: str, workers: int, subscriptions: int, args: argparse.Namespace
) -> dict[str, float]:
    env = {
        "MNS_GATEWAY_DELIVERY_THREADS": "0",
        "MNS_GATEWAY_WORKER_CLASS": args.worker_class,
        **backend.env(backend.new_database()),
    }
    with running_gateway(mode, workers, **env) as server:
        client = server.client
        assert client.send("PUT", "/topics/bench", b"<Topic/>").status == 201
        for i in range(subscriptions):
            body = f"<Subscription><Endpoint>http://127.0.0.1:9/{i}</Endpoint></Subscription>"
            assert (
                client.send("PUT", f"/topics/bench/subscriptions/s{i}", body.encode()).status == 201
            )
        uri, connections = "/topics/bench/messages", args.connections
        run_wrk(client, "POST", uri, MESSAGE, seconds=2, connections=connections)  # warm-up
        meter = CpuMeter(server.pid, backend)
        before = meter.read()
        figures = run_wrk(
            client, "POST", uri, MESSAGE, seconds=args.seconds, connections=connections
        )
        figures["gateway_cpu_ms"], figures["database_cpu_ms"] = meter.per_operation_ms(
            before, meter.read(), figures["requests"]
        )
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
    add_database_arguments(parser)
    args = parser.parse_args()
    require_wrk()
    print(
        f"{'server':<22}{'database':<12}{'subs':>5}{'publish/s':>11}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'CPU ms: gateway':>17}{'database':>10}  failed"
    )
    with backends(args) as databases:
        for mode, workers in (("serve", 1), ("gunicorn", 2)):
            for subscriptions in (1, 10):
                for backend in databases:  # alternating: the machine's noise hits both alike
                    f = measure(backend, mode, workers, subscriptions, args)
                    label = f"{mode} ({workers} worker{'s' if workers > 1 else ''})"
                    database = f["database_cpu_ms"]
                    print(
                        f"{label:<22}{backend.label:<12}{subscriptions:>5}{f['rps']:>11.0f}"
                        f"{f['p50_ms']:>8.2f}{f['p99_ms']:>8.2f}{f['gateway_cpu_ms']:>17.3f}"
                        f"{'-' if database is None else f'{database:.3f}':>10}"
                        f"{f['errors'] + f['non2xx']:>8.0f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
