"""CPU per delivered push with OpenTelemetry tracing not installed, installed but off, and on.

A backlog published with a sampled ``traceparent`` in each message (as publishers with the SDK
send them) is drained by one ``mns-gateway worker`` into the lean local endpoint
(bench/endpoint.py), three ways, alternating their order each round so that the shared
machine's noise hits all alike:

- ``not installed``: a ``sitecustomize`` on the worker's path makes every ``opentelemetry``
  import fail, as in an install without the ``otel`` extra;
- ``off``: the extra installed, no ``OTEL_*`` variable (the default);
- ``on``: ``OTEL_EXPORTER_OTLP_ENDPOINT`` at a local OTLP/HTTP receiver (tests/otlp_collector.py,
  in this process; it keeps each export's bytes and decodes them after the round, so that its
  decoding does not compete for the two cores with the worker being measured),
  ``OTEL_TRACES_SAMPLER=always_on``: a span per attempt, exported in batches.

Per round and way: the worker's CPU per push from its first push on, counted two ways: to the
last push (from /proc), and to the worker's exit (its rusage, after SIGTERM: this includes the
spans still queued at the last push, exported as it stops, so that no export escapes the
count); pushes/s; with tracing on, the spans the receiver decoded (every attempt's: 4,000).
Then each way's range, and per round the ratio of on to off, with its median; beside it, the
ratio of not installed to off, which run the same code per push: how far one round's figure
scatters on this machine, the floor under which a difference is noise. Target (issue 37): off costs
nothing measurable; on costs at most 10 % more per push.

    .venv/bin/python bench/tracing.py [--pushes 4000] [--subscriptions 10] [--rounds 3]
        [--protocol http/protobuf|grpc] [--callgrind] [--profile]

``--profile``: py-spy (``.venv/bin/pip install py-spy``, a measuring tool, not a dependency)
samples each traced worker over the same pushes, without pausing it (``--nonblocking``), and
the round's line gives the share of its busy samples with tracing's code in their stack: a
comparison within one process and one minute, which a shared machine's noise does not swing
as it swings one round's CPU time.

``--callgrind``: instead of CPU time, instructions per push, which the machine's load does not
change: each way's worker runs under valgrind's callgrind with instrumentation switched on at
the first push and the counts dumped at the last (``callgrind_control``); slow (about 50 times),
so use ``--pushes 1000 --rounds 1``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from backends import Backend, tree_cpu_seconds
from fanout import BODY, endpoint, start_workers, stats
from harness import ROOT, gateway_env

from gateway.composition import open_store
from gateway.config.settings import Settings
from gateway.topics.records import Subscription, TopicMessage
from tests.otlp_collector import GrpcOtlpCollector, OtlpCollector

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
PY_SPY = str(Path(sys.executable).parent / "py-spy")
#: What ``--profile`` counts as tracing's code: its modules, and the functions that trace a
#: push from outside them (the attempt span, the push's trace headers, the op log's trace id).
TRACING_FILES = ("gateway/observability/", "opentelemetry/")
TRACING_FUNCTIONS = (
    "attempt_span ",
    "end_attempt_span ",
    "TracingHook.",
    "creation_traceparent ",
    "HttpSender.traced_headers ",
    "trace_context ",
    "trace_id_of ",
)
#: A py-spy leaf frame of an idle thread of gevent's thread pool (waiting for work).
IDLE = "gevent/_threading.py"


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


def environment(
    way: str, collector: OtlpCollector | GrpcOtlpCollector, blocker_dir: Path
) -> dict[str, str]:
    if way == "not installed":
        return {"PYTHONPATH": f"{blocker_dir}:{Path(__file__).resolve().parent.parent}"}
    if way == "off":
        return {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": collector.protocol,
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_SERVICE_NAME": "mns-gateway-bench",
    }


def drain_to_exit(
    data_dir: Path, port: int, expected: int, profile: Path | None = None, timeout: float = 120
) -> dict:  # type: ignore[type-arg]
    """One worker drains the backlog; the endpoint's stats, with the worker's CPU per push
    from its first push to the last (``worker_cpu_ms``) and to its exit (``exit_cpu_ms``);
    with ``profile``, py-spy samples the worker over the same pushes into that file."""
    env = gateway_env(data_dir, MNS_GATEWAY_PUSH_TIMEOUT="5", **Backend("SQLite").env(None))
    [process] = start_workers(env, 1)
    sampler = None
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and stats(port)["count"] == 0:
            time.sleep(0.02)
        if profile is not None:
            command = [PY_SPY, "record", "--nonblocking", "-r", "500", "--format", "raw"]
            sampler = subprocess.Popen(
                [*command, "-o", str(profile), "-p", str(process.pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        started, first = tree_cpu_seconds(process.pid), stats(port)["count"]
        while time.monotonic() < deadline and stats(port)["count"] < expected:
            time.sleep(0.2)
        result, finished = stats(port), tree_cpu_seconds(process.pid)
    finally:
        if sampler is not None:
            sampler.send_signal(signal.SIGINT)  # py-spy writes its file as it stops
            sampler.wait(30)
        os.killpg(process.pid, signal.SIGTERM)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = status
    pushes = max(result["count"] - first, 1)
    result["worker_cpu_ms"] = (finished - started) / pushes * 1000
    result["exit_cpu_ms"] = (usage.ru_utime + usage.ru_stime - started) / pushes * 1000
    return result


def is_tracing(frame: str) -> bool:
    """Whether a py-spy frame (``function (file:line)``) is tracing's own code; not
    the hooks' runner, which wraps the whole push."""
    return any(part in frame for part in TRACING_FILES) or frame.startswith(TRACING_FUNCTIONS)


def tracing_share(raw: Path) -> tuple[float, int]:
    """The share of the worker's busy samples (py-spy's raw output: ``frame;frame;... count``
    per line) with a tracing frame in their stack, and how many busy samples there were. The
    gevent thread pool's idle threads, which py-spy counts as busy, are left out."""
    busy = traced = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not count.isdigit() or IDLE in frames[-1]:
            continue
        busy += int(count)
        if any(is_tracing(frame) for frame in frames):
            traced += int(count)
    return traced / max(busy, 1), busy


def callgrind_drain(data_dir: Path, port: int, expected: int, timeout: float = 900) -> dict:  # type: ignore[type-arg]
    """As :func:`drain_to_exit`, under callgrind: ``worker_cpu_ms`` and ``exit_cpu_ms`` hold
    thousands of instructions per push, from the first push to the last."""
    env = gateway_env(data_dir, MNS_GATEWAY_PUSH_TIMEOUT="60", **Backend("SQLite").env(None))
    out = data_dir / "callgrind.out"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    process = subprocess.Popen(
        [*command, sys.executable, "-m", "gateway.cli", "worker"],
        env=env,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and stats(port)["count"] == 0:
            time.sleep(0.02)
        subprocess.run(["callgrind_control", "-i", "on", str(process.pid)], capture_output=True)
        first = stats(port)["count"]
        while time.monotonic() < deadline and stats(port)["count"] < expected:
            time.sleep(0.5)
        result = stats(port)
        subprocess.run(["callgrind_control", "-d", str(process.pid)], capture_output=True)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    dumped = [line for path in data_dir.glob("callgrind.out*") for line in path.open()]
    instructions = max(int(line.split()[1]) for line in dumped if line.startswith("totals:"))
    result["worker_cpu_ms"] = result["exit_cpu_ms"] = (
        instructions / max(result["count"] - first, 1) / 1000
    )
    return result


def one_run(
    way: str,
    args: argparse.Namespace,
    collector: OtlpCollector | GrpcOtlpCollector,
    blocker: Path,
) -> dict:  # type: ignore[type-arg]
    saved = dict(os.environ)
    os.environ.update(environment(way, collector, blocker))
    spans_before = len(collector.all_spans())
    try:
        with endpoint() as port, tempfile.TemporaryDirectory() as tmp:
            routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(args.subscriptions)]
            messages = max(1, args.pushes // args.subscriptions)
            backlog(Path(tmp), routes, messages)
            if args.callgrind:
                result = callgrind_drain(Path(tmp), port, messages * len(routes))
            else:
                profile = Path(tmp) / "py-spy.txt" if args.profile and way == "on" else None
                result = drain_to_exit(Path(tmp), port, messages * len(routes), profile)
                if profile is not None:
                    result["tracing_share"] = tracing_share(profile)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    span = (result["last"] or 0) - (result["first"] or 0)
    result["rate"] = result["count"] / span if span > 0 else 0.0
    time.sleep(0.2)  # the collector's last request, decoded
    result["spans"] = len(collector.all_spans()) - spans_before
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pushes", type=int, default=4000)
    parser.add_argument("--subscriptions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--protocol", choices=("http/protobuf", "grpc"), default="http/protobuf")
    parser.add_argument("--callgrind", action="store_true", help="instructions, not CPU time")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="py-spy samples the traced worker: tracing's share of its busy samples",
    )
    args = parser.parse_args()
    figures: dict[str, dict[str, list[float]]] = {
        way: {"worker_cpu_ms": [], "exit_cpu_ms": []} for way in WAYS
    }
    kind = GrpcOtlpCollector if args.protocol == "grpc" else OtlpCollector
    opened = kind(decode_at_once=False)
    print(f"load average before: {os.getloadavg()[0]:.1f}; OTLP over {args.protocol}")
    with opened as collector, tempfile.TemporaryDirectory() as blocker_dir:
        (Path(blocker_dir) / "sitecustomize.py").write_text(BLOCKER)
        unit = "k instr/push" if args.callgrind else "CPU ms/push"
        print(
            f"{'round':>5}  {'tracing':<14} {unit:>12} {'to exit':>8} {'pushes/s':>9} {'spans':>6}"
        )
        for round_number in range(args.rounds):
            order = WAYS[round_number % 3 :] + WAYS[: round_number % 3]
            for way in order:
                result = one_run(way, args, collector, Path(blocker_dir))
                for key, values in figures[way].items():
                    values.append(result[key])
                print(
                    f"{round_number + 1:>5}  {way:<14} {result['worker_cpu_ms']:>12.3f} "
                    f"{result['exit_cpu_ms']:>8.3f} {result['rate']:>9.0f} {result['spans']:>6}"
                    + _share(result),
                    flush=True,
                )
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print()
    for way, measured in figures.items():
        print(
            f"{way:<14} CPU ms/push {_range(measured['worker_cpu_ms'])}, "
            f"to exit {_range(measured['exit_cpu_ms'])}"
        )
    for key, label in (("worker_cpu_ms", "to the last push"), ("exit_cpu_ms", "to exit")):
        for way, against in (("on", "off"), ("not installed", "off")):
            ratios = [
                on / off - 1
                for on, off in zip(figures[way][key], figures[against][key], strict=True)
            ]
            print(
                f"{way} against {against} per round, {label}: "
                f"{', '.join(f'{r:+.0%}' for r in ratios)}; median {statistics.median(ratios):+.0%}"
            )
    print(
        "(not installed and off run the same code per push: their ratio is the noise of one "
        "round's figure on this machine)"
    )


def _share(result: dict) -> str:  # type: ignore[type-arg]
    if "tracing_share" not in result:
        return ""
    share, busy = result["tracing_share"]
    return f"  tracing {share:.1%} of {busy} busy samples"


def _range(values: list[float]) -> str:
    return f"{min(values):.3f} - {max(values):.3f}"


if __name__ == "__main__":
    main()
