"""A/B versions of the gateway in one run: which costs less CPU per operation, and how fast each is.

Each version (a git revision, or ``.`` for the working tree) is exported with ``git archive``
into a temp dir and started from there in turn as ``mns-gateway serve --workers N``, each time on
a fresh database (SQLite, or PostgreSQL with ``--database-url``). Rounds alternate which version
runs first, so what else the shared machine is doing hits every version alike. Per round and
version it prints operations/s, p99, the CPU per operation of the gateway's processes and of the
database server (from /proc), and how often per operation the gateway's processes were
preempted (non-voluntary context switches: CPU contention); then each version's ranges.

Operations: ``publish`` (one subscription; delivery workers off, as in bench/publish.py),
``send`` (SendMessage), ``cycle`` (receive + delete of one message, as in bench/queues.py),
``create`` (the control plane's CreateQueue, signed afresh per call: bench/control_creates.py).

    .venv/bin/python bench/compare.py main . [--op publish|send|cycle|create] [--workers 2]
        [--rounds 4] [--seconds 6] [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from backends import Backend, CpuMeter, add_database_arguments, backends
from control_creates import creates
from harness import ROOT, require_wrk, run_wrk, running_gateway
from publish import MESSAGE
from queues import ONE, create_queue, cycles

from tests.mns_http import RawClient


@contextlib.contextmanager
def exported(revisions: list[str]) -> Iterator[dict[str, Path]]:
    """Each revision's tree in a temp dir (``.``: this checkout as it is)."""
    with tempfile.TemporaryDirectory(prefix="mns-compare-") as parent:
        trees: dict[str, Path] = {}
        for revision in revisions:
            if revision == ".":
                trees[revision] = ROOT
                continue
            tree = Path(parent) / str(len(trees))
            tree.mkdir()
            archive = subprocess.run(
                ["git", "archive", revision], cwd=ROOT, capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            trees[revision] = tree
        yield trees


def preemptions(root: int) -> int:
    """Non-voluntary context switches of ``root`` and its children (gunicorn's workers)."""
    total = 0
    for pid in [root, *_children(root)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("nonvoluntary_ctxt_switches"):
                    total += int(line.split()[1])
    return total


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        tasks = Path(f"/proc/{pid}/task")
        return [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]
    return []


def prepare(client: RawClient, op: str) -> str:
    """Create what ``op`` needs; the URI it runs against."""
    if op == "create":
        return "/"
    if op == "publish":
        assert client.send("PUT", "/topics/bench", b"<Topic/>").status == 201
        subscription = b"<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint></Subscription>"
        assert client.send("PUT", "/topics/bench/subscriptions/s", subscription).status == 201
        return "/topics/bench/messages"
    create_queue(client, "bench")
    return "/queues/bench/messages"


def measure(tree: Path, backend: Backend, args: argparse.Namespace) -> dict[str, float]:
    env = {"MNS_GATEWAY_DELIVERY_THREADS": "0", **backend.env(backend.new_database())}
    if args.op == "create":  # every call makes a new queue: past the default 1,000 they fail
        env["MNS_GATEWAY_MAX_QUEUES"] = "1000000"
    with running_gateway("serve", args.workers, code=tree, **env) as server:
        client, meter = server.client, CpuMeter(server.pid, backend)
        uri = prepare(client, args.op)
        body = MESSAGE if args.op == "publish" else ONE
        # Warm-up; for cycles, the backlog they consume (sends outpace receive + delete).
        if args.op == "create":
            creates(client.port, client.key_id, client.secret, 2, prefix="warm")
        else:
            run_wrk(client, "POST", uri, body, seconds=2 if args.op != "cycle" else args.seconds)
        before, switched = meter.read(), preemptions(server.pid)
        if args.op == "cycle":
            figures = cycles(client, "bench", 1, args)
            operations = figures["deleted"]
        elif args.op == "create":
            figures = creates(client.port, client.key_id, client.secret, args.seconds)
            operations = figures["requests"]
        else:
            figures = run_wrk(
                client, "POST", uri, body, seconds=args.seconds, connections=args.connections
            )
            figures["per_second"], operations = figures["rps"], figures["requests"]
        gateway, database = meter.per_operation_ms(before, meter.read(), operations)
        return {
            "per_second": figures["per_second"],
            "p99_ms": figures["p99_ms"],
            "gateway_ms": gateway,
            "database_ms": database or 0.0,
            "preempted": (preemptions(server.pid) - switched) / operations,
        }


def spread(values: list[float], digits: int) -> str:
    low, high, middle = min(values), max(values), statistics.median(values)
    return f"{low:.{digits}f}-{high:.{digits}f} ({middle:.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("versions", nargs="+", help="git revisions; '.' is the working tree")
    parser.add_argument("--op", choices=("publish", "send", "cycle", "create"), default="publish")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--connections", type=int, default=16)
    add_database_arguments(parser)
    args = parser.parse_args()
    require_wrk()
    results: dict[str, list[dict[str, float]]] = {version: [] for version in args.versions}
    with exported(args.versions) as trees, backends(args) as databases:
        backend = databases[-1]  # PostgreSQL when asked for, else SQLite
        print(f"{args.op}, {backend.label}, serve --workers {args.workers}")
        for round_ in range(args.rounds):
            order = args.versions if round_ % 2 == 0 else args.versions[::-1]
            for version in order:
                f = measure(trees[version], backend, args)
                results[version].append(f)
                print(
                    f"round {round_} {version:>12}: {f['per_second']:7.0f}/s"
                    f"  p99 {f['p99_ms']:6.1f} ms  CPU ms/op gateway {f['gateway_ms']:.3f}"
                    f" database {f['database_ms']:.3f}  preempted {f['preempted']:.2f}/op",
                    flush=True,
                )
    print("\nranges (median): per second; gateway CPU ms/op; database CPU ms/op")
    for version, runs in results.items():
        print(
            f"{version:>12}: {spread([r['per_second'] for r in runs], 0)};"
            f" {spread([r['gateway_ms'] for r in runs], 3)};"
            f" {spread([r['database_ms'] for r in runs], 3)}"
        )


if __name__ == "__main__":
    main()
