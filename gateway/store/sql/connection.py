"""The one interface every store statement is written against, whichever database runs it.

- **Placeholders** are ``?``, SQLite's own style, so the embedded default runs statements exactly
  as written; the PostgreSQL connection translates each distinct statement once and caches it.
- **Rows** are read by column name only (``row["name"]``; aggregates get an ``AS`` name), which
  both ``sqlite3.Row`` and psycopg's ``dict_row`` allow.
- **executemany** belongs to the connection here (psycopg's own ``Connection`` has none; its
  adapter runs it on a cursor).
- The few differences in SQL the two databases need are named in a :class:`Dialect`, never
  tested for by type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import chain
from typing import Any, Generic, Protocol, TypeVar

Params = Sequence[Any]
T = TypeVar("T")


class Row(Protocol):
    """A result row whose columns are read by name."""

    def __getitem__(self, column: str, /) -> Any: ...


class Cursor(Protocol):
    """The result of one statement."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the databases, as SQL fragments and facts."""

    name: str
    #: Appended to the row-choosing subquery of a claim, with ``{alias}`` the claimed table's:
    #: rows another transaction is claiming right now are skipped instead of waited for
    #: (PostgreSQL); SQLite has one writer at a time anyway.
    skip_locked: str
    #: Appended to a SELECT of one row to hold it until the transaction ends, so that others
    #: changing it wait (PostgreSQL); nothing for SQLite, where writers take turns anyway.
    lock_row: str
    #: Taken inside the migration transaction so that one process migrates at a time.
    migration_lock: str | None
    #: The names (column ``name``) of the gateway's tables.
    list_tables: str
    #: ``WITH x AS (INSERT …) INSERT …``: two inserts in one statement (PostgreSQL only).
    writable_cte: bool = False
    #: ``LEFT JOIN LATERAL (subquery)``: a subquery per row of what precedes it (PostgreSQL).
    lateral_join: bool = False
    #: The history tables are partitioned and retention drops partitions (PostgreSQL, migration
    #: 16: gateway/store/sql/partitions_sql.py); else retention deletes rows in batches.
    partitions: bool = False

    def lock_skipping(self, alias: str) -> str:
        return self.skip_locked.format(alias=alias)


SQLITE = Dialect(
    "sqlite",
    skip_locked="",
    lock_row="",
    migration_lock=None,
    list_tables="SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
)
POSTGRESQL = Dialect(
    "postgresql",
    skip_locked=" FOR UPDATE OF {alias} SKIP LOCKED",
    lock_row=" FOR UPDATE",
    # An arbitrary constant naming the gateway's schema migrations among advisory locks.
    migration_lock="SELECT pg_advisory_xact_lock(7213401991)",
    # Tables and partitioned tables, not their partitions.
    list_tables="SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n"
    " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
    " AND c.relkind IN ('r', 'p') AND NOT c.relispartition",
    writable_cte=True,
    lateral_join=True,
    partitions=True,
)


class Connection(Protocol):
    """A connection inside a transaction the :class:`~gateway.store.base.Database` manages."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Any: ...

    def atomic(self) -> AbstractContextManager[object]:
        """The statements run in the block are committed together or not at all, in a
        transaction block (PostgreSQL's ``LOCK TABLE`` needs one). Inside a write's transaction
        that may mean nothing more, or (PostgreSQL, whose writes are implicit transactions) the
        whole write made a block; a :class:`SelfContained` write, which a database may run
        without a transaction, gets one around the block."""


@dataclass(frozen=True, slots=True)
class SelfContained(Generic[T]):
    """A write that makes its own changes all-or-nothing: it reads, then writes each change
    that must not be split either in one statement or in a :meth:`Connection.atomic` block.

    Whether a write needs the transaction :meth:`~gateway.store.base.Database.write` puts
    around it is thus stated by the code that writes its statements (wrapping itself in this),
    never by a caller's flag. A database may run such a write statement by statement
    (PostgreSQL: no BEGIN and COMMIT, which cost the driver more than a small request's
    statements: docs/benchmarks.md#postgresql-beside-sqlite-2026-11-22-shared-machine).
    """

    work: Callable[[Connection], T]

    def __call__(self, conn: Connection) -> T:
        return self.work(conn)


def placeholders(count: int) -> str:
    """``?, ?, ...``: an ``IN`` list of ``count`` parameters."""
    return ", ".join("?" * count)


#: Rows per multi-row INSERT: well inside both databases' limits on parameters per statement.
_ROWS_PER_INSERT = 500


def insert_rows(
    conn: Connection, into: str, rows: Sequence[Params], *, on_conflict: str = ""
) -> None:
    """``INSERT INTO {into} VALUES (…), (…), … {on_conflict}``: many rows in one statement (a
    few for very many); ``on_conflict`` (``ON CONFLICT …``) makes it an upsert, whose rows must
    not repeat a key.

    One statement rather than ``executemany``'s one per row: on PostgreSQL each statement is a
    message to the server and a wait for it (a publish to ten subscriptions went from eleven
    statements to two), while SQLite runs either at the same speed.
    """
    suffix = f" {on_conflict}" if on_conflict else ""
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        chunk = rows[start : start + _ROWS_PER_INSERT]
        values = list(chain.from_iterable(chunk))  # in C: a settle's history has ~200 values
        conn.execute(f"INSERT INTO {into} {values_of(chunk)}{suffix}", values)


def values_of(rows: Sequence[Params]) -> str:
    """``VALUES (?, …), (?, …)`` for ``rows``."""
    row = f"({placeholders(len(rows[0]))})"
    return "VALUES " + ", ".join([row] * len(rows))
