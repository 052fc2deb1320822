"""What a push's claim and settle cost on SQLite, statement by statement, and on PostgreSQL, a
cycle at a time (issue 49).

    .venv/bin/python bench/store_statements.py [--cycles 300] [--claim 16] [--subscriptions 10]
        [--rounds 1] [--failed] [--database-url auto|URL [--only SQLite|PostgreSQL]]

A backlog is written into a new SQLite data dir (or PostgreSQL database); then, in one process
monkey-patched by gevent as the worker is, one greenlet claims ``--claim`` deliveries and settles
them all as delivered (``--failed``: as refused, retried in an hour) (no push: the store alone),
``--cycles`` times, as the worker's
:class:`~gateway.pushing.push_store.PushStore` calls do (both relaxed: ``synchronous=NORMAL``).
Every statement's CPU is timed in the thread that runs it (SQLite's calls never yield to another
greenlet), from ``execute`` to its last row fetched, by a subclass of
:class:`~gateway.store.backends.sqlite.SQLiteConnection` given to the database. It prints:

- the claim's and the settle's CPU per cycle and per delivery, all of it (the store's Python
  included) and the part spent in SQLite's statements;
- each statement's CPU per cycle, its calls per cycle and share, the costliest first;
- one RSA-2048 signature's CPU in this process, the unit issue 49 counts a push's cost in.

On PostgreSQL statements are pipelined (sent before the earlier ones are answered), so none is
timed alone: it prints the claim's and the settle's CPU in this process, and the database
server's CPU (its process tree, from /proc) over the same cycles.

Figures and what they say: docs/benchmarks.md#the-stores-part-statement-by-statement and
docs/benchmarks.md#a-settles-writes-in-one-statement.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()  # as in ``mns-gateway worker``: the store's writer thread is a greenlet

import argparse
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from backends import Backend, add_database_arguments, backends
from harness import ROOT  # noqa: F401  (puts the checkout on sys.path)
from push_floor import prepare_backlog, signature_cpu_us

from gateway.config.settings import Settings
from gateway.delivery.records import Attempt, DeliveryJob, PushOutcome, Settlement
from gateway.store.backends.sqlite import SQLiteConnection, SQLiteDatabase
from gateway.store.base import Store
from gateway.store.opening import compose_store, open_store

#: CPU seconds and calls per statement, by its first 100 characters.
SPENT: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0])
OWNER = "bench:statements"


def charge(sql: str, seconds: float, calls: int = 0) -> None:
    spent = SPENT[sql[:100]]
    spent[0] += seconds
    spent[1] += calls


class TimedCursor(sqlite3.Cursor):
    """Adds the CPU of fetching the rows to the statement that made them."""

    statement = ""

    def fetchall(self) -> list[Any]:
        started = time.thread_time()
        rows = super().fetchall()
        charge(self.statement, time.thread_time() - started)
        return rows

    def fetchone(self) -> Any:
        started = time.thread_time()
        row = super().fetchone()
        charge(self.statement, time.thread_time() - started)
        return row

    def __next__(self) -> Any:
        started = time.thread_time()
        try:
            return super().__next__()
        finally:
            charge(self.statement, time.thread_time() - started)


class TimedConnection(SQLiteConnection):
    """Times each statement's ``execute`` (its first step: all of a write's work)."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any:  # type: ignore[override]
        cursor = self.cursor(TimedCursor)
        cursor.statement = sql
        started = time.thread_time()
        cursor.execute(sql, parameters)
        charge(sql, time.thread_time() - started, calls=1)
        return cursor


def store_with_backlog(
    directory: Path, database_url: str | None, deliveries: int, subscriptions: int
) -> Store:
    routes = [f"http://127.0.0.1:9/s{i}" for i in range(subscriptions)]
    prepare_backlog(directory, database_url, routes, "XML", -(-deliveries // subscriptions))
    if database_url:
        return open_store(Settings(data_dir=directory, database_url=database_url))
    path = Settings(data_dir=directory).database_path
    database = SQLiteDatabase(path, synchronous="NORMAL", connection_class=TimedConnection)
    return compose_store(database)


def settlements(jobs: list[DeliveryJob], now: int, failed: bool) -> list[Settlement]:
    """All delivered or, with ``failed``, all refused and retried in an hour (after the run).
    Refused with a 400, which no circuit breaker counts: with 5xx the breakers would open and
    the claims hold their deliveries back."""
    if not failed:
        return [Settlement(job, Attempt(1, now, PushOutcome.SUCCESS, 200)) for job in jobs]
    refused = Attempt(1, now, PushOutcome.HTTP_ERROR, 400, "bad request", 5.0)
    return [Settlement(job, refused, now + 3_600_000) for job in jobs]


def cycles(
    store: Store, count: int, claim: int, failed: bool = False
) -> Iterator[tuple[float, float, int]]:
    """Each cycle's claim CPU, settle CPU and deliveries: the process's, since the store's
    writer (a greenlet here) runs the transactions while this one waits for them."""
    deliveries = store.deliveries
    for _ in range(count):
        started = time.process_time()
        jobs = deliveries.claim(OWNER, 60.0, claim, frozenset())
        claimed = time.process_time()
        deliveries.settle(OWNER, settlements(jobs, deliveries.now_ms(), failed))
        yield claimed - started, time.process_time() - claimed, len(jobs)


def report(
    claim_s: float,
    settle_s: float,
    count: int,
    made: int,
    signature_us: float,
    database_s: float | None,
) -> None:
    statements = sum(seconds for seconds, _ in SPENT.values())
    print(f"{count} cycles, {made} deliveries claimed and settled")
    print(f"one RSA-2048 signature: {signature_us:.0f} µs of CPU")
    for name, seconds in (("claim", claim_s), ("settle", settle_s)):
        each = f"{seconds / count * 1e6:7.0f} µs a cycle, {seconds / made * 1e6:5.1f} µs a delivery"
        print(f"{name:>6}: {each}")
    whole = claim_s + settle_s
    per_delivery = whole / made * 1e6
    share = per_delivery / signature_us
    print(f"  both: {per_delivery:5.1f} µs a delivery ({share:.3f} of a signature)")
    if database_s is not None:
        # Pipelined statements are sent before earlier ones are answered: they cannot be timed
        # one by one, so PostgreSQL's figures are the cycle's, client and server.
        cycle, delivery = database_s / count * 1e6, database_s / made * 1e6
        print(f"server: {cycle:7.0f} µs a cycle, {delivery:5.1f} µs a delivery")
        return
    print(f"  of which SQLite's statements {statements / whole:.0%}")
    print(f"\n{'µs/cycle':>9} {'calls':>6} {'share':>6}  statement")
    for sql, (seconds, calls) in sorted(SPENT.items(), key=lambda item: -item[1][0]):
        if seconds / whole < 0.005:
            continue
        print(f"{seconds / count * 1e6:9.0f} {calls / count:6.2f} {seconds / whole:6.1%}  {sql}")


def run_on(backend: Backend, args: argparse.Namespace) -> None:
    url = backend.new_database()
    with tempfile.TemporaryDirectory(prefix="mns-statements-") as tmp:
        deliveries = (args.cycles + 20) * args.claim
        store = store_with_backlog(Path(tmp), url, deliveries, args.subscriptions)
        try:
            for _ in cycles(store, 20, args.claim, args.failed):  # warm-up: caches, prepared
                pass
            SPENT.clear()
            server_before = backend.database_cpu_seconds()
            ran = list(cycles(store, args.cycles, args.claim, args.failed))
            server_after = backend.database_cpu_seconds()
        finally:
            store.close()
            backend.drop_database(url)
    claim_s, settle_s, made = (sum(column) for column in zip(*ran, strict=True))
    database_s = None
    if server_before is not None and server_after is not None:
        database_s = server_after - server_before
    print(f"-- {backend.label}")
    report(claim_s, settle_s, args.cycles, int(made), signature_cpu_us(), database_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--claim", type=int, default=16)
    parser.add_argument("--subscriptions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--failed", action="store_true", help="settle every push as failed and retried"
    )
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    with backends(args) as found:
        for _ in range(args.rounds):
            for backend in found:
                run_on(backend, args)


if __name__ == "__main__":
    main()
