"""The console's sessions, kept in the database so that every replica knows them and signing
out ends them everywhere (docs/console.md#signing-in).

A row per session: the SHA-256 of its id (the cookie carries the id, a random token; a copy of
the table does not give anyone a session), its data as JSON, whether somebody signed in to it,
and when it ends (epoch ms).
"""

from __future__ import annotations

from gateway.store.sql.connection import Connection


def load(conn: Connection, id_hash: str, now_ms: int) -> str | None:
    """The session's data (JSON), or ``None`` when there is no such session or it has ended."""
    row = conn.execute(
        "SELECT data FROM console_sessions WHERE id_hash = ? AND expires_at > ?",
        (id_hash, now_ms),
    ).fetchone()
    return None if row is None else str(row["data"])


def save(conn: Connection, id_hash: str, data: str, signed_in: bool, expires_at: int) -> None:
    conn.execute(
        "INSERT INTO console_sessions (id_hash, data, signed_in, expires_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id_hash) DO UPDATE SET data = excluded.data",
        (id_hash, data, int(signed_in), expires_at),
    )


def delete(conn: Connection, id_hash: str) -> None:
    conn.execute("DELETE FROM console_sessions WHERE id_hash = ?", (id_hash,))


def purge(conn: Connection, now_ms: int, max_sessions: int) -> None:
    """Drop the sessions that have ended; past ``max_sessions`` rows, the ones ending first
    too, those nobody signed in to before any other: a flood of visitors to the sign-in page
    cannot grow the table without bound, nor push out the sessions of people signed in."""
    conn.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (now_ms,))
    count = conn.execute("SELECT COUNT(*) AS n FROM console_sessions").fetchone()["n"]
    if int(count) > max_sessions:
        conn.execute(
            "DELETE FROM console_sessions WHERE id_hash IN (SELECT id_hash FROM"
            " console_sessions ORDER BY signed_in, expires_at, id_hash LIMIT ?)",
            (int(count) - max_sessions,),
        )
