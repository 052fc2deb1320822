"""The group-commit writer: batching, per-job rollback, and concurrent writers losing nothing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from gateway.store.backends.sqlite import SQLiteConnection, SQLiteDatabase


@pytest.fixture()
def database(tmp_path: Path) -> SQLiteDatabase:
    db = SQLiteDatabase(tmp_path / "db.sqlite3", synchronous="NORMAL")
    db.write(lambda c: c.execute("CREATE TABLE items (value INTEGER PRIMARY KEY)"))
    yield db
    db.close()


def test_failed_job_rolls_back_only_itself(database: SQLiteDatabase) -> None:
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def insert(value: int) -> None:
        barrier.wait()
        try:
            database.write(lambda c: c.execute("INSERT INTO items VALUES (?)", (value,)))
        except sqlite3.IntegrityError as exc:
            errors.append(exc)

    database.write(lambda c: c.execute("INSERT INTO items VALUES (1)"))
    threads = [threading.Thread(target=insert, args=(v,)) for v in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    values = database.read(
        lambda c: [r[0] for r in c.execute("SELECT value FROM items ORDER BY 1")]
    )
    assert values == [1, 2, 3]
    assert len(errors) == 1


def test_job_exception_is_raised_in_the_caller(database: SQLiteDatabase) -> None:
    def work(connection: sqlite3.Connection) -> None:
        connection.execute("INSERT INTO items VALUES (7)")
        raise LookupError("domain error after a write")

    with pytest.raises(LookupError):
        database.write(work)
    assert database.read(lambda c: c.execute("SELECT COUNT(*) FROM items").fetchone()[0]) == 0


def test_many_threads_all_commit(database: SQLiteDatabase) -> None:
    def insert_range(start: int) -> None:
        for value in range(start, start + 50):
            database.write(lambda c, v=value: c.execute("INSERT INTO items VALUES (?)", (v,)))

    threads = [threading.Thread(target=insert_range, args=(i * 1000,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert database.read(lambda c: c.execute("SELECT COUNT(*) FROM items").fetchone()[0]) == 400


def test_two_databases_on_one_file_share_it(tmp_path: Path) -> None:
    first = SQLiteDatabase(tmp_path / "shared.sqlite3")
    second = SQLiteDatabase(tmp_path / "shared.sqlite3")
    try:
        first.write(lambda c: c.execute("CREATE TABLE t (v INTEGER)"))
        second.write(lambda c: c.execute("INSERT INTO t VALUES (1)"))
        assert first.read(lambda c: c.execute("SELECT v FROM t").fetchone()[0]) == 1
        assert first.ping() and second.ping()
    finally:
        first.close()
        second.close()


def test_unknown_synchronous_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SQLiteDatabase(tmp_path / "x.sqlite3", synchronous="SOMETIMES")


#: Every statement a ``Recording`` connection was asked to run, in any thread.
SEEN: list[str] = []


class Recording(SQLiteConnection):
    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        SEEN.append(sql)
        return super().execute(sql, parameters)


def test_every_connection_is_opened_as_the_class_given(tmp_path: Path) -> None:
    """bench/store_statements.py times the store's statements this way: the writer's and the
    readers' connections alike, the migrations included."""
    SEEN.clear()
    database = SQLiteDatabase(tmp_path / "db.sqlite3", connection_class=Recording)
    try:
        assert any("CREATE TABLE" in sql for sql in SEEN)  # the migrations
        database.write(lambda c: c.execute("CREATE TABLE marks (value INTEGER)"))
        database.write(lambda c: c.execute("INSERT INTO marks VALUES (7)"))
        assert database.read(lambda c: c.execute("SELECT value FROM marks").fetchone()[0]) == 7
    finally:
        database.close()
    assert "INSERT INTO marks VALUES (7)" in SEEN
    assert "SELECT value FROM marks" in SEEN
