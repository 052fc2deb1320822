"""What replicas sharing one database must agree on, kept in it: named settings (the generated
access key pair, the signing key in use) and the push-signing keys with their certificates.

With SQLite on one host the same things live as files in the data dir
(:mod:`gateway.auth.generated_keys`, :class:`gateway.pushing.keyring.FileKeyStorage`); with
PostgreSQL
every replica reads them from here, so a key rotated on one is used by all and every certificate
is served by each.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from gateway.store.backends.database import Database
from gateway.store.sql.connection import Connection


def _setting(conn: Connection, name: str) -> str | None:
    row = conn.execute("SELECT value FROM shared_settings WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row["value"])


def _upsert(conn: Connection, name: str, value: str) -> None:
    conn.execute(
        "INSERT INTO shared_settings (name, value) VALUES (?, ?)"
        " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        (name, value),
    )


class SharedSettings:
    def __init__(self, database: Database) -> None:
        self.database = database

    def get(self, name: str) -> str | None:
        return self.database.read(lambda c: _setting(c, name))

    def get_or_create(self, name: str, candidate: str) -> str:
        """The value of ``name``, set to ``candidate`` if it had none: whoever sets it first
        wins and every later caller gets that value."""

        def work(conn: Connection) -> str:
            conn.execute(
                "INSERT INTO shared_settings (name, value) VALUES (?, ?)"
                " ON CONFLICT (name) DO NOTHING",
                (name, candidate),
            )
            value = _setting(conn, name)
            assert value is not None
            return value

        return self.database.write(work)

    def update(self, name: str, change: Callable[[str | None], str]) -> str:
        """Set ``name`` to ``change(current value)`` in one transaction, so two replicas changing
        it at once do not lose either change; the new value."""

        def work(conn: Connection) -> str:
            value = change(_setting(conn, name))
            _upsert(conn, name, value)
            return value

        return self.database.write(work)

    def put(self, name: str, value: str) -> None:
        self.database.write(lambda c: _upsert(c, name, value))


class DatabaseKeyStorage:
    """A :class:`~gateway.pushing.keyring.KeyStorage` in the database."""

    CURRENT = "current_signing_key"

    def __init__(self, database: Database) -> None:
        self.database = database
        self.settings = SharedSettings(database)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        # Nothing to hold: keys are inserted whole, and the pointer is set if-none or outright.
        yield

    def current_id(self) -> str | None:
        return self.settings.get(self.CURRENT)

    def _column(self, key_id: str, column: str) -> bytes | None:
        row = self.database.read(
            lambda c: c.execute(
                f"SELECT {column} AS pem FROM signing_keys WHERE key_id = ?", (key_id,)
            ).fetchone()
        )
        return None if row is None or row["pem"] is None else str(row["pem"]).encode("ascii")

    def private_key(self, key_id: str) -> bytes | None:
        return self._column(key_id, "private_key")

    def certificate(self, key_id: str) -> bytes | None:
        return self._column(key_id, "certificate")

    def save(self, key_id: str, private_key: bytes | None, certificate: bytes) -> None:
        now_ms = int(time.time() * 1000)
        private = None if private_key is None else private_key.decode("ascii")
        self.database.write(
            lambda c: c.execute(
                "INSERT INTO signing_keys (key_id, private_key, certificate, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (key_id) DO UPDATE SET"
                " private_key = COALESCE(signing_keys.private_key, excluded.private_key),"
                " certificate = excluded.certificate",
                (key_id, private, certificate.decode("ascii"), now_ms),
            )
        )

    def make_current(self, key_id: str, *, if_none: bool) -> str:
        if if_none:
            return self.settings.get_or_create(self.CURRENT, key_id)
        self.settings.put(self.CURRENT, key_id)
        return key_id
