"""Subscriptions' Standard Webhooks secrets in the store, on each backend: on, off and rotate,
the day a rotated-out secret keeps signing by the store's clock, the claim handing them to the
worker, nothing of them in listings; and migration 20 on a database made before it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.delivery.standard_webhooks import ROTATION_OVERLAP_MS, secret_key
from gateway.errors.mns import MNSError
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from gateway.store.sql.migrations import MIGRATIONS, STANDARD_WEBHOOKS
from gateway.store.standard_webhooks import StandardWebhookStore
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.postgres import PostgresServer
from tests.support.clock import Clock

CLOCK_START = 1_700_000_000.0


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> Store:
    store = compose_store(open_database(), clock=clock)
    store.topics.create_topic("orders", 65536, False)
    store.topics.subscribe(Subscription("orders", "billing", "http://127.0.0.1:9/hook"))
    return store


def publish(store: Store, n: int) -> None:
    now = store.now_ms()
    message = TopicMessage(f"M{n}", "orders", "body", "X", now, None)
    store.topics.publish(message)


def test_on_off_and_rotate_with_a_day_of_overlap(store: Store, clock: Clock) -> None:
    secrets = store.standard_webhooks
    assert secrets.state("orders", "billing").enabled is False
    first, state = secrets.turn_on("orders", "billing")
    assert len(secret_key(first)) == 32 and state.enabled and state.previous_until_ms is None
    assert secrets.turn_on("orders", "billing")[0] == first  # on again: the same secret, shown
    second, state = secrets.rotate("orders", "billing")
    assert second != first
    assert state.previous_until_ms == store.now_ms() + ROTATION_OVERLAP_MS
    publish(store, 1)
    (job,) = store.deliveries.claim("w", 30, 10, frozenset())
    assert job.standard_webhooks is not None
    assert job.standard_webhooks.signing(store.now_ms()) == (second, first)
    clock.advance(ROTATION_OVERLAP_MS / 1000)
    assert job.standard_webhooks.signing(store.now_ms()) == (second,)
    assert secrets.state("orders", "billing").previous_until_ms is None
    assert secrets.turn_off("orders", "billing").enabled is False
    clock.advance(3600)  # the first lease lapses: the delivery is claimed again, unsigned
    (again,) = store.deliveries.claim("w", 30, 10, frozenset())
    assert again.delivery_id == job.delivery_id and again.standard_webhooks is None


def test_a_rotation_needs_them_on_and_a_subscription(store: Store) -> None:
    with pytest.raises(MNSError, match="turn them on first"):
        store.standard_webhooks.rotate("orders", "billing")
    for switch in (
        store.standard_webhooks.turn_on,
        store.standard_webhooks.turn_off,
        store.standard_webhooks.rotate,
        store.standard_webhooks.state,
    ):
        with pytest.raises(MNSError) as refused:
            switch("orders", "nobody")
        assert refused.value.code == "SubscriptionNotExist"


def test_the_secret_is_in_no_listing_and_goes_with_the_subscription(store: Store) -> None:
    secret, _ = store.standard_webhooks.turn_on("orders", "billing")
    listed = store.topics.list_subscriptions("orders", "", "", 10).items
    got = store.topics.get_subscription("orders", "billing")
    assert secret not in repr((listed, got))
    store.topics.unsubscribe("orders", "billing")
    store.topics.subscribe(Subscription("orders", "billing", "http://127.0.0.1:9/hook"))
    assert store.standard_webhooks.state("orders", "billing").enabled is False


def test_random_bytes_and_clock_are_injected(open_database: OpenDatabase, clock: Clock) -> None:
    store = compose_store(open_database(), clock=clock)
    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "s", "http://127.0.0.1:9/"))
    switch = StandardWebhookStore(store.database, clock, random_bytes=lambda n: b"\x01" * n)
    secret, _ = switch.turn_on("t", "s")
    assert secret == "whsec_" + "AQEB" * 10 + "AQE="


def _before_standard_webhooks(dialect: str) -> list[str]:
    """What the migrations before 20 ran on ``dialect`` (each runs on the dialects it names)."""
    statements = []
    for migration in MIGRATIONS[: MIGRATIONS.index(STANDARD_WEBHOOKS)]:
        if dialect in migration.dialects:
            statements += migration.statements
        statements.append(
            "INSERT INTO schema_migrations (version, description, applied_at)"
            f" VALUES ({migration.version}, 'before', 0)"
        )
    return statements


LEDGER = (
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
    " applied_at BIGINT NOT NULL)"
)
OLD_SUBSCRIPTION = (
    "INSERT INTO topics VALUES ('orders', 1, 1, 65536, 0)",
    "INSERT INTO subscriptions (topic_name, name, endpoint, notify_strategy,"
    " notify_content_format, route, create_time, last_modify_time)"
    " VALUES ('orders', 'billing', 'http://127.0.0.1:9/', 'BACKOFF_RETRY', 'XML',"
    " 'http://127.0.0.1:9', 1, 1)",
)


def _check_migrated(store: Store) -> None:
    assert store.topics.get_subscription("orders", "billing").endpoint == "http://127.0.0.1:9/"
    assert store.standard_webhooks.state("orders", "billing").enabled is False
    secret, _ = store.standard_webhooks.turn_on("orders", "billing")
    assert secret.startswith("whsec_")


def test_migration_20_on_an_existing_sqlite_database(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "db.sqlite3"
    with sqlite3.connect(path) as connection:
        for statement in [LEDGER, *_before_standard_webhooks("sqlite"), *OLD_SUBSCRIPTION]:
            connection.execute(statement)
    database = SQLiteDatabase(path)
    try:
        _check_migrated(compose_store(database, clock=clock))
    finally:
        database.close()


def test_migration_20_on_an_existing_postgresql_database(
    postgres: PostgresServer, clock: Clock
) -> None:
    import psycopg

    from gateway.store.backends.postgres import PostgresDatabase

    url = postgres.new_database()
    with psycopg.connect(url, autocommit=True) as connection:
        for statement in [LEDGER, *_before_standard_webhooks("postgresql"), *OLD_SUBSCRIPTION]:
            connection.execute(statement.replace("?", "%s"))
    database = PostgresDatabase(url, pool_size=2)
    try:
        assert database.migrate() == []  # opening migrated it already
        _check_migrated(compose_store(database, clock=clock))
    finally:
        database.close()
