"""Server time of every console page on a large gateway: 1,000 queues holding a million
messages, 100 topics with 100 subscriptions each, dead letters and an hour of live figures.

``--hidden`` of each queue's messages (1 %) are in flight or delayed for an hour, the rest wait.
The messages are made by the database itself (rows shaped as the store writes them: a million
SendMessage calls would take longer than the measurement); the time the fill took is printed.
Then each page is requested through the app in this process (Flask's test client: no network,
no server in front) and timed from request to the last byte of the answer. Prints the median
and the slowest of ``--repeat`` requests per page, per backend, and what the overview's
background count costs (docs/console.md#overview--console); the issue asks for every page
under 100 ms.

    .venv/bin/python bench/console_pages.py [--messages 1000000] [--repeat 15]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from backends import Backend, add_database_arguments, backends

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.delivery.records import Attempt, Settlement
from gateway.queues.records import QueueAttributes
from gateway.store.backends.database import Database
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from gateway.store.console import ConsoleReads
from gateway.store.sql.connection import Connection
from gateway.topics.records import Subscription, TopicMessage

KEY, SECRET = "bench-key", "bench-secret"
ROWS_PER_WRITE = 200_000

#: Messages made by the database itself (a row per number; a million rows sent one by one from
#: Python took five minutes on PostgreSQL, this takes seconds), shaped as the store writes them.
#: Message i goes to queue i % queues; every ``every``-th message of each queue is not visible
#: for an hour (in flight if received, else delayed), so each queue holds the same share.
_FILL_COLUMNS = (
    "INSERT INTO queue_messages (id, queue_name, body, body_md5, priority, enqueue_time,"
    " visible_at, expires_at, dequeue_count, receipt_nonce)"
)
_FILL_SHAPE = (
    " {queue}, 'message body ' || i, '{md5}', 8, ?,"
    " ? + CASE WHEN (i / ?) % ? = 0 THEN 3600000 ELSE 0 END, ? + 86400000,"
    " CASE WHEN (i / ?) % ? = 0 THEN 1 ELSE 0 END, 0"
)
_FILL = {
    "sqlite": _FILL_COLUMNS
    + " WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
    + " SELECT printf('bench-%08d', i),"
    + _FILL_SHAPE.format(queue="printf('queue-%04d', i % ?)", md5="0" * 32)
    + " FROM n",
    "postgresql": _FILL_COLUMNS
    + " SELECT 'bench-' || lpad(i::text, 8, '0'),"
    + _FILL_SHAPE.format(queue="'queue-' || lpad((i % ?)::text, 4, '0')", md5="0" * 32)
    + " FROM generate_series(?::bigint, ?::bigint) AS i",
}


def open_database(backend: Backend, data_dir: Path) -> tuple[Database, str | None]:
    url = backend.new_database()
    if url is None:
        return SQLiteDatabase(data_dir / "bench.sqlite3", synchronous="NORMAL"), None
    from gateway.store.backends.postgres import PostgresDatabase

    return PostgresDatabase(url, pool_size=4), url


def settle(database: Database, url: str | None) -> None:
    """Statistics (and PostgreSQL's visibility map) as a database that has been running has
    them: autovacuum would have analysed a table that grew by a million rows."""
    if url is None:
        database.write(lambda conn: conn.execute("ANALYZE"))
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


def fill(
    store: Store, queues: int, topics: int, subscriptions: int, messages: int, hidden: float
) -> None:
    for q in range(queues):
        store.queues.create_queue(f"queue-{q:04d}", QueueAttributes())
    for t in range(topics):
        store.topics.create_topic(f"topic-{t:03d}", 65536, False)
        for s in range(subscriptions):
            endpoint = f"http://127.0.0.1:9/t{t}/s{s}"
            store.topics.subscribe(Subscription(f"topic-{t:03d}", f"sub-{s:03d}", endpoint))
    now = store.now_ms()
    every = max(1, round(1 / hidden)) if hidden > 0 else messages + 1
    shape = (queues, now, now, queues, every, now, queues, 2 * every)
    for start in range(0, messages, ROWS_PER_WRITE):
        numbers = (start, min(start + ROWS_PER_WRITE, messages) - 1)
        store.database.write(lambda conn, numbers=numbers: _fill(conn, numbers, shape))
    _pushes(store, 200)
    seed_delivered_history(store, topics, subscriptions)


def _fill(conn: Connection, numbers: tuple[int, int], shape: tuple[int, ...]) -> None:
    if conn.dialect.name == "sqlite":
        conn.execute(_FILL["sqlite"], (*numbers, *shape))
    else:
        conn.execute(_FILL["postgresql"], (*shape, *numbers))


def _pushes(store: Store, count: int) -> None:
    """Published messages whose pushes succeed or die: live figures, health, dead letters."""
    for n in range(count):
        now = store.now_ms()
        message = TopicMessage(store.topics.new_message_id(now), "topic-000", f"m{n}", "MD5", now)
        store.topics.publish(message)
        for job in store.deliveries.claim("bench", 60, 200, frozenset()):
            failed = job.subscription.name.endswith("7")
            attempt = Attempt(1, now, "http_error" if failed else "success", 502 if failed else 200)
            reason = "retries" if failed else None
            store.deliveries.settle("bench", [Settlement(job, attempt, dead_reason=reason)])


def pages(store: Store) -> dict[str, str]:
    letter = store.deliveries.list_dead_letters("", 1).items[0]
    return {
        "overview": "/console/",
        "queues": "/console/queues",
        "queues after 900": "/console/queues?marker=queue-0900",
        "queues by prefix": "/console/queues?prefix=queue-05",
        "queue + peek 16": "/console/queues/queue-0500?peek=16",
        "topics": "/console/topics",
        "topic (100 subs)": "/console/topics/topic-000",
        "dead letters": "/console/dead-letters",
        "dead letters by sub": "/console/dead-letters?subscription=sub-007",
        "dead letter": f"/console/dead-letters/{letter.id}",
        "deliveries": f"/console/deliveries?message_id={letter.message.id}",
        **delivered_pages(store),
    }


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def measure(backend: Backend, args: argparse.Namespace) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="console-bench-") as data_dir:
        database, url = open_database(backend, Path(data_dir))
        database.migrate()
        store = compose_store(database, max_queues=None)
        started = time.monotonic()
        fill(store, args.queues, args.topics, args.subscriptions, args.messages, args.hidden)
        settle(database, url)
        print(f"{backend.label}: filled in {time.monotonic() - started:.0f} s", flush=True)
        app = create_app(Settings(data_dir=Path(data_dir)), store, {KEY: SECRET})
        # The first view of the overview counts its messages (in the request here, a thread in
        # a server); the timed views then show the kept counts, as every view within a minute.
        app.extensions["mns-console"].reads.background = lambda work: work()
        client = app.test_client()
        token = re.search(r'csrf_token" value="([^"]+)"', client.get("/console/sign-in").text)
        assert token
        form = {"csrf_token": token.group(1), "access_key_id": KEY, "access_key_secret": SECRET}
        assert client.post("/console/sign-in", data=form).status_code == 302
        results = {}
        for name, path in pages(store).items():
            assert client.get(path).status_code == 200, path  # warm, and it must work
            results[name] = timed(lambda path=path: client.get(path).data, args.repeat)
        # What the background count of the overview's messages costs (one replica, once a
        # minute, off the request path):
        reads = ConsoleReads(store.database, store.clock, refresh_seconds=0)
        results["(background count)"] = timed(reads.refresh_counts, max(3, args.repeat // 3))
        database.close()
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--subscriptions", type=int, default=100)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--hidden", type=float, default=0.01, help="share of messages in flight or delayed"
    )
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as chosen:
        for backend in chosen:
            results = measure(backend, args)
            print(f"\n{backend.label}: page server time, ms (median / slowest of {args.repeat})")
            for name, times in results.items():
                median = statistics.median(times)
                print(f"  {name:<22} {median:8.1f} {max(times):8.1f}")


# Delivered history (deliveries-history) --------------------------------------------------------
#: Rows of history seeded: each topic's messages of the last day, to every subscription.
DELIVERED_ROWS = 300_000


def seed_delivered_history(store: Store, topics: int, subscriptions: int) -> None:
    """A day of successful pushes in ``delivered``, shaped as settle writes them (MessageIds
    that sort by time; one in ten took three tries), in bulk."""
    now, per_message = store.now_ms(), max(1, subscriptions)
    failed = json.dumps(
        [Attempt(n, now, "http_error", 502, "HTTP 502", 9.0).fields() for n in (1, 2)]
    )
    rows = [
        (
            f"{now - 86_000_000 + n // per_message * 10:011X}-BENCH000-{n // per_message:08X}",
            f"bench-{n:012d}",
            f"topic-{n // per_message % max(1, topics):03d}",
            f"sub-{n % per_message:03d}",
            now,
            3 if n % 10 == 0 else 1,
            "success",
            204,
            12.5,
            failed if n % 10 == 0 else None,
        )
        for n in range(DELIVERED_ROWS)
    ]
    for start in range(0, len(rows), ROWS_PER_WRITE):
        store.database.write(
            lambda conn, chunk=rows[start : start + ROWS_PER_WRITE]: conn.executemany(
                "INSERT INTO delivered (message_id, delivery_id, topic_name, subscription_name,"
                " delivered_at, attempt, outcome, status_code, latency_ms, earlier)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                chunk,
            )
        )


def delivered_pages(store: Store) -> dict[str, str]:
    """A message of the seeded history: delivered to every subscription, a tenth in three
    tries. (The "deliveries" page shows one of ``_pushes``: delivered and dead letters.)"""
    first = store.database.read(
        lambda c: c.execute("SELECT MIN(message_id) AS id FROM delivered").fetchone()["id"]
    )
    return {"deliveries (delivered)": f"/console/deliveries?message_id={first}"}


if __name__ == "__main__":
    main()
