"""A gateway SIGKILLed in the middle of a retention pass (issue 50) loses no pending push and no
undelivered queue message, on each backend.

The database is filled first with 30 ranges of history (15 s each: a quarter of the retention,
60 s), all older than the retention: 90,000 topic messages no delivery needs, delivered history,
a pending push in every other range (its endpoint answers 500, so it stays pending) and queue
messages. The gateway runs its retention pass as it starts; the test watches the topic messages
being forgotten and SIGKILLs the process group at the first sign: on SQLite during the batched
DELETEs, on PostgreSQL while whole ranges are dropped. Restarted, it is killed a second time
once the pass is into its batched DELETEs on PostgreSQL too (the ranges a pending push holds).
A whole pass would forget every unneeded message (fewer than its 120,000-row bound), so rows
left over prove each kill cut a pass short. Restarted a third time with the endpoint answering
204: every pending push is made, every queue message is received, and retention finishes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from base64 import b64encode
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.queues.message_ids import first_id_at
from gateway.queues.records import NewMessage, QueueAttributes
from gateway.store.backends.database import Database
from gateway.store.base import Store, compose_store
from gateway.store.sql import partitions_sql
from gateway.store.sql.connection import Connection, placeholders
from gateway.topics.records import NotifyStrategy, Subscription, TopicMessage
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, BACKENDS, RunningGateway, free_port
from tests.faults.harness import assert_quiet_log, log_text, push_endpoint, receive_all, until
from tests.support.clock import Clock
from tests.support.pushes import arrivals

RETENTION_S = 60
#: One range (:func:`partitions_sql.width_ms` of the retention), and how many are filled.
RANGE_MS = partitions_sql.width_ms(RETENTION_S)
RANGES = 30
UNNEEDED_PER_RANGE = 3000
HISTORY_PER_RANGE = 1000
#: Pending pushes in every other range: on PostgreSQL those ranges are kept, the others dropped.
PENDING_PER_RANGE = 10
QUEUED = 200
#: How long each kill waits for the pass at most, and how often it looks.
WATCH_SECONDS, WATCH_EVERY = 60.0, 0.01


@dataclass
class Seeded:
    pending: list[str]
    queued: list[str]
    #: Topic messages in the ranges a pending push holds (pending ones included).
    held_rows: int


@dataclass
class Backend:
    database: Database
    env: dict[str, str]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    env = {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_HISTORY_RETENTION": str(RETENTION_S),
        "MNS_GATEWAY_RETRY_SCALE": "0.01",
        "MNS_GATEWAY_LEASE_SECONDS": "2",
        "MNS_GATEWAY_BREAKER": "0",
    }
    database: Database
    if request.param == "sqlite":
        from gateway.store.backends.sqlite import SQLiteDatabase

        (tmp_path / "data").mkdir()
        database = SQLiteDatabase(tmp_path / "data" / "gateway.sqlite3")
    else:
        from gateway.store.backends.postgres import PostgresDatabase

        url = request.getfixturevalue("postgres").new_database()
        env["MNS_GATEWAY_DATABASE_URL"] = url
        database = PostgresDatabase(url, pool_size=2)
    yield Backend(database, env)
    database.close()


def partitioned(database: Database) -> bool:
    return database.read(lambda c: c.dialect.partitions)


def ranges_from(conn: Connection, start_ms: int, until_ms: int) -> None:
    """PostgreSQL: the retention's ranges from ``start_ms`` on, as a database partitioned since
    then has them (the empty legacy partition a fresh migration makes goes)."""
    for table in partitions_sql.PARTITIONED:
        conn.execute(f"ALTER TABLE {table} DETACH PARTITION {table}_legacy")
        conn.execute(f"DROP TABLE {table}_legacy")
        for at in range(start_ms, until_ms + 1, partitions_sql.ahead_ms(RETENTION_S)):
            partitions_sql.make_ahead(conn, table, at, RETENTION_S)


#: ``count`` rows numbered from 0, made by the database itself (a second on either backend,
#: where sending 120,000 rows' values took most of a minute on PostgreSQL).
_NUMBERS = "WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ? - 1) "


def fill_range(conn: Connection, start_ms: int) -> None:
    """A range's messages no delivery needs, and history of pushes made. Their MessageIds all
    start with the range's (:func:`first_id_at`), in it."""
    step, prefix = (RANGE_MS - 1000) // UNNEEDED_PER_RANGE, first_id_at(start_ms) + "-SEED-"
    conn.execute(
        _NUMBERS + "INSERT INTO topic_messages SELECT ? || n, 't', 'old', 'X', NULL, '{}',"
        " ? + n * ?, ? + n * ? + 86400000 FROM seq",
        (UNNEEDED_PER_RANGE, prefix, start_ms, step, start_ms, step),
    )
    conn.execute(
        _NUMBERS + "INSERT INTO delivered SELECT ? || n, 'd', 't', 's', ? + n * ? + 10, 1,"
        " 'success', 204, 1.0, NULL FROM seq",
        (HISTORY_PER_RANGE, prefix, start_ms, step),
    )


def seed(database: Database, endpoint: str, start_ms: int) -> Seeded:
    clock = Clock(start_ms / 1000)
    store = compose_store(database, clock=clock, history_retention=RETENTION_S)
    if partitioned(database):
        database.write(lambda c: ranges_from(c, start_ms, int(time.time() * 1000)))
    store.topics.create_topic("t", 65536, False)
    strategy = NotifyStrategy.EXPONENTIAL_DECAY_RETRY  # retried for a day: never given up here
    store.topics.subscribe(Subscription("t", "s", endpoint, strategy))
    store.queues.create_queue("q", QueueAttributes())
    pending, held_rows = [], 0
    for n in range(RANGES):
        range_ms = start_ms + n * RANGE_MS
        database.write(lambda c, at=range_ms: fill_range(c, at))
        if n % 2:
            clock.now = (range_ms + RANGE_MS - 500) / 1000
            pending += [publish(store) for _ in range(PENDING_PER_RANGE)]
            held_rows += UNNEEDED_PER_RANGE + PENDING_PER_RANGE
    _, sent = store.queues.send("q", [NewMessage(base64(f"q{n}")) for n in range(QUEUED)])
    queued = [m.message_id for m in sent if not isinstance(m, Exception)]
    return Seeded(pending, queued, held_rows)


def base64(text: str) -> str:
    """A body as the official SDK sends and reads them."""
    return b64encode(text.encode()).decode()


def publish(store: Store) -> str:
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "t", "pending", "X", store.now_ms()))
    return message_id


def count(database: Database, sql: str, parameters: tuple[object, ...] = ()) -> int:
    return database.read(lambda c: int(c.execute(sql, parameters).fetchone()["n"]))


def messages(database: Database) -> int:
    return count(database, "SELECT COUNT(*) AS n FROM topic_messages")


def spawn(data_dir: Path, env: dict[str, str]) -> RunningGateway:
    """``mns-gateway serve``, not waited for: its retention pass starts as it starts."""
    port, log_file = free_port(), data_dir.parent / "gateway.log"
    command = [sys.executable, "-m", "gateway.cli", "serve",
               "--port", str(port), "--data-dir", str(data_dir)]  # fmt: skip
    with log_file.open("ab") as output:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    return RunningGateway(process, port, data_dir, env, log_file)


def kill_when(gateway: RunningGateway, seen: Callable[[], bool]) -> None:
    """SIGKILL the gateway's process group as soon as ``seen()`` (bounded)."""
    try:
        deadline = time.monotonic() + WATCH_SECONDS
        while not seen() and time.monotonic() < deadline:
            assert gateway.process.poll() is None, log_text(gateway.log_file)[-3000:]
            time.sleep(WATCH_EVERY)
        assert seen(), "the retention pass never started"
    finally:
        gateway.kill()
        gateway.stop()  # a delivery worker the arbiter left behind


def assert_nothing_needed_went(database: Database, seeded: Seeded) -> None:
    """Every pending push's delivery and message, and every queue message, are there; and the
    kill cut the pass short: messages no delivery needs are left."""
    pending = seeded.pending
    assert count(database, "SELECT COUNT(*) AS n FROM deliveries") == len(pending)
    sql = f"SELECT COUNT(*) AS n FROM topic_messages WHERE id IN ({placeholders(len(pending))})"
    assert count(database, sql, tuple(pending)) == len(pending)
    sql = "SELECT COUNT(*) AS n FROM queue_messages WHERE queue_name = 'q'"
    assert count(database, sql) == len(seeded.queued)
    assert messages(database) > len(pending), "the pass had finished: the kill tested nothing"


def test_a_retention_pass_killed_midway_loses_nothing(backend: Backend, tmp_path: Path) -> None:
    database, data_dir = backend.database, tmp_path / "data"
    start_ms = (int(time.time() * 1000) // RANGE_MS - RANGES - 5) * RANGE_MS
    with push_endpoint() as endpoint:
        endpoint.status = 500  # the pending pushes stay pending while the passes are killed
        seeded = seed(database, endpoint.url_for("/push"), start_ms)
        total = messages(database)
        assert total == RANGES * UNNEEDED_PER_RANGE + len(seeded.pending)
        # First kill: at the first message forgotten (SQLite: a DELETE batch; PostgreSQL: a drop).
        kill_when(spawn(data_dir, backend.env), lambda: messages(database) < total)
        assert_nothing_needed_went(database, seeded)
        # Second kill: into the batched DELETEs (PostgreSQL: every unheld range gone already).
        mark = min(messages(database), seeded.held_rows if partitioned(database) else total)
        kill_when(spawn(data_dir, backend.env), lambda: messages(database) < mark)
        assert_nothing_needed_went(database, seeded)
        # Third start: every pending push made, every queue message received, retention done.
        endpoint.clear()
        gateway = spawn(data_dir, backend.env)
        try:
            gateway.wait_until_ready()
            assert until(lambda: set(seeded.pending) <= set(arrivals(endpoint)))
            assert receive_all(gateway.url) == Counter(seeded.queued)
            assert until(lambda: messages(database) <= len(seeded.pending))
        finally:
            gateway.stop()
    assert_quiet_log(log_text(gateway.log_file))
