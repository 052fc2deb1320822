"""The pool's liveness check (gateway/store/backends/liveness.py): a round trip only for a
connection not given back lately; and on a real PostgreSQL, a connection that died in the pool
is replaced unnoticed once its window has passed, or fails one transaction as an outage inside
it."""

from __future__ import annotations

import gc
import weakref
from typing import Any, cast

import psycopg
import pytest

from gateway.errors import StoreUnavailableError
from gateway.store.backends.liveness import Liveness
from gateway.store.backends.postgres import PostgresDatabase
from tests.postgres import PostgresServer


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Connection:
    """Stands in for a psycopg connection: all the check needs is an object to weakly key."""


def probing() -> tuple[Liveness, Clock, list[object]]:
    clock, probed = Clock(), []
    liveness = Liveness(bypass_s=0.5, clock=clock, probe=probed.append)
    return liveness, clock, probed


def as_pg(connection: Connection) -> psycopg.Connection[Any]:
    return cast("psycopg.Connection[Any]", connection)


def test_a_new_connection_and_one_idle_past_the_window_are_probed() -> None:
    liveness, clock, probed = probing()
    new, idle = Connection(), Connection()
    liveness.check(as_pg(new))
    liveness.returned(as_pg(idle))
    clock.now += 0.5
    liveness.check(as_pg(idle))
    assert probed == [new, idle]


def test_a_connection_given_back_within_the_window_is_handed_out_unprobed_once() -> None:
    liveness, clock, probed = probing()
    connection = Connection()
    liveness.returned(as_pg(connection))
    clock.now += 0.49
    liveness.check(as_pg(connection))
    assert probed == []
    # Handed out and not given back (its transaction still running, or it broke): the next
    # check of it asks the server.
    liveness.check(as_pg(connection))
    assert probed == [connection]


def test_a_connection_the_pool_dropped_is_not_kept_alive_by_the_check() -> None:
    liveness, _, _ = probing()
    connection = Connection()
    liveness.returned(as_pg(connection))
    gone = weakref.ref(connection)
    del connection
    gc.collect()
    assert gone() is None


def _kill_backends(server: PostgresServer, url: str) -> int:
    """Terminate every server process serving ``url``'s database but this one; how many."""
    database = url.rsplit("/", 1)[-1]
    with psycopg.connect(server.url(), autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n"
            " FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchone()
    return int(killed[0]) if killed else 0


def _select_one(database: PostgresDatabase) -> int:
    return int(database.read(lambda c: c.execute("SELECT 1 AS one").fetchone()["one"]))


@pytest.mark.parametrize("past_the_window", [True, False])
def test_a_connection_that_died_in_the_pool(
    postgres: PostgresServer, past_the_window: bool
) -> None:
    url = postgres.new_database()
    clock = Clock()
    database = PostgresDatabase(url, pool_size=1, liveness=Liveness(clock=clock))
    try:
        assert _select_one(database) == 1
        assert _kill_backends(postgres, url) >= 1
        if past_the_window:
            clock.now += 0.5
            assert _select_one(database) == 1  # probed, found dead, replaced: unnoticed
        else:
            with pytest.raises(StoreUnavailableError):
                _select_one(database)
            assert _select_one(database) == 1  # the pool replaced it
    finally:
        database.close()
