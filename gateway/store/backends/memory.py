"""An in-memory :class:`~gateway.store.base.Database` for fast unit tests, in the spirit of
dramatiq's ``StubBroker``: the same statements as the real store, on an in-memory SQLite
database behind one lock. No file, no writer thread, no fsync, no sockets; nothing leaves the
process, so its notifier carries nothing.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from gateway.store.backends.outage import Outage
from gateway.store.backends.sqlite import SQLiteConnection, check_sqlite_version
from gateway.store.notify.notifier import LocalNotifier
from gateway.store.sql.connection import Connection
from gateway.store.sql.migrations import migrate

T = TypeVar("T")


class MemoryDatabase:
    def __init__(self) -> None:
        check_sqlite_version()
        self._connection = sqlite3.connect(
            ":memory:", isolation_level=None, check_same_thread=False, factory=SQLiteConnection
        )
        self._lock = threading.Lock()
        self.notifier = LocalNotifier()
        self.outage = Outage("database")
        self.migrate()

    def migrate(self) -> list[int]:
        now_ms = int(time.time() * 1000)
        return self.write(lambda connection: migrate(connection, now_ms))

    def read(self, work: Callable[[Connection], T]) -> T:
        with self._lock:
            self._connection.execute("BEGIN")
            try:
                return work(self._connection)
            finally:
                self._connection.execute("COMMIT")

    def write(self, work: Callable[[Connection], T], *, durable: bool = True) -> T:
        """Run ``work`` in its own transaction: all of it commits, or (if it raises) none."""
        with self._lock:
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._connection)
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")
            return result

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        self._connection.close()
