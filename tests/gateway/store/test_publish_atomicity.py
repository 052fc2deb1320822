"""A publish is all-or-nothing on both databases at any fan-out (issue 33, finding 5).

A publish's writes, the message and a delivery per subscription, are independent writes
(gateway/store/sql/together.py). SQLite runs them one by one in its writer's transaction: the
message, then the deliveries 500 to an INSERT. PostgreSQL gets them as one statement while
their parameters fit in one (some 4,680 subscriptions), so that a publish needs no transaction
around it; past that, as several in one transaction (tests/gateway/store/test_together.py
checks that case). The failure is injected through the store's own seam, the
:class:`~gateway.store.backends.database.Database` it is given: a database whose connections
fail a chosen statement among those that write deliveries.
"""

from __future__ import annotations

import pytest

from gateway.store.backends.database import Database
from gateway.store.base import compose_store
from gateway.store.sql.connection import Connection
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.databases import FailingConnection, InjectedFailure, WrappedWrites


class FailingDatabase(WrappedWrites):
    """A :class:`Database` whose writes run on a :class:`FailingConnection`."""

    def __init__(self, inner: Database) -> None:
        super().__init__(inner, self._connection)
        self.seen: list[str] = []
        self.fail_at: int | None = None

    def _connection(self, conn: Connection) -> Connection:
        return FailingConnection(conn, self.seen, self.fail_at, _writes_deliveries)


def _writes_deliveries(sql: str) -> bool:
    return "INSERT INTO deliveries" in sql


def _counts(database: Database, topic: str) -> tuple[int, int]:
    def work(conn: Connection) -> tuple[int, int]:
        messages = conn.execute(
            "SELECT COUNT(*) AS n FROM topic_messages WHERE topic_name = ?", (topic,)
        ).fetchone()["n"]
        deliveries = conn.execute(
            "SELECT COUNT(*) AS n FROM deliveries WHERE topic_name = ?", (topic,)
        ).fetchone()["n"]
        return int(messages), int(deliveries)

    return database.read(work)


@pytest.mark.parametrize("fan_out", [501, 1001])
def test_a_failed_publish_to_hundreds_of_subscriptions_leaves_nothing(
    open_database: OpenDatabase, fan_out: int
) -> None:
    database = FailingDatabase(open_database())
    store = compose_store(database, clock=lambda: 1_700_000_000.0)  # type: ignore[arg-type]
    store.topics.create_topic("wide", 65536, False)
    for number in range(fan_out):
        store.topics.subscribe(Subscription("wide", f"s{number}", "http://127.0.0.1:9/"))
    message = TopicMessage("m-1", "wide", "body", "X", 1_700_000_000_000)
    one_statement = database.read(lambda conn: conn.dialect.writable_cte)
    # SQLite: the second INSERT of deliveries, after the message and the first 500 deliveries;
    # PostgreSQL: its one statement.
    database.fail_at = 1 if one_statement else 2

    with pytest.raises(InjectedFailure):
        store.topics.publish(message)
    assert _counts(database, "wide") == (0, 0)

    database.fail_at = None
    database.seen.clear()
    assert store.topics.publish(message).deliveries == fan_out
    assert _counts(database, "wide") == (1, fan_out)
    assert len(database.seen) == (1 if one_statement else -(-fan_out // 500))
