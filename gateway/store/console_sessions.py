"""The console's server-side sessions (statements: :mod:`gateway.store.sql.console_session_sql`).

The browser holds a random session id and nothing else; what the session knows (who signed in,
its CSRF token, the messages flashed to the next page) stays here, shared by every replica. A
session ends when it is signed out (its row is deleted) or when its time is up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from gateway.store.backends.database import Database
from gateway.store.sql import console_session_sql as sql
from gateway.store.sql.connection import Connection


def id_hash(session_id: str) -> str:
    """What the table keys a session by: reading the table gives nobody a session."""
    return hashlib.sha256(session_id.encode()).hexdigest()


class ConsoleSessions:
    """Sessions in ``database`` at ``clock``'s time. Every ``purge_every``-th save also drops
    the sessions that have ended and keeps at most ``max_sessions`` rows."""

    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        max_sessions: int = 10_000,
        purge_every: int = 50,
    ) -> None:
        self.database = database
        self.clock = clock
        self.max_sessions = max_sessions
        self.purge_every = purge_every
        self._saved = 0

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def load(self, session_id: str) -> str | None:
        """The session's data as saved, or ``None`` when it does not exist or has ended."""
        now = self._now_ms()
        return self.database.read(lambda conn: sql.load(conn, id_hash(session_id), now))

    def save(self, session_id: str, document: str, lifetime: float, *, signed_in: bool) -> None:
        """Create the session, ending ``lifetime`` seconds from now, or change its data (its
        end stays where it was). ``signed_in`` sessions are the last to be purged. The data is
        the web layer's own serialization: Flask's keeps what plain JSON would lose (a flashed
        message's markup)."""
        now = self._now_ms()
        # Unlocked on purpose: a lost increment only moves the next purge by one save.
        self._saved += 1
        purge = self._saved % self.purge_every == 0

        def work(conn: Connection) -> None:
            if purge:
                sql.purge(conn, now, self.max_sessions)
            sql.save(conn, id_hash(session_id), document, signed_in, now + int(lifetime * 1000))

        self.database.write(work, durable=False)

    def end(self, session_id: str) -> None:
        self.database.write(lambda conn: sql.delete(conn, id_hash(session_id)))
