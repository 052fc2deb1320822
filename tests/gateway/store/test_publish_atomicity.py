"""A publish is all-or-nothing on both databases at any fan-out (issue 33, finding 5).

Past 500 matching subscriptions PostgreSQL cannot write the message and its deliveries in one
``WITH … INSERT`` statement; the publish then writes several statements, which must still commit
together. The failure is injected through the store's own seam, the
:class:`~gateway.store.backends.database.Database` it is given: a database whose connections
fail the second INSERT of deliveries, after the message row and the first 500 deliveries.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.store.backends.database import Database
from gateway.store.base import compose_store
from gateway.store.sql.connection import Connection, Cursor, Params
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.databases import PassingConnection, WrappedWrites

FAN_OUT = 501


class InjectedFailure(Exception):
    pass


class FailingConnection(PassingConnection):
    """A :class:`Connection` that raises on the ``nth`` statement ``matches`` picks out."""

    def __init__(self, inner: Connection, matches: Callable[[str], bool], nth: int) -> None:
        super().__init__(inner)
        self.matches = matches
        self.left = nth

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        if self.matches(sql):
            self.left -= 1
            if self.left == 0:
                raise InjectedFailure(sql[:40])
        return self.inner.execute(sql, parameters)


class FailingDatabase(WrappedWrites):
    """A :class:`Database` whose writes run on a :class:`FailingConnection` while ``armed``."""

    def __init__(self, inner: Database, matches: Callable[[str], bool], nth: int) -> None:
        super().__init__(inner, self._connection)
        self.matches = matches
        self.nth = nth
        self.armed = False

    def _connection(self, conn: Connection) -> Connection:
        return FailingConnection(conn, self.matches, self.nth) if self.armed else conn


def _is_delivery_insert(sql: str) -> bool:
    return sql.startswith("INSERT INTO deliveries")


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


@pytest.mark.parametrize("fan_out", [FAN_OUT, 1001])
def test_a_failed_publish_past_500_subscriptions_leaves_nothing(
    open_database: OpenDatabase, fan_out: int
) -> None:
    database = FailingDatabase(open_database(), _is_delivery_insert, nth=2)
    store = compose_store(database, clock=lambda: 1_700_000_000.0)  # type: ignore[arg-type]
    store.topics.create_topic("wide", 65536, False)
    for number in range(fan_out):
        store.topics.subscribe(Subscription("wide", f"s{number}", "http://127.0.0.1:9/"))
    message = TopicMessage("m-1", "wide", "body", "X", 1_700_000_000_000)

    database.armed = True
    with pytest.raises(InjectedFailure):
        store.topics.publish(message)
    assert _counts(database, "wide") == (0, 0)

    database.armed = False
    assert store.topics.publish(message).deliveries == fan_out
    assert _counts(database, "wide") == (1, fan_out)
