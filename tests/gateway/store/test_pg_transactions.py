"""A PostgreSQL write is its pipeline's implicit transaction: no BEGIN, no COMMIT, the Sync
that ends the pipeline commits it. What that must not change: a write is kept whole or not at
all, whether its work raises, a statement fails, a row count is read halfway or a greenlet is
interrupted while it waits; a block (``LOCK TABLE``'s) still works; only the writes that may be
lost skip the WAL flush, and the connection goes back to the pool as it came."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator

import psycopg
import pytest

from gateway.errors.mns import MNSError
from gateway.store.backends.postgres import PostgresDatabase
from gateway.store.sql.connection import Connection
from tests.postgres import PostgresServer


class Boom(Exception):
    """The work's own failure, after it sent statements."""


@pytest.fixture
def database(postgres: PostgresServer) -> Iterator[PostgresDatabase]:
    """One connection, so that each write gets the connection the last one gave back."""
    opened = PostgresDatabase(postgres.new_database(), migrate=False, pool_size=1)
    opened.write(lambda c: c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
    yield opened
    opened.close()


def kept(database: PostgresDatabase) -> list[int]:
    rows = database.read(lambda c: c.execute("SELECT id FROM t ORDER BY id").fetchall())
    return [row["id"] for row in rows]


def insert(conn: Connection, *ids: int) -> None:
    for id_ in ids:
        conn.execute("INSERT INTO t (id) VALUES (?)", (id_,))


def test_a_row_count_read_halfway_leaves_the_write_whole(database: PostgresDatabase) -> None:
    """Reading a row count waits for that statement's result without ending the transaction;
    of a statement that returns rows, none is lost to the wait."""

    def work(conn: Connection) -> tuple[int, list[int]]:
        insert(conn, 1, 2, 3)
        updated = conn.execute("UPDATE t SET id = id + 10 WHERE id < ?", (3,)).rowcount
        deleted = conn.execute("DELETE FROM t WHERE id IN (?, ?) RETURNING id", (3, 12))
        count = deleted.rowcount
        ids = sorted(row["id"] for row in deleted.fetchall())
        assert (updated, count) == (2, 2)
        insert(conn, 4)
        raise Boom(ids)

    with pytest.raises(Boom) as raised:
        database.write(work)
    assert raised.value.args == ([3, 12],)
    assert kept(database) == []


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "may be lost"])
def test_a_write_whose_work_raises_keeps_none_of_its_statements(
    database: PostgresDatabase, durable: bool
) -> None:
    def work(conn: Connection) -> None:
        insert(conn, 1)
        assert conn.execute("SELECT COUNT(*) AS n FROM t").fetchone()["n"] == 1
        insert(conn, 2)
        raise Boom

    with pytest.raises(Boom):
        database.write(work, durable=durable)
    assert kept(database) == []
    database.write(lambda c: insert(c, 5), durable=durable)
    assert kept(database) == [5]


def test_a_failed_statement_rolls_back_the_statements_before_it(
    database: PostgresDatabase,
) -> None:
    database.write(lambda c: insert(c, 1))
    with pytest.raises(psycopg.errors.UniqueViolation):
        database.write(lambda c: insert(c, 2, 3, 1, 4))
    assert kept(database) == [1]


def test_text_refused_before_it_is_sent_rolls_back_what_was(database: PostgresDatabase) -> None:
    """psycopg refuses a NUL in text before sending anything: the statements already sent are
    in the pipeline, and the Sync that ends it must not commit them."""

    def work(conn: Connection) -> None:
        insert(conn, 1)
        conn.execute("SELECT 1 AS one WHERE ? = 'x'", ("a\x00b",))

    with pytest.raises(MNSError) as raised:
        database.write(work)
    assert raised.value.code == "InvalidArgument"
    assert kept(database) == []


def test_a_block_a_write_asks_for_includes_what_it_ran_before(
    database: PostgresDatabase,
) -> None:
    """``LOCK TABLE`` needs a transaction block: ``atomic()`` makes the write one, from its
    first statement on, committed at its end or rolled back whole."""

    def locked(then: Callable[[Connection], None]) -> Callable[[Connection], None]:
        def work(conn: Connection) -> None:
            insert(conn, 1)
            with conn.atomic():
                conn.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
            then(conn)

        return work

    def fail(conn: Connection) -> None:
        insert(conn, 2)
        raise Boom

    with pytest.raises(Boom):
        database.write(locked(fail))
    assert kept(database) == []
    with pytest.raises(psycopg.errors.UniqueViolation):
        database.write(locked(lambda c: insert(c, 1)))
    assert kept(database) == []
    database.write(locked(lambda c: insert(c, 2)))
    assert kept(database) == [1, 2]


def test_only_writes_that_may_be_lost_skip_the_flush_and_only_while_they_run(
    database: PostgresDatabase,
) -> None:
    def setting(conn: Connection) -> str:
        return str(conn.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"])

    assert database.write(setting, durable=False) == "off"
    assert database.write(setting) == "on"
    assert database.read(setting) == "on"


INTERRUPTED = """
import json, sys
from gevent import monkey
monkey.patch_all()
import gevent
from gateway.store.backends.postgres import PostgresDatabase

database = PostgresDatabase(sys.argv[1], pool_size=1, migrate=False)
database.write(lambda c: c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)"))

def work(conn):
    conn.execute("INSERT INTO t (id) VALUES (1)")
    conn.execute("SELECT pg_sleep(2) AS slept").fetchone()

try:
    with gevent.Timeout(0.2):
        database.write(work)
    interrupted = False
except gevent.Timeout:
    interrupted = True
database.write(lambda c: c.execute("INSERT INTO t (id) VALUES (2)"))
rows = database.read(lambda c: c.execute("SELECT id FROM t ORDER BY id").fetchall())
database.close()
print(json.dumps({"interrupted": interrupted, "kept": [row["id"] for row in rows]}))
"""


def test_a_write_interrupted_while_it_waits_keeps_nothing(postgres: PostgresServer) -> None:
    """A greenlet's timeout raised inside psycopg's wait, halfway through a write: what it sent
    is rolled back, and the connection serves the next write (in a fresh interpreter: gevent's
    patching is for life)."""
    result = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, postgres.new_database()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == {"interrupted": True, "kept": [2]}
