"""CPU per delivered push with OpenTelemetry tracing not installed, installed but off, and on.

A backlog published with a sampled ``traceparent`` in each message (as publishers with the SDK
send them) is drained by one ``mns-gateway worker`` into the lean local endpoint
(bench/endpoint.py), three ways, alternating their order each round so that the shared
machine's noise hits all alike:

- ``not installed``: a ``sitecustomize`` on the worker's path makes every ``opentelemetry``
  import fail, as in an install without the ``otel`` extra;
- ``off``: the extra installed, no ``OTEL_*`` variable (the default);
- ``on``: ``OTEL_EXPORTER_OTLP_ENDPOINT`` at a local OTLP/HTTP receiver (tests/otlp_collector.py,
  in this process, decoding every export), ``OTEL_TRACES_SAMPLER=always_on``: a span per attempt,
  exported in batches.

Per round and way: the worker's CPU per push (from /proc, from the first push on), pushes/s, and
with tracing on the spans the receiver decoded. Then each way's range. Target (issue 37): off
costs nothing measurable; on costs at most 10 % more per push.

    .venv/bin/python bench/tracing.py [--pushes 4000] [--subscriptions 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from backends import Backend
from fanout import BODY, drain, endpoint

from gateway.composition import open_store
from gateway.config.settings import Settings
from gateway.topics.records import Subscription, TopicMessage
from tests.otlp_collector import OtlpCollector

BLOCKER = """
import importlib.abc, sys

class _NoOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("opentelemetry is not installed (bench/tracing.py)")
        return None

sys.meta_path.insert(0, _NoOpenTelemetry())
"""
WAYS = ("not installed", "off", "on")


def backlog(data_dir: Path, routes: list[str], messages: int) -> None:
    """Topic, subscriptions and messages that each carry a sampled creation context."""
    store = open_store(Settings(data_dir=data_dir, sqlite_synchronous="NORMAL"))
    store.topics.create_topic("traced", 65536, False)
    for i, url in enumerate(routes):
        store.topics.subscribe(Subscription("traced", f"s{i:03d}", url))
    now = store.now_ms()
    batch = []
    for n in range(messages):
        context = f"00-{n + 1:032x}-{n + 1:016x}-01"
        system = [{"Name": "traceparent", "Type": "STRING", "Value": context}]
        attributes = {"SystemProperties": system}
        batch.append(TopicMessage(f"M{n:08d}", "traced", BODY, "X", now, None, attributes))
    for start in range(0, len(batch), 500):
        store.topics.publish_all(batch[start : start + 500])
    store.close()


def environment(way: str, collector: OtlpCollector, blocker_dir: Path) -> dict[str, str]:
    if way == "not installed":
        return {"PYTHONPATH": f"{blocker_dir}:{Path(__file__).resolve().parent.parent}"}
    if way == "off":
        return {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_SERVICE_NAME": "mns-gateway-bench",
    }


def one_run(way: str, args: argparse.Namespace, collector: OtlpCollector, blocker: Path) -> dict:  # type: ignore[type-arg]
    import os

    saved = dict(os.environ)
    os.environ.update(environment(way, collector, blocker))
    spans_before = len(collector.spans)
    try:
        with endpoint() as port, tempfile.TemporaryDirectory() as tmp:
            routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(args.subscriptions)]
            messages = max(1, args.pushes // args.subscriptions)
            backlog(Path(tmp), routes, messages)
            result = drain(Path(tmp), Backend("SQLite"), None, 1, port, messages * len(routes))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    span = (result["last"] or 0) - (result["first"] or 0)
    result["rate"] = result["count"] / span if span > 0 else 0.0
    time.sleep(0.5)  # the worker's last batch of spans, exported as it stopped
    result["spans"] = len(collector.spans) - spans_before
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pushes", type=int, default=4000)
    parser.add_argument("--subscriptions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {way: [] for way in WAYS}
    with OtlpCollector() as collector, tempfile.TemporaryDirectory() as blocker_dir:
        (Path(blocker_dir) / "sitecustomize.py").write_text(BLOCKER)
        print(f"{'round':>5}  {'tracing':<14} {'CPU ms/push':>11} {'pushes/s':>9} {'spans':>6}")
        for round_number in range(args.rounds):
            order = WAYS[round_number % 3 :] + WAYS[: round_number % 3]
            for way in order:
                result = one_run(way, args, collector, Path(blocker_dir))
                figures[way].append(result["worker_cpu_ms"])
                print(
                    f"{round_number + 1:>5}  {way:<14} {result['worker_cpu_ms']:>11.3f} "
                    f"{result['rate']:>9.0f} {result['spans']:>6}",
                    flush=True,
                )
    print()
    for way, values in figures.items():
        print(f"{way:<14} CPU ms/push {min(values):.3f} - {max(values):.3f}")


if __name__ == "__main__":
    main()
