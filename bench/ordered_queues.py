"""Ordered (FIFO) queue receive+delete throughput with 1, 10 and 1,000 message groups, against a
standard queue on the same server as the baseline.

Runs ``mns-gateway serve --workers 2`` (on SQLite, and with ``--database-url`` on PostgreSQL
too), fills each queue with ``--messages`` 256-byte messages spread round-robin over its groups
(BatchSendMessage, each message with its MessageGroupId), then lets wrk run receive+delete
cycles for ``--seconds`` on ``--connections`` connections, signing every request itself
(``cycle.lua``, the same script as ``bench/queues.py``), one message per cycle and then batches
of 16. An ordered queue has at most one message in flight per group, so with fewer groups than
connections most receives find nothing (``empty``, 404 MessageNotExist) and the rate is bounded
by the round trips one group's messages go through one after the other; with many groups it
approaches the standard queue's. Cycles are counted from the queue itself (messages gone between
before and after). Beside each rate: the gateway's CPU time per deleted message (and with
PostgreSQL the database server's), which depends far less on what else the shared machine runs.

    .venv/bin/python bench/ordered_queues.py [--seconds 10] [--connections 16]
        [--messages 20000] [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from backends import Backend, CpuMeter, add_database_arguments, backends
from harness import BenchServer, require_wrk, running_gateway
from queues import NS, cycles

from tests.mns_http import RawClient

BODY = "x" * 256
#: (label, QueueType, number of groups or None for a standard queue, connections or None for
#: ``--connections``, waitseconds). One group is one message at a time: its bound is a
#: standard queue driven by one connection, cycle after cycle. With fewer groups than
#: connections, consumers that long-poll (as ordered-queue consumers should) sleep instead of
#: asking again at once.
SCENARIOS: tuple[tuple[str, str, int | None, int | None, int], ...] = (
    ("standard queue (baseline)", "normal", None, None, 0),
    ("standard, one connection", "normal", None, 1, 0),
    ("ordered, 1 group", "fifo", 1, None, 0),
    ("ordered, 1 group, long polls", "fifo", 1, None, 5),
    ("ordered, 10 groups", "fifo", 10, None, 0),
    ("ordered, 10 groups, long polls", "fifo", 10, None, 5),
    ("ordered, 1,000 groups", "fifo", 1000, None, 0),
)


def fill(client: RawClient, name: str, queue_type: str, groups: int | None, total: int) -> None:
    body = (
        f"<Queue {NS}><QueueType>{queue_type}</QueueType>"
        "<VisibilityTimeout>300</VisibilityTimeout></Queue>"
    ).encode()
    assert client.send("PUT", f"/queues/{name}", body).status == 201
    for start in range(0, total, 16):
        entries = "".join(
            f"<Message><MessageBody>{BODY}</MessageBody>"
            + (f"<MessageGroupId>g{i % groups}</MessageGroupId>" if groups else "")
            + "</Message>"
            for i in range(start, min(start + 16, total))
        )
        response = client.send(
            "POST", f"/queues/{name}/messages", f"<Messages {NS}>{entries}</Messages>".encode()
        )
        assert response.status == 201, response.body


def measure(
    server: BenchServer, backend: Backend, args: argparse.Namespace
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per scenario, per batch size (1, 16): wrk's figures with ``per_second`` deleted messages
    and CPU per deleted message."""
    meter = CpuMeter(server.pid, backend)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for index, (label, queue_type, groups, connections, wait) in enumerate(SCENARIOS):
        results[label] = {}
        run_args = argparse.Namespace(
            **{**vars(args), "connections": connections or args.connections, "wait": wait}
        )
        for batch in (1, 16):
            name = f"q{index}b{batch}"
            fill(server.client, name, queue_type, groups, args.messages)
            before = meter.read()
            figures = cycles(server.client, name, batch, run_args)
            deleted = max(figures["deleted"], 1)
            figures["cpu_ms"], figures["db_cpu_ms"] = meter.per_operation_ms(
                before, meter.read(), deleted
            )
            results[label][f"x{batch}"] = figures
    return results


def report(runs: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> None:
    print(
        f"{'queue':<32}{'database':<12}{'batch':>6}{'deleted/s':>11}{'vs std':>8}"
        f"{'p50 ms':>8}{'p99 ms':>8}{'empty':>8}{'CPU ms':>8}{'DB ms':>7}"
    )
    for label, *_ in SCENARIOS:
        for database, results in runs.items():
            for batch, f in results[label].items():
                baseline = results[SCENARIOS[0][0]][batch]["per_second"]
                db: Callable[[], str] = lambda f=f: (  # noqa: E731
                    "-" if f["db_cpu_ms"] is None else f"{f['db_cpu_ms']:.3f}"
                )
                print(
                    f"{label:<32}{database:<12}{batch:>6}{f['per_second']:>11.0f}"
                    f"{f['per_second'] / baseline:>8.2f}{f['p50_ms']:>8.2f}{f['p99_ms']:>8.2f}"
                    f"{f['empty']:>8.0f}{f['cpu_ms']:>8.3f}{db():>7}"
                )
    print(
        "\ndeleted/s: messages received and deleted per second (batch x16: messages, not"
        "\nrequests); vs std: the same against the standard queue in the same run; empty:"
        "\nreceives answered MessageNotExist (every group's head in flight); CPU ms: gateway CPU"
        "\nper deleted message, DB ms: the PostgreSQL server's."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--messages", type=int, default=20000)
    add_database_arguments(parser)
    args = parser.parse_args()
    require_wrk()
    runs = {}
    with backends(args) as databases:
        for backend in databases:
            env = backend.env(backend.new_database())
            with running_gateway("serve", workers=2, **env) as server:
                runs[backend.label] = measure(server, backend, args)
    report(runs)


if __name__ == "__main__":
    main()
