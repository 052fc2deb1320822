"""Opening the store the settings name: the composition root's store-opening part.

``mns-gateway`` commands that only work on the store (``queues``, ``subscriptions``,
``dead-letters``, ``keys``, ``credentials``, ``inbox``, ``migrate``) open it through this module
alone, so they start without importing the web app, the console and the control plane
(:mod:`gateway.composition` builds those, on top of this, for ``serve`` and ``worker``).
"""

from __future__ import annotations

import sqlite3

from gateway.breaker.state import BreakerPolicy
from gateway.config.settings import Settings
from gateway.errors.commands import DatabaseError
from gateway.store.backends.database import Database
from gateway.store.backends.reach import backend_of, check_reachable, without_password
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from gateway.store.shared import SharedSettings
from gateway.store.sql.migrations import latest_version


def open_database(settings: Settings, *, migrate: bool = True) -> Database:
    """The database ``MNS_GATEWAY_DATABASE_URL`` names: SQLite in the data dir when it is empty,
    PostgreSQL for ``postgresql://…``. Opening it brings its schema up to date, unless
    ``migrate`` is false (``mns-gateway migrate`` then does it and reports what it applied)."""
    url = settings.database_url
    if backend_of(url) == "sqlite":
        try:
            return SQLiteDatabase(
                settings.database_path, synchronous=settings.sqlite_synchronous, migrate=migrate
            )
        except (OSError, sqlite3.Error) as error:
            where = settings.database_path
            raise DatabaseError(f"cannot open the SQLite database {where}: {error}") from error
    import psycopg  # only when asked for

    from gateway.store.backends.postgres import PostgresDatabase

    check_reachable(url)  # at once, in one line, rather than after the pool's 30 s of retries
    try:
        return PostgresDatabase(
            url,
            migrate=migrate,
            pool_size=settings.database_pool_size,
            timeout=settings.database_timeout,
        )
    except psycopg.Error as error:
        lines = str(error).strip().splitlines()
        reason = lines[0] if lines else type(error).__name__
        raise DatabaseError(
            f"cannot use the database at {without_password(url)}: {reason}"
        ) from error


def open_store(settings: Settings) -> Store:
    """The store every process and command works on, as the settings ask for it."""
    return compose_store(
        open_database(settings),
        max_waiters=settings.waiter_limit,
        max_queues=settings.max_queues,
        recheck_seconds=settings.long_poll_recheck,
        region=settings.region,
        account_id=settings.account_id,
        history_retention=settings.history_retention,
        breaker=breaker_policy(settings),
        events_topic=settings.breaker_events_topic,
    )


def breaker_policy(settings: Settings) -> BreakerPolicy:
    """The push endpoints' circuit breaker the settings ask for, its times scaled as the retry
    schedules are (docs/delivery.md#endpoint-health)."""
    return BreakerPolicy(
        enabled=settings.breaker,
        failure_rate=settings.breaker_failure_rate,
        min_attempts=settings.breaker_min_attempts,
        window_ms=int(settings.breaker_window * 1000),
        cool_down_ms=int(settings.breaker_cool_down * 1000),
        max_cool_down_ms=int(
            max(settings.breaker_max_cool_down, settings.breaker_cool_down) * 1000
        ),
    ).scaled(settings.retry_scale)


def shared_settings(settings: Settings, database: Database) -> SharedSettings | None:
    """Where replicas keep what they share: the database when it is shared (PostgreSQL), else
    ``None`` (SQLite: one host, the data dir's files)."""
    return SharedSettings(database) if settings.database_url else None


def latest_schema_version() -> int:
    """The schema version this gateway's migrations bring a database to."""
    return latest_version()
