"""The inbox over a :class:`~gateway.store.backends.database.Database`: entries stored in the
transaction
that completes their delivery (neither lost nor kept twice), read back by filters, emptied."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from gateway.inbox.records import InboxEntry, InboxKind, InboxQuery
from gateway.store.backends.database import Database
from gateway.store.sql import delivery_sql
from gateway.store.sql.connection import Connection, Row


def _entry_of(row: Row) -> InboxEntry:
    return InboxEntry(
        id=row["id"],
        kind=InboxKind(row["kind"]),
        recipient=row["recipient"],
        topic_name=row["topic_name"],
        subscription_name=row["subscription_name"],
        message_id=row["message_id"],
        stored_at_ms=row["stored_at"],
        document=json.loads(row["entry"]),
    )


def _insert(conn: Connection, entries: Sequence[InboxEntry]) -> None:
    conn.executemany(
        "INSERT INTO inbox (id, kind, recipient, topic_name, subscription_name, message_id,"
        " stored_at, entry) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        [
            (
                e.id,
                e.kind.value,
                e.recipient,
                e.topic_name,
                e.subscription_name,
                e.message_id,
                e.stored_at_ms,
                json.dumps(e.document, ensure_ascii=False),
            )
            for e in entries
        ],
    )


def _select(conn: Connection, kind: InboxKind, query: InboxQuery) -> list[InboxEntry]:
    conditions, params = ["kind = ?"], [kind.value]
    for column, value, operator in (
        ("recipient", query.recipient, "="),
        ("topic_name", query.topic_name, "="),
        ("stored_at", query.since_ms, ">="),
        ("stored_at", query.until_ms, "<="),
    ):
        if value is not None:
            conditions.append(f"{column} {operator} ?")
            params.append(value)
    rows = conn.execute(
        "SELECT id, kind, recipient, topic_name, subscription_name, message_id, stored_at, entry"
        f" FROM inbox WHERE {' AND '.join(conditions)} ORDER BY stored_at, id LIMIT ?",
        [*params, query.limit],
    ).fetchall()
    return [_entry_of(row) for row in rows]


class InboxStore:
    def __init__(self, database: Database, clock: Callable[[], float]) -> None:
        self.database = database
        self.clock = clock

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def deliver(self, delivery_id: str, entries: Sequence[InboxEntry]) -> None:
        """Keep ``entries`` and complete their delivery, in one transaction."""

        def work(conn: Connection) -> None:
            _insert(conn, entries)
            delivery_sql.complete(conn, [delivery_id])

        self.database.write(work)

    def entries(self, kind: InboxKind, query: InboxQuery | None = None) -> list[InboxEntry]:
        """The matching entries, oldest first."""
        return self.database.read(lambda c: _select(c, kind, query or InboxQuery()))

    def clear(self, kind: InboxKind) -> int:
        """Empty one inbox; how many entries it held."""
        return self.database.write(
            lambda c: c.execute("DELETE FROM inbox WHERE kind = ?", (kind.value,)).rowcount
        )
