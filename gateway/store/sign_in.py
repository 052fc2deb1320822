"""The console's sign-in limit, kept in the database (statements:
:mod:`gateway.store.sql.sign_in_sql`): every replica sharing the database counts the same
attempts, so running N replicas does not give an attacker N times the tries."""

from __future__ import annotations

from collections.abc import Callable

from gateway.store.backends.database import Database
from gateway.store.sql import sign_in_sql as sql
from gateway.store.sql.connection import Connection


class SignInAttempts:
    """At most ``limit`` failed sign-ins per client address in ``window`` seconds, counted in
    ``database`` at ``clock``'s time. Every ``purge_every``-th attempt also drops the rows whose
    window has passed and keeps at most ``max_clients`` rows."""

    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        limit: int = 5,
        window: float = 300.0,
        max_clients: int = 10_000,
        purge_every: int = 50,
    ) -> None:
        self.database = database
        self.clock = clock
        self.limit = limit
        self.window_ms = int(window * 1000)
        self.max_clients = max_clients
        self.purge_every = purge_every
        self._taken = 0

    def attempt(self, client: str) -> float:
        """Count an attempt of ``client`` before its key pair is checked: 0 when it may make
        it, else the seconds it must wait (and nothing is counted)."""
        now = int(self.clock() * 1000)
        # Unlocked on purpose: a lost increment only moves the next purge by one attempt.
        self._taken += 1
        purge = self._taken % self.purge_every == 0

        def work(conn: Connection) -> int:
            if purge:
                sql.purge(conn, now, self.window_ms, self.max_clients)
            return sql.take_attempt(conn, client, now, self.limit, self.window_ms)

        return self.database.write(work, durable=False) / 1000

    def succeeded(self, client: str) -> None:
        """The attempt was a good sign-in: ``client`` starts again from nothing."""
        self.database.write(lambda conn: sql.forget(conn, client), durable=False)
