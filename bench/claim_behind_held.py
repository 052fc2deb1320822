"""A claim's cost behind a backlog it must leave (issue 35; docs/benchmarks.md#endpoint-health).

One topic with 10 subscriptions and ``--messages`` published messages; the 9 healthy ones share
a route, ``s009`` has its own. Claims of 64 drain the 9 healthy subscriptions' deliveries (each
batch completed, as a push that succeeded would be), and the CPU of this process per claim (the
claim's transaction; SQLite runs in it) is printed, against the same drain with no ``s009`` at
all, with ``s009``'s backlog left behind in one of two ways:

- ``held``: its breaker held open (an operator's override, so nothing else moves it);
- ``skipped``: its route left out of each claim, as a worker leaves out a route that is full or
  paused by a failed push (``--skipped``).

Then a claim that can find nothing: every due delivery is on a route it skips, as when a
worker's one busy route is full (``--skipped``; the drain's first state, 9 x messages due).
The store only: no HTTP, no workers.

    .venv/bin/python bench/claim_behind_held.py [--messages 10000] [--repeats 3] [--skipped]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from backends import Backend, add_database_arguments, backends

from gateway.breaker.state import Override
from gateway.composition import open_store
from gateway.config.settings import Settings
from gateway.store.base import Store
from gateway.store.sql import delivery_sql, held_sql
from gateway.store.sql.connection import Connection
from gateway.topics.records import Subscription, TopicMessage
from tests.support.plans import Recording

LIMIT = 64
HEALTHY_ROUTE, FAILING_ROUTE = "http://healthy.test:80", "http://failing.test:80"
#: What a drain leaves behind: nothing (no s009), s009's breaker held, s009's route skipped.
ALONE, HELD, SKIPPED = "alone", "held", "skipped"


def published(store: Store, messages: int, failing: bool) -> None:
    """The topic, its 9 healthy subscriptions (and ``s009`` if ``failing``), the messages."""
    store.topics.create_topic("fanout", 65536, False)
    for i in range(9):
        store.topics.subscribe(Subscription("fanout", f"s{i:03d}", f"http://healthy.test/{i}"))
    if failing:
        store.topics.subscribe(Subscription("fanout", "s009", "http://failing.test/"))
    now = store.now_ms()
    # MessageIds as the gateway makes them (their prefix the publish time): on PostgreSQL each
    # goes to the range of its publish time, which the retention pass makes ahead.
    store.deliveries.retain(now)
    ids = (store.topics.new_message_id(now) for _ in range(messages))
    batch = [TopicMessage(i, "fanout", "b", "X", now) for i in ids]
    for start in range(0, len(batch), 500):
        store.topics.publish_all(batch[start : start + 500])


def drain(
    backend: Backend, messages: int, behind: str, explain: bool = False
) -> tuple[float, float, float, int]:
    """CPU ms per claim (this process), wall ms, the database server's CPU ms (PostgreSQL;
    0 for SQLite, which runs in this process), and claims made."""
    skip = frozenset({FAILING_ROUTE}) if behind == SKIPPED else frozenset()
    with tempfile.TemporaryDirectory() as tmp:
        url = backend.new_database()
        store = open_store(Settings(data_dir=Path(tmp), database_url=url or ""))
        try:
            published(store, messages, failing=behind != ALONE)
            if behind == HELD:
                store.deliveries.override_breaker("fanout", "s009", Override.OPEN)
            if explain and behind == HELD:
                store.deliveries.claim("bench", 60, LIMIT, frozenset())  # the first claim
                _explain(store)
                return 0.0, 0.0, 0.0, 1
            claims, cpu, wall, server = 0, 0.0, 0.0, 0.0
            while True:
                # The server's CPU is read outside this process's: walking /proc costs CPU.
                s0 = backend.database_cpu_seconds() or 0.0
                c0, w0 = time.process_time(), time.perf_counter()
                jobs = store.deliveries.claim("bench", 60, LIMIT, skip)
                cpu += time.process_time() - c0
                wall += time.perf_counter() - w0
                server += (backend.database_cpu_seconds() or 0.0) - s0
                if not jobs:
                    break
                claims += 1
                ids = [job.delivery_id for job in jobs]
                store.database.write(lambda c, ids=ids: delivery_sql.complete(c, ids))
            assert claims >= messages * 9 // LIMIT, claims
            return cpu / claims * 1000, wall / claims * 1000, server / claims * 1000, claims
        finally:
            store.close()


def _explain(store: Store) -> None:
    """The plan of a claim's candidates after the first claim (PostgreSQL: with the rows each
    step read and dropped), the held subscription left out as the claim leaves it out."""
    now = store.now_ms() + 1000
    sql = (
        "SELECT d.id FROM deliveries d JOIN subscriptions s ON s.topic_name = d.topic_name"
        " AND s.name = d.subscription_name WHERE d.next_attempt_at <= ? AND (d.lease_expires_at"
        " IS NULL OR d.lease_expires_at <= ?) AND (d.topic_name || '/' || d.subscription_name)"
        f" NOT IN ('fanout/s009') ORDER BY d.next_attempt_at LIMIT {LIMIT}"
    )

    def plan(conn: Connection) -> list[str]:
        # What a claim asks of the held subscription's due deliveries, as held_sql asks it.
        recording = Recording(conn)
        held_sql.due_to_hold(recording, ["fanout/s009"], now)  # type: ignore[arg-type]
        held = recording.statements[0]
        lines: list[str] = []
        for query, parameters in ((sql, (now, now)), held, held):
            if conn.dialect.lock_row:
                if query is held[0] and lines[-1] != "(generic plan)":
                    # The plan a prepared statement settles on after five runs, as claims' do.
                    conn.execute("SET plan_cache_mode = force_generic_plan")
                    lines.append("(generic plan)")
                explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
                rows = conn.execute(explain + query, parameters).fetchall()
                lines += [next(iter(dict(row).values())) for row in rows]
                conn.execute("RESET plan_cache_mode")
            else:
                rows = conn.execute("EXPLAIN QUERY PLAN " + query, parameters).fetchall()
                lines += [row["detail"] for row in rows]
        return lines

    for line in store.database.read(plan):
        print("    " + line, flush=True)
    claimed = [job.delivery_id for job in store.deliveries.claim("bench", 60, LIMIT, frozenset())]
    print(f"  the claimed deliveries read with their messages ({len(claimed)}):", flush=True)
    for line in store.database.read(lambda c: _jobs_plan(c, claimed)):
        print("    " + line, flush=True)


def _jobs_plan(conn: Connection, delivery_ids: list[str]) -> list[str]:
    """The plan of :func:`delivery_sql.jobs`, the claim's read of ``topic_messages`` (on
    PostgreSQL partitioned by MessageId: one range's index read per delivery, the others
    pruned as it runs), as a prepared statement's generic plan."""
    recording = Recording(conn)
    delivery_sql.jobs(recording, delivery_ids)  # type: ignore[arg-type]
    query, parameters = recording.statements[0]
    if not conn.dialect.lock_row:
        rows = conn.execute("EXPLAIN QUERY PLAN " + query, parameters).fetchall()
        return [row["detail"] for row in rows]
    conn.execute("SET plan_cache_mode = force_generic_plan")
    rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + query, parameters).fetchall()
    conn.execute("RESET plan_cache_mode")
    lines = [str(next(iter(dict(row).values()))) for row in rows]
    # The 64 ids of the IN list, once per line that names them, say nothing.
    return [line for line in lines if "ANY ('{" not in line]


def nothing_to_claim(backend: Backend, messages: int, claims: int = 20) -> tuple[float, float]:
    """CPU ms (this process plus the database server) and wall ms of a claim that skips the one
    route every due delivery is on (9 x ``messages`` due): it finds nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        url = backend.new_database()
        store = open_store(Settings(data_dir=Path(tmp), database_url=url or ""))
        try:
            published(store, messages, failing=False)
            skip = frozenset({HEALTHY_ROUTE})
            s0 = backend.database_cpu_seconds() or 0.0
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(claims):
                assert store.deliveries.claim("bench", 60, LIMIT, skip) == []
            cpu = time.process_time() - c0 + (backend.database_cpu_seconds() or 0.0) - s0
            return cpu / claims * 1000, (time.perf_counter() - w0) / claims * 1000
        finally:
            store.close()


def _total(figures: tuple[float, float, float, int]) -> float:
    return figures[0] + figures[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--explain", action="store_true", help="print the claim's plan only")
    parser.add_argument(
        "--skipped", action="store_true", help="behind a skipped route, not a held breaker"
    )
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            if args.explain:
                print(f"{backend.label}, {args.messages} messages, {LIMIT} first claimed:")
                drain(backend, args.messages, HELD, explain=True)
                continue
            left = SKIPPED if args.skipped else HELD
            for _ in range(args.repeats):
                alone = drain(backend, args.messages, ALONE)
                behind = drain(backend, args.messages, left)
                print(
                    f"{backend.label}, {args.messages} messages, claim of {LIMIT}, ms per claim"
                    f" (CPU here + database server, wall): without s009 {alone[0]:.2f} +"
                    f" {alone[2]:.2f}, {alone[1]:.2f}; behind {args.messages} {left}"
                    f" {behind[0]:.2f}"
                    f" + {behind[2]:.2f}, {behind[1]:.2f};"
                    f" CPU x{_total(behind) / _total(alone):.2f}"
                    f" ({alone[3]}/{behind[3]} claims)",
                    flush=True,
                )
                if args.skipped:
                    cpu, wall = nothing_to_claim(backend, args.messages)
                    print(
                        f"  a claim that finds nothing (its one route skipped, 9 x"
                        f" {args.messages} due): {cpu:.2f} ms CPU, {wall:.2f} ms wall",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
