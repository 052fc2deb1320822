"""Migration 16 on a database made at version 15 with data in it (issue 50): on PostgreSQL the
topic messages and the delivered history become partitioned tables, their rows kept in the
``_legacy`` partition, nothing lost, the pending push still made; SQLite records the version."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.delivery.records import Attempt, Settlement
from gateway.store.backends.database import Database
from gateway.store.base import compose_store
from gateway.store.sql import partitions_sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.migrations import MIGRATIONS, PARTITIONED_HISTORY
from tests.conftest import BACKENDS
from tests.support.clock import Clock

#: When the rows were written: ten minutes before the machine's time, so they are older than the
#: migration (which bounds the legacy partition by the machine's time).
NOW_MS = int(time.time() * 1000) - 600_000


def to_version_15(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
        " description TEXT NOT NULL, applied_at BIGINT NOT NULL)"
    )
    for migration in MIGRATIONS:
        if migration.version > 15:
            break
        for statement in migration.statements:
            if conn.dialect.name in migration.dialects:
                conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, 0)",
            (migration.version, migration.description),
        )


def message_id(ms: int, n: int) -> str:
    return f"{ms:011X}-TOKEN-{n:08X}"


def fill(conn: Connection) -> None:
    """A topic with two subscriptions; two messages pushed to both (their history kept), one
    still pending for "down"."""
    conn.execute("INSERT INTO topics VALUES ('t', 0, 0, 65536, 0)")
    for name in ("up", "down"):
        conn.execute(
            "INSERT INTO subscriptions (topic_name, name, endpoint, notify_strategy,"
            " notify_content_format, route, create_time, last_modify_time)"
            " VALUES ('t', ?, ?, 'BACKOFF_RETRY', 'XML', ?, 0, 0)",
            (name, f"http://{name}.test/", f"{name}.test:80"),
        )
    for n in range(3):
        mid = message_id(NOW_MS + n, n)
        conn.execute(
            "INSERT INTO topic_messages VALUES (?, 't', ?, 'X', NULL, '{}', ?, ?)",
            (mid, f"body {n}", NOW_MS + n, NOW_MS + n + 86_400_000),
        )
        for name in ("up", "down"):
            if (n, name) == (2, "down"):
                conn.execute(
                    "INSERT INTO deliveries (id, message_id, topic_name, subscription_name,"
                    " next_attempt_at, created_at) VALUES ('pending', ?, 't', 'down', ?, ?)",
                    (mid, NOW_MS, NOW_MS),
                )
                continue
            conn.execute(
                "INSERT INTO delivered VALUES (?, ?, 't', ?, ?, 1, 'success', 204, 1.0, NULL)",
                (mid, f"d{n}{name}", name, NOW_MS + 10),
            )


@pytest.fixture(params=BACKENDS)
def version_15(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        from gateway.store.backends.sqlite import SQLiteDatabase

        database: Database = SQLiteDatabase(tmp_path / "db.sqlite3", migrate=False)
    else:
        from gateway.store.backends.postgres import PostgresDatabase

        url = request.getfixturevalue("postgres").new_database()
        database = PostgresDatabase(url, migrate=False, pool_size=2)
    database.write(to_version_15)
    database.write(fill)
    yield database
    database.close()


def counts(database: Database) -> tuple[int, int, int]:
    def read(conn: Connection) -> tuple[int, int, int]:
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT COUNT(*) AS n FROM {t}").fetchone()["n"]
            for t in ("topic_messages", "delivered", "deliveries")
        )

    return database.read(read)


def test_a_version_15_database_is_migrated_and_loses_nothing(version_15: Database) -> None:
    database = version_15
    assert counts(database) == (3, 5, 1)
    # Migration 16, and every one after it (the ones before were applied at version 15).
    assert database.migrate() == [
        m.version for m in MIGRATIONS if m.version >= PARTITIONED_HISTORY.version
    ]
    assert counts(database) == (3, 5, 1)
    clock = Clock(NOW_MS / 1000 + 5)
    store = compose_store(database, clock=clock, history_retention=60)
    found = store.deliveries.message_deliveries(message_id(NOW_MS, 0))
    assert [r.name for r in found.by_subscription() if r.delivered] == ["down", "up"]
    partitioned = database.read(lambda c: c.dialect.partitions)
    if partitioned:
        names = {p.name for p in database.read(lambda c: partitions_sql.partitions(c, "delivered"))}
        assert names == {"delivered_legacy", "delivered_default"}
    # A pass two minutes after the migration: the legacy rows nobody needs go, the message the
    # pending push needs stays, and the push is made.
    clock.now = time.time() + 120
    store.deliveries.expire()
    assert counts(database) == (1, 0, 1)
    (job,) = store.deliveries.claim("w", 60, 10, frozenset())
    assert (job.delivery_id, job.message.body) == ("pending", "body 2")
    store.deliveries.settle("w", [Settlement(job, Attempt(1, store.now_ms(), "success", 204))])
    store.deliveries.expire()
    assert counts(database) == (0, 1, 0)
    if partitioned:
        names = {p.name for p in database.read(lambda c: partitions_sql.partitions(c, "delivered"))}
        assert "delivered_legacy" not in names
        assert "delivered_default" in names
