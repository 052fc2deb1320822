"""Python bytecodes a delivered push executes, per function (issue 49): counted, not sampled.

py-spy samples put time on the wrong lines near C calls and waits (docs/benchmarks.md), and
callgrind counts the interpreter's instructions without saying which Python function they
were for. This counts every bytecode the delivery worker's Python executes per delivered push,
by function and by file, with ``sys.settrace``'s opcode events: the same count for the same
code and batch sizes, whatever the machine is doing meanwhile. A change on the push path is
seen here in the functions it touched, to the bytecode.

A backlog is made first (bench/push_floor.py's ``prepare_backlog``); then the worker that
``mns-gateway worker`` runs (``build_runtime(..., with_worker=True)``) runs in this process,
monkey-patched by gevent as the command is, and pushes to bench/endpoint.py. Counting is
switched on after ``--warm-up`` pushes have arrived and off after ``--pushes`` more; pushes in
flight at either switch make the count uncertain by about the worker's concurrency (32) in
``--pushes``. This process's own polling of the endpoint is not counted. Tracing makes the
worker some 50 times slower: the figures are bytecodes, not time.

    .venv/bin/python bench/push_bytecodes.py [--pushes 2000] [--subscriptions 10]
        [--format XML] [--top 40] [--database-url auto|URL --only PostgreSQL]

About 20 seconds on SQLite.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()  # as `mns-gateway worker` does before anything else

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402
from types import FrameType  # noqa: E402
from typing import Any  # noqa: E402

import gevent  # noqa: E402
import greenlet  # noqa: E402
from backends import Backend, add_database_arguments, backends  # noqa: E402
from fanout import endpoint, stats  # noqa: E402
from harness import ROOT, gateway_env  # noqa: E402
from push_floor import prepare_backlog  # noqa: E402

#: A function: (file, first line, qualified name).
Function = tuple[str, int, str]
_VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
#: Shown relative to these: the venv's packages, the standard library, the checkout.
_PREFIXES = (
    f"{sys.prefix}/lib/{_VERSION}/site-packages/",
    f"{sys.base_prefix}/lib/{_VERSION}/",
    f"{ROOT}/",
)


class BytecodeCounter:
    """Counts the bytecodes executed per function while on, except in the greenlet that made
    it (the benchmark's own)."""

    def __init__(self) -> None:
        self.counts: Counter[Function] = Counter()
        self.on = False
        self._own = greenlet.getcurrent()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not self.on or greenlet.getcurrent() is self._own:
            return None
        frame.f_trace_opcodes = True
        code = frame.f_code
        function = (code.co_filename, code.co_firstlineno, code.co_qualname)
        counts = self.counts

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[function] += 1
            return local

        return local

    def start(self) -> None:
        self.counts.clear()
        self.on = True
        sys.settrace(self)
        threading.settrace(self)

    def stop(self) -> Counter[Function]:
        self.on = False
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        return Counter(self.counts)


def _wait(port: int, at_least: int) -> int:
    for _ in range(60_000):  # bounded: ten minutes at most
        count = int(stats(port, "/count")["count"])
        if count >= at_least:
            return count
        gevent.sleep(0.01)
    raise SystemExit(f"the worker delivered fewer than {at_least} pushes in ten minutes")


def count_worker(backend: Backend, args: argparse.Namespace) -> tuple[Counter[Function], int]:
    """The bytecodes per function over about ``args.pushes`` pushes, and the pushes counted."""
    from gateway.cli.common import prepare_data_dir
    from gateway.composition import build_runtime
    from gateway.config.settings import settings_from_env

    database = backend.new_database()
    counter = BytecodeCounter()
    try:
        with endpoint() as port, tempfile.TemporaryDirectory(prefix="mns-bytecodes-") as tmp:
            routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(args.subscriptions)]
            enough = args.warm_up + args.pushes + 200  # what is in flight at the end, too
            messages = -(-enough // args.subscriptions)
            prepare_backlog(Path(tmp), database, routes, args.format, messages)
            # A traced push is slow: a timeout would count a path no real push takes.
            env = gateway_env(Path(tmp), MNS_GATEWAY_PUSH_TIMEOUT="120", **backend.env(database))
            os.environ.update(env)
            settings = settings_from_env()
            prepare_data_dir(settings.data_dir)
            runtime = build_runtime(settings, with_worker=True)
            assert runtime.worker is not None
            try:
                runtime.worker.start()
                first = _wait(port, args.warm_up)
                counter.start()
                last = _wait(port, first + args.pushes)
            finally:
                counts = counter.stop()
                runtime.close()
    finally:
        backend.drop_database(database)
    return counts, last - first


def _shown(path: str) -> str:
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def report(counts: Counter[Function], pushes: int, top: int) -> None:
    total = sum(counts.values())
    print(f"{pushes} pushes, {total / pushes:,.0f} bytecodes per push")
    files: Counter[str] = Counter()
    for (path, _, _), n in counts.items():
        files[_shown(path)] += n
    print(f"\n{'per push':>9}  file")
    for path, n in files.most_common(top):
        print(f"{n / pushes:9.0f}  {path}")
    print(f"\n{'per push':>9}  function")
    for (path, line, name), n in counts.most_common(top):
        print(f"{n / pushes:9.0f}  {name} ({_shown(path)}:{line})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pushes", type=int, default=2000, help="pushes counted")
    parser.add_argument("--warm-up", type=int, default=500, help="pushes before counting")
    parser.add_argument("--subscriptions", type=int, default=10)
    parser.add_argument("--format", default="XML")
    parser.add_argument("--top", type=int, default=40, help="files and functions shown")
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            counts, pushes = count_worker(backend, args)
            print(f"\n{backend.label}, {args.format}, {args.subscriptions} subscriptions")
            report(counts, pushes, args.top)


if __name__ == "__main__":
    main()
