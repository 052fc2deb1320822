"""Statements explained: which indexes a store statement reads, on either backend, so a test
can say that its cost follows what it serves and not the size of a table."""

from __future__ import annotations

from gateway.store.sql.connection import Connection, Cursor


class Recording:
    """A connection that keeps the statements run through it, to explain them afterwards."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.dialect = conn.dialect
        self.statements: list[tuple[str, tuple[object, ...]]] = []

    def execute(self, sql: str, parameters: tuple[object, ...] = ()) -> Cursor:
        self.statements.append((sql, tuple(parameters)))
        return self.conn.execute(sql, parameters)


def plan_of(conn: Connection, sql: str, parameters: tuple[object, ...]) -> str:
    if conn.dialect.name == "sqlite":
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", parameters).fetchall()
        return "\n".join(row["detail"] for row in rows)
    # Tables this small are read whole whatever the indexes: ask what the index allows.
    conn.execute("SET LOCAL enable_seqscan = off")
    rows = conn.execute(f"EXPLAIN {sql}", parameters).fetchall()
    return "\n".join(str(next(iter(dict(row).values()))) for row in rows)
