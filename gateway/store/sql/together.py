"""Independent writes sent together: one statement where the database can join them.

On PostgreSQL each statement costs the gateway more than the server's work for a small write:
psycopg's cursor, the query's conversion, a message in the pipeline, the result's processing
(docs/benchmarks.md#a-settles-writes-in-one-statement). Writes that do not depend on each
other can go as one statement, each but the last in a ``WITH`` (PostgreSQL's writable common
table expressions), which the server runs as one: all of them, on one snapshot, or none.

:func:`together` states that a block's writes are such writes; :func:`joined` is the rule that
joins them, pure. SQLite, whose statements are C calls in the process, runs each as it comes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Final, NoReturn

from gateway.store.sql.connection import Connection, Cursor, Dialect, Params

#: Parameters in one joined statement. PostgreSQL's protocol takes at most 65,535 in a
#: statement; joining stops well before (a settle batch has a few hundred).
PARAMETERS_PER_STATEMENT: Final = 32_767
#: A statement with a ``WITH`` of its own.
_OWN_WITH: Final = re.compile(r"\s*WITH\s", re.IGNORECASE)


def joined(
    statements: Sequence[tuple[str, Params]], limit: int = PARAMETERS_PER_STATEMENT
) -> list[tuple[str, list[Any]]]:
    """``statements``, in order, as few statements as can carry them: each run of them within
    ``limit`` parameters becomes ``WITH joined_1 AS (first), … last``. A statement that has a
    ``WITH`` of its own goes alone (PostgreSQL allows a data-modifying ``WITH`` only at the
    top level), as does one with more than ``limit`` parameters."""
    groups: list[list[tuple[str, Params]]] = []
    size = limit + 1  # no group open yet
    for sql, parameters in statements:
        alone = _OWN_WITH.match(sql) is not None
        if alone or size + len(parameters) > limit:
            groups.append([])
            size = 0
        groups[-1].append((sql, parameters))
        size = limit + 1 if alone else size + len(parameters)
    return [_one_statement(group) for group in groups]


def _one_statement(group: list[tuple[str, Params]]) -> tuple[str, list[Any]]:
    *first, (last, _) = group
    names = ", ".join(f"joined_{n} AS ({sql})" for n, (sql, _) in enumerate(first, 1))
    parameters = [value for _, values in group for value in values]
    return (f"WITH {names} {last}" if first else last), parameters


@contextmanager
def together(conn: Connection) -> Iterator[Connection]:
    """A block of independent writes, all committed or none, run on the connection it yields.

    Independent: no statement reads or writes a row another one writes (PostgreSQL runs them
    all on the snapshot from before them), and no statement's result is read (the yielded
    connection's cursors refuse). On PostgreSQL they are sent when the block ends, joined
    (:func:`joined`); if the block raises, none is sent. On SQLite each runs as it comes.
    """
    if not conn.dialect.writable_cte:
        with conn.atomic():
            yield conn
        return
    writes = _Kept(conn)
    yield writes
    statements = joined(writes.statements)
    with conn.atomic() if len(statements) > 1 else nullcontext():  # one is all or nothing
        for sql, parameters in statements:
            conn.execute(sql, parameters)


class _Kept:
    """A :class:`Connection` that keeps the statements run on it, for :func:`together`."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self.statements: list[tuple[str, Params]] = []

    @property
    def dialect(self) -> Dialect:
        return self._conn.dialect

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        self.statements.append((sql, parameters))
        return _UNREAD

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> None:
        self.statements.extend((sql, values) for values in parameters)

    def atomic(self) -> AbstractContextManager[object]:
        return nullcontext()  # the block is


class _Unread:
    """What a statement in :func:`together` answers: nothing to read, it has not run yet."""

    def _refuse(self) -> NoReturn:
        raise TypeError("a write in together() has no result to read: it runs when the block ends")

    @property
    def rowcount(self) -> int:
        self._refuse()

    def fetchone(self) -> Any:
        self._refuse()

    def fetchall(self) -> list[Any]:
        self._refuse()

    def __iter__(self) -> Iterator[Any]:
        self._refuse()


_UNREAD: Final = _Unread()
