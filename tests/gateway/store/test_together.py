"""``together`` (gateway/store/sql/together.py): independent writes, all or none, joined into
one statement on PostgreSQL; and a settle's writes sent that way."""

from __future__ import annotations

from functools import partial

import pytest

from gateway.delivery.records import Attempt, PushOutcome, Settlement
from gateway.store.base import compose_store
from gateway.store.sql.connection import (
    Connection,
    SelfContained,
    insert_rows,
)
from gateway.store.sql.together import PARAMETERS_PER_STATEMENT, joined, together
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.databases import (
    CountingConnection,
    FailingConnection,
    InjectedFailure,
    WrappedWrites,
)


def test_one_statement_is_sent_as_it_is() -> None:
    assert joined([("DELETE FROM a WHERE x = ?", (1,))]) == [("DELETE FROM a WHERE x = ?", [1])]


def test_several_are_one_with_each_but_the_last_in_a_with() -> None:
    statements = [
        ("INSERT INTO a VALUES (?, ?)", (1, 2)),
        ("DELETE FROM b WHERE id IN (?)", ("x",)),
        ("UPDATE c SET n = n + ?", (3,)),
    ]
    assert joined(statements) == [
        (
            "WITH joined_1 AS (INSERT INTO a VALUES (?, ?)),"
            " joined_2 AS (DELETE FROM b WHERE id IN (?)) UPDATE c SET n = n + ?",
            [1, 2, "x", 3],
        )
    ]


def test_a_statement_with_its_own_with_goes_alone() -> None:
    own = "  with\nm AS (INSERT INTO m VALUES (?)) INSERT INTO d VALUES (?)"
    statements = [
        ("DELETE FROM a", ()),
        ("DELETE FROM b", ()),
        (own, (1, 2)),
        ("DELETE FROM c", ()),
    ]
    assert joined(statements) == [
        ("WITH joined_1 AS (DELETE FROM a) DELETE FROM b", []),
        (own, [1, 2]),
        ("DELETE FROM c", []),
    ]


def test_parameters_past_the_limit_start_another_statement() -> None:
    statements = [("A ?", (1,)), ("B ? ?", (2, 3)), ("C ?", (4,)), ("D ? ? ? ?", (5, 6, 7, 8))]
    assert joined(statements, limit=3) == [
        ("WITH joined_1 AS (A ?) B ? ?", [1, 2, 3]),
        ("C ?", [4]),
        ("D ? ? ? ?", [5, 6, 7, 8]),  # more than the limit alone: as it is
    ]
    assert joined([], limit=3) == []


def make_tables(conn: Connection) -> None:
    conn.execute("CREATE TABLE kept (name TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    conn.execute("CREATE TABLE gone (name TEXT PRIMARY KEY)")
    insert_rows(conn, "gone (name)", [("a",), ("b",), ("c",)])


def tables(conn: Connection) -> tuple[list[tuple[str, int]], list[str]]:
    kept = conn.execute("SELECT name, n FROM kept ORDER BY name").fetchall()
    gone = conn.execute("SELECT name FROM gone ORDER BY name").fetchall()
    return [(r["name"], r["n"]) for r in kept], [r["name"] for r in gone]


def writes(conn: Connection) -> None:
    insert_rows(conn, "kept (name, n)", [("x", 1), ("y", 2)])
    conn.execute("DELETE FROM gone WHERE name IN (?, ?)", ("a", "c"))
    conn.executemany("INSERT INTO kept (name, n) VALUES (?, ?)", [("z", 3), ("w", 4)])


def test_the_writes_land_in_one_statement_on_postgresql(open_database: OpenDatabase) -> None:
    database = open_database()
    database.write(make_tables)
    sent: list[str] = []

    def work(conn: Connection) -> None:
        with together(CountingConnection(conn, sent)) as kept:
            writes(kept)

    database.write(work)
    assert database.read(tables) == ([("w", 4), ("x", 1), ("y", 2), ("z", 3)], ["b"])
    assert len(sent) == (1 if database.read(lambda c: c.dialect.writable_cte) else 3)


def test_a_block_that_raises_writes_nothing(open_database: OpenDatabase) -> None:
    database = open_database()
    database.write(make_tables)

    def work(conn: Connection) -> None:
        with together(conn) as kept:
            writes(kept)
            raise LookupError("after the writes")

    with pytest.raises(LookupError):
        database.write(work)
    assert database.read(tables) == ([], ["a", "b", "c"])


@pytest.mark.parametrize("self_contained", [True, False], ids=["self-contained", "in a write"])
def test_more_parameters_than_one_statement_takes_are_still_all_or_nothing(
    open_database: OpenDatabase, self_contained: bool
) -> None:
    """Past :data:`PARAMETERS_PER_STATEMENT` PostgreSQL gets two statements, in a block: one
    of their own in a write that needs no transaction (SelfContained), else the write made a
    block (its implicit transaction would do, but ``atomic`` asks for one). The second's
    failure leaves nothing of the first; without a failure both are kept."""
    database = open_database()
    database.write(make_tables)
    rows = [(f"n{number:05d}", number) for number in range(PARAMETERS_PER_STATEMENT // 2 + 1)]
    sent: list[str] = []

    def work(fail_at: int | None, conn: Connection) -> None:
        with together(FailingConnection(conn, sent, fail_at=fail_at)) as kept:
            insert_rows(kept, "kept (name, n)", rows)

    def write(fail_at: int | None) -> None:
        bound = partial(work, fail_at)
        database.write(SelfContained(bound) if self_contained else bound)

    with pytest.raises(InjectedFailure):
        write(fail_at=2)
    assert database.read(tables) == ([], ["a", "b", "c"])
    if database.read(lambda c: c.dialect.writable_cte):
        # Two: one joined under the limit, then the one that failed.
        assert len(sent) == 2 and sent[0].startswith("WITH joined_1 AS (INSERT INTO kept")
    write(fail_at=None)
    assert len(database.read(tables)[0]) == len(rows)


def test_a_result_is_not_there_to_read_on_postgresql(open_database: OpenDatabase) -> None:
    """On SQLite the statement has run, as it came; on PostgreSQL it runs when the block ends,
    and reading its result is an error, not a wrong answer."""
    database = open_database()
    database.write(make_tables)
    on_postgresql = database.read(lambda c: c.dialect.writable_cte)

    def work(conn: Connection) -> None:
        with together(conn) as kept:
            cursor = kept.execute("DELETE FROM gone WHERE name = ?", ("a",))
            if not on_postgresql:
                assert kept is conn and cursor.rowcount == 1
                return
            reads = (lambda: cursor.rowcount, cursor.fetchone, cursor.fetchall, cursor.__iter__)
            for read in reads:
                with pytest.raises(TypeError, match="no result to read"):
                    read()

    database.write(work)
    assert database.read(tables) == ([], ["b", "c"])


def test_a_settle_sends_its_writes_in_one_statement_on_postgresql(
    open_database: OpenDatabase,
) -> None:
    """Twelve successes, two of them retried: their history, the deliveries and their attempts
    gone, and the live figures, in one statement (on SQLite, five)."""
    sent: list[str] = []
    database = WrappedWrites(open_database(), lambda conn: CountingConnection(conn, sent))
    store = compose_store(database, clock=lambda: 1_700_000_000.0)  # type: ignore[arg-type]
    store.topics.create_topic("t", 65536, False)
    for name in ("s1", "s2"):
        store.topics.subscribe(Subscription("t", name, "http://127.0.0.1:9/x"))
    for n in range(6):
        store.topics.publish(TopicMessage(f"M{n}", "t", "body", "md5", 1_700_000_000_000))
    now = store.deliveries.now_ms()
    first = store.deliveries.claim("w", 60.0, 2, frozenset())
    # Refused with a 400: retried, and no breaker counts it as a failure (it keeps no row).
    failed = [Settlement(j, Attempt(1, now, PushOutcome.HTTP_ERROR, 400), now) for j in first]
    store.deliveries.settle("w", failed)
    jobs = store.deliveries.claim("w", 60.0, 100, frozenset())
    assert len(jobs) == 12
    sent.clear()
    store.deliveries.settle(
        "w", [Settlement(j, Attempt(j.attempts + 1, now, PushOutcome.SUCCESS, 200)) for j in jobs]
    )
    writes = [sql for sql in sent if not sql.startswith("SELECT")]
    on_postgresql = database.read(lambda c: c.dialect.writable_cte)
    assert len(writes) == (1 if on_postgresql else 5), writes
    assert store.deliveries.due_count() == 0
    retried = {(j.message.id, j.subscription.name) for j in first}
    for n in range(6):
        delivered = store.deliveries.message_deliveries(f"M{n}").delivered
        assert {d.subscription_name: len(d.attempts) for d in delivered} == {
            name: 2 if (f"M{n}", name) in retried else 1 for name in ("s1", "s2")
        }
