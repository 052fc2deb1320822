"""Live figures kept in the database so that every replica shows the same (migration 7):
pushes per minute by outcome (``minute_rates``) and each subscription's push health
(``subscription_health``).

Written in the transaction that settles a batch of pushes, so a figure never counts a push the
database does not have; one upsert per (minute, outcome) and per subscription in the batch, not
per push. Rows older than :data:`KEEP_MINUTES` are dropped as new minutes are written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gateway.store.sql.connection import Connection

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
    for outcome in _last_per_subscription(outcomes):
        _update_health(conn, outcome, outcomes)


def _count_minutes(conn: Connection, outcomes: Sequence[PushOutcome]) -> None:
    counts = Counter((o.at_ms // 60_000, PUSH_OK if o.succeeded else PUSH_FAILED) for o in outcomes)
    for (minute, name), count in sorted(counts.items()):
        conn.execute(
            "INSERT INTO minute_rates (minute, name, count) VALUES (?, ?, ?)"
            " ON CONFLICT (minute, name) DO UPDATE SET count = minute_rates.count + excluded.count",
            (minute, name, count),
        )
    newest = max(minute for minute, _ in counts)
    conn.execute("DELETE FROM minute_rates WHERE minute < ?", (newest - KEEP_MINUTES,))


def _last_per_subscription(outcomes: Iterable[PushOutcome]) -> list[PushOutcome]:
    last: dict[tuple[str, str], PushOutcome] = {}
    for o in outcomes:
        last[(o.topic_name, o.subscription_name)] = o
    return list(last.values())


def _update_health(conn: Connection, last: PushOutcome, batch: Sequence[PushOutcome]) -> None:
    """Failures in a row: those since this batch's last success, plus the stored streak when
    the batch had none."""
    mine = [
        o
        for o in batch
        if (o.topic_name, o.subscription_name) == (last.topic_name, last.subscription_name)
    ]
    successes = [o for o in mine if o.succeeded]
    success_at = max((o.at_ms for o in successes), default=None)
    failures = [o for o in mine if not o.succeeded and (success_at is None or o.at_ms > success_at)]
    failure_at = max((o.at_ms for o in failures), default=None)
    error = failures[-1].error if failures else None
    key = (last.topic_name, last.subscription_name)
    conn.execute(
        "INSERT INTO subscription_health (topic_name, subscription_name, last_success_at,"
        " last_failure_at, failures_in_row, last_error) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (topic_name, subscription_name) DO UPDATE SET"
        " last_success_at ="
        " COALESCE(excluded.last_success_at, subscription_health.last_success_at),"
        " last_failure_at ="
        " COALESCE(excluded.last_failure_at, subscription_health.last_failure_at),"
        " failures_in_row = CASE WHEN excluded.last_success_at IS NULL"
        " THEN subscription_health.failures_in_row + excluded.failures_in_row"
        " ELSE excluded.failures_in_row END,"
        " last_error = COALESCE(excluded.last_error, subscription_health.last_error)",
        (*key, success_at, failure_at, len(failures), error),
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
