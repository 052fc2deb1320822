"""The console's sign-in attempts, counted in the database so every replica enforces one limit
(docs/console.md#signing-in).

One row per client address: the start of its current window (epoch ms) and the attempts counted
in it. A fixed window that opens at a client's first counted attempt: at most ``limit`` attempts
in ``window_ms``, then nothing until the window has passed. A sign-in that succeeds deletes its
row, so what stays counted are the failures (and attempts still being checked).
"""

from __future__ import annotations

from gateway.store.sql.connection import Connection


def wait_ms(window_start: int, attempts: int, now_ms: int, limit: int, window_ms: int) -> int:
    """How long a client with ``attempts`` counted since ``window_start`` must wait before its
    next attempt; 0 when it may make one now. Pure."""
    if window_start + window_ms <= now_ms or attempts < limit:
        return 0
    return window_start + window_ms - now_ms


def take_attempt(conn: Connection, client: str, now_ms: int, limit: int, window_ms: int) -> int:
    """Count one attempt of ``client`` if it may make one: 0 when counted, else the ms it must
    wait (nothing counted). The row is locked while it is read and changed (PostgreSQL;
    SQLite has one writer at a time), so replicas checking at once never let more than
    ``limit`` attempts through between them."""
    conn.execute(
        "INSERT INTO console_sign_in_attempts (client, window_start, attempts) VALUES (?, ?, 0)"
        " ON CONFLICT DO NOTHING",
        (client, now_ms),
    )
    row = conn.execute(
        "SELECT window_start, attempts FROM console_sign_in_attempts"
        f" WHERE client = ?{conn.dialect.lock_row}",
        (client,),
    ).fetchone()
    start, attempts = int(row["window_start"]), int(row["attempts"])
    wait = wait_ms(start, attempts, now_ms, limit, window_ms)
    if wait:
        return wait
    if start + window_ms <= now_ms:  # the window has passed: a new one opens now
        start, attempts = now_ms, 0
    conn.execute(
        "UPDATE console_sign_in_attempts SET window_start = ?, attempts = ? WHERE client = ?",
        (start, attempts + 1, client),
    )
    return 0


def forget(conn: Connection, client: str) -> None:
    conn.execute("DELETE FROM console_sign_in_attempts WHERE client = ?", (client,))


def purge(conn: Connection, now_ms: int, window_ms: int, max_clients: int) -> None:
    """Drop the rows whose window has passed; past ``max_clients`` rows, the oldest windows too,
    so a flood of addresses cannot grow the table without bound."""
    conn.execute(
        "DELETE FROM console_sign_in_attempts WHERE window_start <= ?", (now_ms - window_ms,)
    )
    count = conn.execute("SELECT COUNT(*) AS n FROM console_sign_in_attempts").fetchone()["n"]
    if int(count) > max_clients:
        conn.execute(
            "DELETE FROM console_sign_in_attempts WHERE client IN (SELECT client FROM"
            " console_sign_in_attempts ORDER BY window_start, client LIMIT ?)",
            (int(count) - max_clients,),
        )
