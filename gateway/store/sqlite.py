"""The embedded SQLite database: WAL, one group-commit writer, a reader connection per thread."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gateway.store.schema import SCHEMA_VERSION, TABLES
from gateway.store.writer import GroupCommitWriter

T = TypeVar("T")

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


class SQLiteDatabase:
    """A :class:`gateway.store.base.Database` on one SQLite file.

    ``synchronous=FULL`` (the default) fsyncs the WAL on every commit, so an acknowledged write
    survives power loss as well as a process crash; group commit keeps that affordable.
    """

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}")
        self.path = path
        self._synchronous = synchronous.upper()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        relaxed = "NORMAL" if self._synchronous in ("FULL", "EXTRA") else self._synchronous
        self._writer = GroupCommitWriter(
            self._connect,
            path.with_name(path.name + ".writelock"),
            durable_mode=self._synchronous,
            relaxed_mode=relaxed,
            sync_file=path.with_name(path.name + "-wal"),
        )
        self._writer.submit(self._migrate)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30
        )
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={self._synchronous}")
        connection.execute("PRAGMA busy_timeout=30000")
        return connection

    @staticmethod
    def _migrate(connection: sqlite3.Connection) -> None:
        for statement in TABLES:
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _reader(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
        return connection

    def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on this thread's reader; several statements share one snapshot."""
        connection = self._reader()
        connection.execute("BEGIN")
        try:
            return work(connection)
        finally:
            connection.execute("COMMIT")

    def write(self, work: Callable[[sqlite3.Connection], T], *, durable: bool = True) -> T:
        return self._writer.submit(work, durable)

    def ping(self) -> bool:
        try:
            return self.read(lambda c: c.execute("SELECT 1").fetchone()[0] == 1)
        except sqlite3.Error:
            return False

    def close(self) -> None:
        self._writer.close()
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
