"""Which backend a database URL names, whether it can be used as configured (the SQLite
version and settings), and whether a PostgreSQL server answers, checked before anything is
built on it. ``mns-gateway serve`` asks in its arbiter, before gevent patches the workers, so
this module imports nothing that creates locks or threads (nor psycopg, but in a function).

A pool that cannot connect retries in the background and logs a warning per attempt, and the
first query waits out the pool's timeout (30 s) before it fails; one plain connection first
turns a server that is not there into one line at once. ``mns-gateway serve`` asks it from a
forked child (:mod:`gateway.serving.preflight`): the arbiter itself must not load psycopg.
"""

from __future__ import annotations

import sqlite3
from typing import Final
from urllib.parse import urlsplit

from gateway.errors.commands import (
    DatabaseConfigError,
    DatabaseError,
    DatabaseVersionError,
    UnsupportedDatabaseError,
)

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
#: Claims are ``UPDATE … RETURNING`` (SQLite 3.35) and shared settings ``ON CONFLICT … DO UPDATE``.
MIN_SQLITE_VERSION = (3, 35, 0)
POSTGRESQL_SCHEMES: Final = ("postgresql", "postgres")
#: Seconds a first connection may take before the server counts as unreachable.
CONNECT_TIMEOUT: Final = 10


def backend_of(url: str) -> str:
    """``"sqlite"`` for an empty URL (the data dir's file), ``"postgresql"``, or raise."""
    if not url:
        return "sqlite"
    scheme = urlsplit(url).scheme
    if scheme in POSTGRESQL_SCHEMES:
        return "postgresql"
    raise UnsupportedDatabaseError(
        f"MNS_GATEWAY_DATABASE_URL: unsupported scheme {scheme!r} (use postgresql://...)"
    )


def without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def check_reachable(url: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Connect once and let go; raise :class:`DatabaseError` (one line) when that fails."""
    import psycopg  # only for PostgreSQL, and only here when asked

    try:
        psycopg.connect(url, connect_timeout=max(1, round(timeout))).close()
    except psycopg.Error as error:
        lines = str(error).strip().splitlines()
        reason = lines[0] if lines else type(error).__name__
        raise DatabaseError(
            f"cannot reach the database at {without_password(url)}: {reason}"
        ) from error


def check_sqlite_version(version: tuple[int, int, int] = sqlite3.sqlite_version_info) -> None:
    if version < MIN_SQLITE_VERSION:
        found, needed = ".".join(map(str, version)), ".".join(map(str, MIN_SQLITE_VERSION))
        raise DatabaseVersionError(
            f"SQLite {found} is too old: the gateway needs {needed} or later"
        )


def check_sqlite_settings(synchronous: str) -> None:
    """What :class:`SQLiteDatabase` refuses to open with, checked without opening anything."""
    check_sqlite_version()
    if synchronous.upper() not in _SYNCHRONOUS:
        raise DatabaseConfigError(
            f"MNS_GATEWAY_SQLITE_SYNCHRONOUS must be one of {', '.join(_SYNCHRONOUS)},"
            f" not {synchronous!r}"
        )
