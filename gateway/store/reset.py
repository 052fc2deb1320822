"""Emptying a gateway for the next test: every topic, queue, message, delivery, dead letter and
inbox entry goes; what identifies the gateway stays (the schema, signing keys and certificates,
generated credentials, issued temporary credentials), so clients and receivers configured for
it keep working.

Only development gateways offer it (``POST /dev/reset``, with ``MNS_GATEWAY_INBOX=1``); the
pytest plugin calls it between tests (docs/testing.md#a-clean-gateway-per-test).
"""

from __future__ import annotations

from typing import Final

from gateway.store.sql.connection import Connection

#: Tables that describe the gateway rather than hold its data; and the console's sessions, so
#: that a person watching a development gateway's console stays signed in while tests reset it.
KEPT: Final = frozenset(
    {
        "schema_migrations",
        "signing_keys",
        "shared_settings",
        "temporary_credentials",
        "console_sessions",
    }
)


def reset(conn: Connection) -> list[str]:
    """Delete every row of every data table (whatever tables later migrations add); the
    tables emptied."""
    tables = sorted(row["name"] for row in conn.execute(conn.dialect.list_tables).fetchall())
    emptied = [table for table in tables if table not in KEPT]
    for table in emptied:
        conn.execute(f"DELETE FROM {table}")
    return emptied
