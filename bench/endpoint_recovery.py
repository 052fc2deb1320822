"""An endpoint coming back, again and again: how long its backlog takes after the probe
(issue 35; docs/delivery.md#endpoint-health, figures in docs/benchmarks.md#endpoint-health).

``bench/endpoint_health.py`` measures one recovery per failure. A recovery that goes wrong one
run in two (as one did on PostgreSQL: a claim that leased the whole backlog for two minutes,
docs/benchmarks.md) needs many: this runs ``--runs`` of them, each the breaker-on run of
``endpoint_health.py`` (the 9 healthy subscriptions drained beside ``s009``'s failing endpoint,
which then comes back), and prints for each when the probe came, how long the backlog took after
it, how many pushes it took beyond the backlog's size (deliveries pushed again: their leases
lapsed before their outcomes were recorded) and what was lost; then the range.

    .venv/bin/python bench/endpoint_recovery.py [--runs 4] [--messages 10000]
        [--failure refused|500|hang] [--only SQLite|PostgreSQL]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import time

from backends import add_database_arguments, backends
from endpoint_health import FAILURES, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--failure", choices=FAILURES, default="refused")
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            print(f"{backend.label}, {args.messages} messages, {args.failure}:", flush=True)
            times = []
            for number in range(1, args.runs + 1):
                back = run(backend, args.messages, args.workers, args.failure, True)["recovery"]
                times.append(back["backlog_s"])
                again = max(0, back["recovered"] - args.messages)
                print(
                    f"  run {number}: probe {back['probe_after_s']:.0f} s after it came back;"
                    f" backlog {back['backlog_s']:.1f} s after the probe; {again} pushed"
                    f" again; lost: {back['dead']} dead-lettered, {back['pending']} pending"
                    f" [{time.strftime('%H:%M:%S', time.gmtime())} UTC]",
                    flush=True,
                )
            print(f"  backlog after the probe: {min(times):.1f}-{max(times):.1f} s", flush=True)


if __name__ == "__main__":
    main()
