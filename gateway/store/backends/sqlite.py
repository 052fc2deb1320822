"""The embedded SQLite database: WAL, one group-commit writer, a reader connection per thread."""

from __future__ import annotations

import fcntl
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Final, TypeVar

from gateway.store.backends.outage import Outage
from gateway.store.backends.reach import check_sqlite_settings
from gateway.store.backends.reach import check_sqlite_version as check_sqlite_version
from gateway.store.backends.writer import GroupCommitWriter
from gateway.store.notify.socket_notifier import SocketNotifier
from gateway.store.sql.connection import SQLITE, Connection
from gateway.store.sql.migrations import migrate

T = TypeVar("T")


class SQLiteConnection(sqlite3.Connection):
    """``sqlite3.Connection`` as a :class:`Connection`: execute and executemany stay C calls, and
    ``sqlite3.Row`` rows are read by name.

    Open one with ``sqlite3.connect(..., factory=SQLiteConnection)``.
    """

    dialect = SQLITE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.row_factory = sqlite3.Row

    def atomic(self) -> AbstractContextManager[object]:
        # Every SQLite write runs in the writer's transaction (SelfContained or not).
        return nullcontext()


#: Bytes the ``-wal`` file is cut back to after a checkpoint.
WAL_SIZE_LIMIT: Final = 64 * 1024 * 1024


class SQLiteDatabase:
    """A :class:`gateway.store.base.Database` on one SQLite file.

    ``synchronous=FULL`` (the default) fsyncs the WAL on every commit, so an acknowledged write
    survives power loss as well as a process crash; group commit keeps that affordable. Processes
    on the same host share the file; they wake each other through sockets in ``wake/`` beside it.
    The schema is migrated on opening (one process at a time: migrations run on the writer).
    """

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str = "FULL",
        migrate: bool = True,
        connection_class: type[SQLiteConnection] = SQLiteConnection,
    ) -> None:
        """``connection_class``: what every connection is opened as (a subclass may observe the
        statements, as bench/store_statements.py times them)."""
        check_sqlite_settings(synchronous)
        self.path = path
        self._connection_class = connection_class
        self._synchronous = synchronous.upper()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        #: A full disk: writes fail (the writer logs the outage), reads go on.
        self.outage = Outage("database storage")
        relaxed = "NORMAL" if self._synchronous in ("FULL", "EXTRA") else self._synchronous
        self._lock_path = path.with_name(path.name + ".writelock")
        self._writer = GroupCommitWriter(
            self._connect,
            self._lock_path,
            durable_mode=self._synchronous,
            relaxed_mode=relaxed,
            sync_file=path.with_name(path.name + "-wal"),
            outage=self.outage,
        )
        self.notifier = SocketNotifier(path.parent / "wake")
        if migrate:
            self.migrate()

    def _connect(self) -> SQLiteConnection:
        connection = sqlite3.connect(
            self.path,
            isolation_level=None,
            check_same_thread=False,
            timeout=30,
            factory=self._connection_class,
        )
        connection.execute("PRAGMA busy_timeout=30000")
        # WAL is a property of the file, set once. Switching a new file to it needs the file to
        # itself and does not wait for other openers (SQLITE_BUSY at once): the writers' lock
        # file makes processes opening a new data dir together take turns.
        if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            with open(self._lock_path, "a+b") as lock_file:
                fcntl.flock(lock_file, fcntl.LOCK_EX)
                connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={self._synchronous}")
        # The WAL is checkpointed every 1,000 pages (SQLite's default) and then written again
        # from its start, but its file keeps the largest size it ever reached (a checkpoint held
        # back by a long read): truncated to 64 MiB after a checkpoint, it stays bounded
        # (docs/deploy.md#retention). Deleted rows' pages are reused by new ones without it.
        connection.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        return connection

    def migrate(self) -> list[int]:
        """Apply pending schema migrations; the versions applied now."""
        now_ms = int(time.time() * 1000)
        return self._writer.submit(lambda connection: migrate(connection, now_ms))

    def _reader(self) -> SQLiteConnection:
        connection: SQLiteConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
        return connection

    def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` on this thread's reader; several statements share one snapshot."""
        connection = self._reader()
        connection.execute("BEGIN")
        try:
            return work(connection)
        finally:
            connection.execute("COMMIT")

    def write(self, work: Callable[[Connection], T], *, durable: bool = True) -> T:
        # Every job runs in the writer's transaction: on SQLite that costs nothing extra.
        return self._writer.submit(work, durable)

    def ping(self) -> bool:
        try:
            return self.read(lambda c: c.execute("SELECT 1 AS one").fetchone()["one"] == 1)
        except sqlite3.Error:
            return False

    def close(self) -> None:
        self.notifier.close()
        self._writer.close()
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
