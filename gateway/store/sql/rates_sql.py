"""Live figures kept in the database so that every replica shows the same (migration 7):
pushes per minute by outcome (``minute_rates``) and each subscription's push health
(``subscription_health``).

Written in the transaction that settles a batch of pushes, so a figure never counts a push the
database does not have; one upsert of the batch's minutes and outcomes and one of its
subscriptions, not one per push (nor per subscription: each statement costs the driver's Python
and the server's planning). Per-minute counts older than :data:`KEEP_MINUTES` are dropped by
the retention pass (:func:`forget_minutes`), not by each settle: they only age a minute at a
time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gateway.store.sql.connection import Connection, insert_rows

KEEP_MINUTES = 120
#: Names of the per-minute counts.
PUSH_OK = "push_ok"
PUSH_FAILED = "push_failed"


@dataclass(frozen=True, slots=True)
class PushOutcome:
    """One settled push attempt, as the figures need it."""

    topic_name: str
    subscription_name: str
    at_ms: int
    succeeded: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Health:
    last_success_at: int | None
    last_failure_at: int | None
    failures_in_row: int
    last_error: str | None


def record(conn: Connection, outcomes: Sequence[PushOutcome]) -> None:
    if not outcomes:
        return
    _count_minutes(conn, outcomes)
    _update_health(conn, health_changes(outcomes))


def _count_minutes(conn: Connection, outcomes: Sequence[PushOutcome]) -> None:
    counts = Counter((o.at_ms // 60_000, PUSH_OK if o.succeeded else PUSH_FAILED) for o in outcomes)
    insert_rows(
        conn,
        "minute_rates (minute, name, count)",
        [(minute, name, count) for (minute, name), count in sorted(counts.items())],
        on_conflict="ON CONFLICT (minute, name) DO UPDATE"
        " SET count = minute_rates.count + excluded.count",
    )


def forget_minutes(conn: Connection, now_ms: int) -> int:
    """Drop the per-minute counts more than :data:`KEEP_MINUTES` before ``now_ms``'s minute;
    how many rows went."""
    cutoff = now_ms // 60_000 - KEEP_MINUTES
    return conn.execute("DELETE FROM minute_rates WHERE minute < ?", (cutoff,)).rowcount


@dataclass(frozen=True, slots=True)
class HealthChange:
    """What a batch says of one subscription: its last success and, after that (or in the
    whole batch if none), how many failures, the last one's time and error."""

    topic_name: str
    subscription_name: str
    success_at: int | None
    failure_at: int | None
    failures: int
    error: str | None


def health_changes(outcomes: Iterable[PushOutcome]) -> list[HealthChange]:
    """Each subscription's change in a batch, by (topic, subscription): the order the rows are
    written, and so locked, in every transaction alike."""
    mine: dict[tuple[str, str], list[PushOutcome]] = {}
    for o in outcomes:
        mine.setdefault((o.topic_name, o.subscription_name), []).append(o)
    changes = []
    for key, batch in sorted(mine.items()):
        success_at = max((o.at_ms for o in batch if o.succeeded), default=None)
        failures = [
            o for o in batch if not o.succeeded and (success_at is None or o.at_ms > success_at)
        ]
        failure_at = max((o.at_ms for o in failures), default=None)
        error = failures[-1].error if failures else None
        changes.append(HealthChange(*key, success_at, failure_at, len(failures), error))
    return changes


def _update_health(conn: Connection, changes: Sequence[HealthChange]) -> None:
    """Every subscription of the batch in one upsert. Failures in a row: those since this
    batch's last success, plus the stored streak when the batch had none."""
    insert_rows(
        conn,
        "subscription_health (topic_name, subscription_name, last_success_at,"
        " last_failure_at, failures_in_row, last_error)",
        [
            (c.topic_name, c.subscription_name, c.success_at, c.failure_at, c.failures, c.error)
            for c in changes
        ],
        on_conflict="ON CONFLICT (topic_name, subscription_name) DO UPDATE SET"
        " last_success_at ="
        " COALESCE(excluded.last_success_at, subscription_health.last_success_at),"
        " last_failure_at ="
        " COALESCE(excluded.last_failure_at, subscription_health.last_failure_at),"
        " failures_in_row = CASE WHEN excluded.last_success_at IS NULL"
        " THEN subscription_health.failures_in_row + excluded.failures_in_row"
        " ELSE excluded.failures_in_row END,"
        " last_error = COALESCE(excluded.last_error, subscription_health.last_error)",
    )


def minute_counts(conn: Connection, since_minute: int) -> dict[tuple[int, str], int]:
    rows = conn.execute(
        "SELECT minute, name, count FROM minute_rates WHERE minute >= ?", (since_minute,)
    ).fetchall()
    return {(int(r["minute"]), str(r["name"])): int(r["count"]) for r in rows}


def health_of(conn: Connection, topic_name: str, names: Sequence[str]) -> dict[str, Health]:
    if not names:
        return {}
    marks = ", ".join("?" for _ in names)
    rows = conn.execute(
        "SELECT * FROM subscription_health WHERE topic_name = ?"
        f" AND subscription_name IN ({marks})",
        (topic_name, *names),
    ).fetchall()
    return {
        r["subscription_name"]: Health(
            r["last_success_at"], r["last_failure_at"], int(r["failures_in_row"]), r["last_error"]
        )
        for r in rows
    }
