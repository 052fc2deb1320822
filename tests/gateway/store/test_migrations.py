"""Versioned migrations: data dirs from before them adopted, each version applied once, by one
process at a time, and ``mns-gateway migrate``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.store.backends.database import Database
from gateway.store.backends.memory import MemoryDatabase
from gateway.store.backends.sqlite import SQLiteDatabase, check_sqlite_version
from gateway.store.sql.migrations import (
    INITIAL,
    MIGRATIONS,
    NONCES_UNTIL_EXPIRY,
    latest_version,
)
from tests.postgres import PostgresServer


def indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        return {row[0] for row in rows}


def ledger(path: Path) -> list[int]:
    with sqlite3.connect(path) as connection:
        return [row[0] for row in connection.execute("SELECT version FROM schema_migrations")]


def make_unversioned_data_dir(path: Path) -> None:
    """A database as the gateway left it before migrations were versioned."""
    with sqlite3.connect(path) as connection:
        for statement in INITIAL.statements:
            connection.execute(statement)
        connection.execute("CREATE INDEX deliveries_message ON deliveries (message_id)")
        connection.execute(
            "INSERT INTO deliveries (id, message_id, topic_name, subscription_name,"
            " next_attempt_at, created_at) VALUES ('d', 'm', 't', 's', 1, 1)"
        )
        connection.execute("PRAGMA user_version=1")


def test_an_unversioned_data_dir_is_adopted_and_keeps_its_deliveries(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    make_unversioned_data_dir(path)
    assert "deliveries_message" in indexes(path)
    database = SQLiteDatabase(path)
    rows = database.read(lambda c: c.execute("SELECT id FROM deliveries").fetchall())
    database.close()
    assert [row["id"] for row in rows] == ["d"]
    assert "deliveries_message" not in indexes(path)  # dropping an index loses no data
    assert "deliveries_due" in indexes(path)
    # Migration 15: the subscription index widened by the due time (holding an open circuit's).
    assert "deliveries_subscription_due" in indexes(path)
    assert "deliveries_subscription" not in indexes(path)
    assert ledger(path) == [m.version for m in MIGRATIONS]


def test_each_version_is_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    first = SQLiteDatabase(path, migrate=False)
    assert first.migrate() == [m.version for m in MIGRATIONS]
    assert first.migrate() == []
    first.close()
    second = SQLiteDatabase(path)
    assert second.migrate() == []
    second.close()
    assert ledger(path) == [m.version for m in MIGRATIONS]


def migrate_together(open_database: Callable[[], Database], starters: int = 4) -> list[list[int]]:
    """What each of ``starters`` databases opened at once applied when they all migrated at
    the same moment, smallest first."""
    applied: list[list[int]] = []
    barrier = threading.Barrier(starters)

    def start() -> None:
        database = open_database()
        barrier.wait()
        applied.append(database.migrate())
        database.close()

    threads = [threading.Thread(target=start) for _ in range(starters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(applied, key=len)


def test_processes_starting_together_migrate_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    applied = migrate_together(lambda: SQLiteDatabase(path, migrate=False))
    assert applied == [[], [], [], [m.version for m in MIGRATIONS]]
    assert ledger(path) == [m.version for m in MIGRATIONS]


def test_the_stub_database_runs_the_same_migrations() -> None:
    database = MemoryDatabase()
    versions = database.read(
        lambda c: c.execute("SELECT version FROM schema_migrations").fetchall()
    )
    assert [row["version"] for row in versions] == [m.version for m in MIGRATIONS]


def test_the_migrate_command_reports_and_exits_zero(tmp_path: Path) -> None:
    env = {**os.environ, "MNS_GATEWAY_DATA_DIR": str(tmp_path)}
    env.pop("MNS_GATEWAY_DATABASE_URL", None)
    command = [sys.executable, "-m", "gateway.cli", "migrate", "--json"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert (first.returncode, again.returncode) == (0, 0), first.stderr + again.stderr
    assert json.loads(first.stdout) == {
        "Applied": [m.version for m in MIGRATIONS],
        "SchemaVersion": latest_version(),
    }
    assert json.loads(again.stdout)["Applied"] == []


def test_an_sqlite_without_returning_is_refused_clearly() -> None:
    check_sqlite_version((3, 35, 0))
    with pytest.raises(RuntimeError, match=r"SQLite 3\.31\.1 is too old"):
        check_sqlite_version((3, 31, 1))


def test_replicas_starting_together_migrate_postgresql_once(postgres: PostgresServer) -> None:
    """The advisory lock makes concurrent migrations take turns; the later ones find nothing."""
    from gateway.store.backends.postgres import PostgresDatabase

    url = postgres.new_database()
    applied = migrate_together(lambda: PostgresDatabase(url, migrate=False, pool_size=2))
    assert applied == [[], [], [], [m.version for m in MIGRATIONS]]


def test_nonces_seen_before_the_nonce_migration_keep_their_fifteen_minutes(tmp_path: Path) -> None:
    """Migration 12 turns a nonce's ``seen_at`` into the time it may be forgotten, 900 s later,
    so an upgrade forgets no nonce sooner than the old code would have."""
    path = tmp_path / "db.sqlite3"
    before = MIGRATIONS[: MIGRATIONS.index(NONCES_UNTIL_EXPIRY)]
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
            " description TEXT NOT NULL, applied_at BIGINT NOT NULL)"
        )
        for migration in before:
            for statement in migration.statements:
                connection.execute(statement)
            connection.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, 0)",
                (migration.version, migration.description),
            )
        connection.execute("INSERT INTO signature_nonces VALUES ('key', 'n-1', 1000)")
    database = SQLiteDatabase(path)
    database.close()
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT access_key_id, nonce, forget_after FROM signature_nonces")
        assert rows.fetchall() == [("key", "n-1", 1900)]
    assert "signature_nonces_forget" in indexes(path)
