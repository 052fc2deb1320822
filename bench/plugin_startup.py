"""How long the pytest plugin's gateway takes to start and to stop (docs/testing.md).

Starts ``EmbeddedGateway`` (a real ``mns-gateway serve``: a new Python process, gunicorn, a
gevent worker, SQLite migrations, a generated signing key) ``--runs`` times, one after the
other, and prints the time until ``/readyz`` answers and the time to stop, with the first
publish-to-verified-push round trip for scale, and the CPU the gateway's processes used from
start to stop. Quote ranges: this machine is shared. To compare two checkouts, run it from each
(``PYTHONPATH=CHECKOUT``), their bytecode compiled first.

    .venv/bin/python -m bench.plugin_startup [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from gateway.testing import EmbeddedGateway


def children_cpu() -> float:
    """CPU seconds of this process's children that ended, and of theirs (the worker)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run() -> tuple[float, float, float, float]:
    cpu = children_cpu()
    started = time.perf_counter()
    gateway = EmbeddedGateway().start()
    ready = time.perf_counter() - started
    from mns.subscription import SubscriptionMeta
    from mns.topic import TopicMessage, TopicMeta

    topic = gateway.account().get_topic("bench")
    topic.create(TopicMeta())
    topic.get_subscription("s").subscribe(SubscriptionMeta(gateway.pushes.url))
    sent = time.perf_counter()
    topic.publish_message(TopicMessage("hello"))
    gateway.pushes.wait_for(1)
    round_trip = time.perf_counter() - sent
    stopping = time.perf_counter()
    gateway.stop()
    return ready, round_trip, time.perf_counter() - stopping, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = [one_run() for _ in range(parser.parse_args().runs)]
    names = ("start", "first push", "stop", "CPU")
    for name, values in zip(names, zip(*runs, strict=True), strict=True):
        print(
            f"{name:>10}: median {statistics.median(values):.2f} s,"
            f" min {min(values):.2f} s, max {max(values):.2f} s ({len(values)} runs)"
        )


if __name__ == "__main__":
    main()
