"""A subscription's Standard Webhooks secrets (docs/delivery.md#standard-webhooks-signatures):
read for the switch, written by it. The claim reads them with the job (:mod:`delivery_sql`)."""

from __future__ import annotations

from gateway.delivery.standard_webhooks import WebhookSecrets
from gateway.errors.mns import MNSError
from gateway.store.sql.connection import Connection, Row

#: The columns a job's row carries them in (``s`` is the subscription).
SECRET_COLUMNS = "s.webhook_secret, s.webhook_previous_secret, s.webhook_previous_until"


def secrets_of(row: Row) -> WebhookSecrets | None:
    """A job's or a subscription's secrets; ``None`` when they are off."""
    if not row["webhook_secret"]:
        return None
    return WebhookSecrets(
        current=row["webhook_secret"],
        previous=row["webhook_previous_secret"],
        previous_until_ms=row["webhook_previous_until"],
    )


def get_secrets(conn: Connection, topic_name: str, name: str) -> WebhookSecrets | None:
    """``SubscriptionNotExist`` when there is no such subscription."""
    row = conn.execute(
        f"SELECT {SECRET_COLUMNS} FROM subscriptions s WHERE s.topic_name = ? AND s.name = ?",
        (topic_name, name),
    ).fetchone()
    if row is None:
        raise MNSError("SubscriptionNotExist")
    return secrets_of(row)


def set_secrets(
    conn: Connection, topic_name: str, name: str, secrets: WebhookSecrets | None
) -> None:
    """Replace them (``None``: off, every secret forgotten)."""
    conn.execute(
        "UPDATE subscriptions SET webhook_secret = ?, webhook_previous_secret = ?,"
        " webhook_previous_until = ? WHERE topic_name = ? AND name = ?",
        (
            secrets.current if secrets else None,
            secrets.previous if secrets else None,
            secrets.previous_until_ms if secrets else None,
            topic_name,
            name,
        ),
    )


def topic_states(conn: Connection, topic_name: str) -> list[Row]:
    """Each subscription of the topic: ``name``, ``enabled`` and ``previous_until``, without
    reading a secret (for pages that show only whether they are on)."""
    return conn.execute(
        "SELECT name, CASE WHEN webhook_secret IS NULL THEN 0 ELSE 1 END AS enabled,"
        " webhook_previous_until AS previous_until FROM subscriptions WHERE topic_name = ?",
        (topic_name,),
    ).fetchall()
