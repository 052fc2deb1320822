"""The size the retention rules hold the history at, on a simulated clock (issue 50;
docs/benchmarks.md#steady-state-under-retention, round 4).

The store alone, no HTTP and no threads: every simulated half second ``--rate`` / 2 messages are
published to a topic with two subscriptions, every due push is claimed and settled as a success,
and the delivery worker's question, :meth:`DeliveryStore.retain_if_due`, is asked; every 10
simulated seconds the size is read (PostgreSQL: the total relation size of the tables, and of
the two history tables alone; SQLite: the data dir's files). The clock is the test's, so a
loaded machine slows the run but does not move the figures: what it shows is what the width of
the ranges and the interval of the passes do to the size, which ``bench/steady_state.py``'s
soaks measure with the gateway's own timing. ``--old-rules`` runs the rules before round 4
(ranges a minute wide at least, a pass a minute) for comparison.

PostgreSQL also prints the WAL written per push from the second window on; ``--unpartitioned``
makes the history tables plain first (the batched DELETEs do the whole purge), and
``--checkpoint-every`` runs a ``CHECKPOINT`` every so many simulated seconds, so the full-page
images a DELETE writes of pages checkpointed since their rows came are compressed with the clock
(a real day's rows have always been checkpointed since).

    .venv/bin/python bench/retention_teeth.py [--retention 60] [--windows 6] [--rate 20]
        [--old-rules] [--unpartitioned] [--checkpoint-every 30]
        [--only SQLite|PostgreSQL] [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from backends import Backend, add_database_arguments, backends

from gateway.delivery.records import Attempt, Settlement
from gateway.store.backends.database import Database
from gateway.store.base import Store, compose_store
from gateway.store.sql import partitions_sql
from gateway.topics.records import Subscription, TopicMessage
from tests.support.clock import Clock

STEP_S = 0.5
SAMPLE_S = 10
_SIZE = (
    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS size FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
)
_HISTORY = _SIZE + " AND (c.relname LIKE 'topic_messages%' OR c.relname LIKE 'delivered%')"


def open_database(backend: Backend, url: str | None, tmp: Path) -> Database:
    if url is None:
        from gateway.store.backends.sqlite import SQLiteDatabase

        return SQLiteDatabase(tmp / "gateway.sqlite3")
    from gateway.store.backends.postgres import PostgresDatabase

    return PostgresDatabase(url, pool_size=2)


def wal(store: Store) -> int:
    if not store.database.read(lambda c: c.dialect.partitions):
        return 0
    sql = "SELECT pg_current_wal_lsn() - '0/0' AS size"
    return store.database.read(lambda c: int(c.execute(sql).fetchone()["size"]))


def sizes(store: Store, tmp: Path) -> tuple[int, int]:
    """All, and the history tables alone (SQLite: the same, its files)."""
    if not store.database.read(lambda c: c.dialect.partitions):
        total = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        return total, total

    def read(sql: str) -> int:
        return store.database.read(lambda c: int(c.execute(sql).fetchone()["size"]))

    return read(_SIZE), read(_HISTORY)


def step(store: Store, per_step: int) -> None:
    now = store.now_ms()
    batch = [
        TopicMessage(store.topics.new_message_id(now), "t", "x" * 256, "X", now)
        for _ in range(per_step)
    ]
    store.topics.publish_all(batch)
    while jobs := store.deliveries.claim("w", 60, 500, frozenset()):
        success = Attempt(1, now, "success", 204, None, 1.0)
        store.deliveries.settle("w", [Settlement(j, success) for j in jobs])
    store.deliveries.retain_if_due()


def run(backend: Backend, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mns-teeth-") as name:
        tmp, url = Path(name), backend.new_database()
        if url is not None and args.unpartitioned:
            from steady_state import unpartition

            unpartition(url)
        database = open_database(backend, url, tmp)
        clock = Clock()
        store = compose_store(database, clock=clock, history_retention=args.retention)
        try:
            store.topics.create_topic("t", 65536, False)
            for n in range(2):
                store.topics.subscribe(Subscription("t", f"s{n}", f"http://s{n}.test/"))
            samples = simulate(store, clock, tmp, args)
        finally:
            store.close()
            backend.drop_database(url)
    report(samples, args)


def simulate(store: Store, clock: Clock, tmp: Path, args: argparse.Namespace) -> list[tuple]:
    samples, steps = [], int(args.windows * args.retention / STEP_S)
    per_step = max(1, round(args.rate * STEP_S))
    wal_from = pushes = 0
    for n in range(1, steps + 1):
        clock.advance(STEP_S)
        step(store, per_step)
        at = n * STEP_S
        if at == args.retention:
            wal_from = wal(store)
        elif at > args.retention:
            pushes += 2 * per_step
        if args.checkpoint_every and at % args.checkpoint_every == 0 and wal_from:
            store.database.write(lambda c: c.execute("CHECKPOINT"))
        if (n * STEP_S) % SAMPLE_S == 0:
            total, history = sizes(store, tmp)
            samples.append((n * STEP_S, total, history))
            print(f"  {n * STEP_S:5.0f} s  {total / 2**20:6.2f} MiB"
                  f"  history {history / 2**20:6.2f} MiB", flush=True)  # fmt: skip
    if wal_from:
        print(f"  WAL per push from the second window on: {(wal(store) - wal_from) / pushes:.0f}"
              f" bytes ({pushes} pushes)", flush=True)  # fmt: skip
    return samples


def report(samples: list[tuple], args: argparse.Namespace) -> None:
    window = args.retention
    last = [s for s in samples if s[0] >= samples[-1][0] - 2 * window]
    for index, what in ((1, "size"), (2, "history")):
        plateau = statistics.median(s[index] for s in last)
        after = [s[index] / plateau - 1 for s in samples if s[0] >= 3 * window] or [0.0]
        print(
            f"  {what}: plateau {plateau / 2**20:.2f} MiB, after 3 windows from"
            f" {min(after):+.1%} to {max(after):+.1%}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--retention", type=int, default=60)
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--rate", type=float, default=20.0, help="publishes a simulated second")
    parser.add_argument("--old-rules", action="store_true", help="ranges and passes a minute")
    parser.add_argument("--unpartitioned", action="store_true", help="PostgreSQL: plain tables")
    parser.add_argument("--checkpoint-every", type=float, help="simulated seconds (PostgreSQL)")
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    if args.old_rules:  # the constants before round 4: max(60 s, retention / 4), every 60 s
        partitions_sql.MIN_WIDTH_MS = 60_000  # type: ignore[misc]
        partitions_sql.MIN_PASS_MS = 60_000  # type: ignore[misc]
    with backends(args) as databases:
        for backend in databases:
            rules = "old rules" if args.old_rules else "round-4 rules"
            print(
                f"{backend.label}: retention {args.retention} s, {args.windows} windows,"
                f" {args.rate:g} publishes/s (simulated) to 2 subscriptions, {rules}",
                flush=True,
            )
            run(backend, args)


if __name__ == "__main__":
    main()
