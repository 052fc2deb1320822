"""Issued temporary credentials, in the database every replica reads, and the key their
security tokens are signed with (:mod:`gateway.auth.temporary_credentials`).

Expired pairs are deleted whenever a pair is issued, in the same transaction, so the table holds
no more than the pairs still valid plus those that expired since the last issue.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable

from gateway.auth.temporary_credentials import TemporaryCredential, mint
from gateway.store.backends.database import Database
from gateway.store.shared import SharedSettings
from gateway.store.sql.connection import Connection

#: The shared setting holding the HMAC key of security tokens (base64).
TOKEN_KEY_NAME = "security_token_key"


def _purge(conn: Connection, now: int) -> int:
    return conn.execute("DELETE FROM temporary_credentials WHERE expires_at <= ?", (now,)).rowcount


class TemporaryCredentialStore:
    def __init__(self, database: Database, clock: Callable[[], float]) -> None:
        self.database = database
        self.clock = clock
        self.settings = SharedSettings(database)

    def token_key(self) -> bytes:
        """The key security tokens are signed with, made by whichever process needs it first."""
        stored = self.settings.get(TOKEN_KEY_NAME) or self.settings.get_or_create(
            TOKEN_KEY_NAME, base64.b64encode(secrets.token_bytes(32)).decode("ascii")
        )
        return base64.b64decode(stored)

    def issue(self, ttl: int) -> TemporaryCredential:
        """A new pair valid for ``ttl`` seconds (1 to 43200), kept; expired ones are deleted."""
        now = self.clock()
        credential = mint(self.token_key(), now, ttl)

        def work(conn: Connection) -> None:
            _purge(conn, int(now))
            conn.execute(
                "INSERT INTO temporary_credentials"
                " (access_key_id, access_key_secret, expires_at, created_at) VALUES (?, ?, ?, ?)",
                (
                    credential.access_key_id,
                    credential.access_key_secret,
                    credential.expires_at,
                    int(now),
                ),
            )

        self.database.write(work)
        return credential

    def secret(self, access_key_id: str) -> str | None:
        """The secret of a pair that has not expired, ``None`` otherwise."""
        row = self.database.read(
            lambda c: c.execute(
                "SELECT access_key_secret FROM temporary_credentials"
                " WHERE access_key_id = ? AND expires_at > ?",
                (access_key_id, int(self.clock())),
            ).fetchone()
        )
        return None if row is None else str(row["access_key_secret"])

    def purge_expired(self) -> int:
        """Delete the pairs that have expired; how many there were."""
        return self.database.write(lambda c: _purge(c, int(self.clock())))
