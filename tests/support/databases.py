"""A store's database seen from a test: every write's connection wrapped, to count or to fail
its statements, through the :class:`~gateway.store.backends.database.Database` seam the store
is given (never by patching the store)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from gateway.store.backends.database import Database
from gateway.store.sql.connection import Connection, Cursor, Dialect, Params, SelfContained

T = TypeVar("T")


class PassingConnection:
    """A :class:`Connection` that passes everything to ``inner``: subclasses change a part."""

    def __init__(self, inner: Connection) -> None:
        self.inner = inner

    @property
    def dialect(self) -> Dialect:
        return self.inner.dialect

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        return self.inner.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Any:
        return self.inner.executemany(sql, parameters)

    def atomic(self) -> AbstractContextManager[object]:
        return self.inner.atomic()


class CountingConnection(PassingConnection):
    """A :class:`Connection` that appends each statement reaching it to ``sent``."""

    def __init__(self, inner: Connection, sent: list[str]) -> None:
        super().__init__(inner)
        self.sent = sent

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        self.sent.append(sql)
        return self.inner.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Any:
        self.sent.append(sql)
        return self.inner.executemany(sql, parameters)


class InjectedFailure(Exception):
    """What a :class:`FailingConnection` raises in place of a statement."""


class FailingConnection(PassingConnection):
    """A :class:`Connection` that keeps in ``seen`` the statements ``picks`` chooses (all of
    them by default) and raises :class:`InjectedFailure` instead of running the one of them
    numbered ``fail_at`` (from 1; ``None``: none)."""

    def __init__(
        self,
        inner: Connection,
        seen: list[str],
        fail_at: int | None,
        picks: Callable[[str], bool] = lambda sql: True,
    ) -> None:
        super().__init__(inner)
        self.seen = seen
        self.fail_at = fail_at
        self.picks = picks

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        if self.picks(sql):
            self.seen.append(sql)
            if len(self.seen) == self.fail_at:
                raise InjectedFailure(sql[:40])
        return self.inner.execute(sql, parameters)


class WrappedWrites:
    """A :class:`Database` that runs each write on ``wrap(connection)``; the rest as ``inner``
    does. A :class:`SelfContained` write stays one, as the store said of it."""

    def __init__(self, inner: Database, wrap: Callable[[Connection], Connection]) -> None:
        self.inner = inner
        self.wrap = wrap
        self.outage = inner.outage

    @property
    def notifier(self) -> Any:
        return self.inner.notifier

    def read(self, work: Callable[[Connection], T]) -> T:
        return self.inner.read(work)

    def write(self, work: Callable[[Connection], T], **options: Any) -> T:
        def wrapped(conn: Connection) -> T:
            return work(self.wrap(conn))

        keep = SelfContained(wrapped) if isinstance(work, SelfContained) else wrapped
        return self.inner.write(keep, **options)

    def migrate(self) -> list[int]:
        return self.inner.migrate()

    def ping(self) -> bool:
        return self.inner.ping()

    def close(self) -> None:
        self.inner.close()
