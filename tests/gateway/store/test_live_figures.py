"""The live figures a settle writes (gateway/store/sql/rates_sql.py): pushes per minute and each
subscription's health, from a whole batch at once."""

from __future__ import annotations

from gateway.store import retention
from gateway.store.sql import rates_sql
from gateway.store.sql.rates_sql import Health, HealthChange, PushOutcome, health_changes
from tests.conftest import OpenDatabase


def test_a_batch_says_per_subscription_its_last_success_and_the_failures_after_it() -> None:
    batch = [
        PushOutcome("t", "b", 1, False, "refused"),
        PushOutcome("t", "a", 2, True),
        PushOutcome("t", "b", 3, True),
        PushOutcome("t", "b", 4, False, "HTTP 500"),
        PushOutcome("t", "b", 5, False, "timed out"),
        PushOutcome("t", "c", 6, False, "reset"),
    ]
    assert health_changes(batch) == [
        HealthChange("t", "a", 2, None, 0, None),
        HealthChange("t", "b", 3, 5, 2, "timed out"),
        HealthChange("t", "c", None, 6, 1, "reset"),
    ]


def test_every_subscription_of_a_batch_is_written_and_a_streak_carries_on(
    open_database: OpenDatabase,
) -> None:
    database = open_database()
    minute = 60_000 * 1_000
    database.write(
        lambda c: rates_sql.record(
            c,
            [
                PushOutcome("t", "ok", minute, True),
                PushOutcome("t", "down", minute + 1, False, "reset"),
                PushOutcome("t", "flaky", minute + 2, False, "HTTP 500"),
                PushOutcome("t", "flaky", minute + 3, True),
            ],
        )
    )
    database.write(
        lambda c: rates_sql.record(
            c,
            [
                PushOutcome("t", "down", minute + 60_000, False, "timed out"),
                PushOutcome("t", "ok", minute + 60_001, True),
            ],
        )
    )
    names = ["ok", "down", "flaky"]
    health = database.read(lambda c: rates_sql.health_of(c, "t", names))
    assert health == {
        "ok": Health(minute + 60_001, None, 0, None),
        "down": Health(None, minute + 60_000, 2, "timed out"),
        "flaky": Health(minute + 3, None, 0, None),  # its failure came before its success
    }
    counts = database.read(lambda c: rates_sql.minute_counts(c, 1_000))
    assert counts == {
        (1_000, rates_sql.PUSH_OK): 2,
        (1_000, rates_sql.PUSH_FAILED): 2,
        (1_001, rates_sql.PUSH_OK): 1,
        (1_001, rates_sql.PUSH_FAILED): 1,
    }


def test_minutes_older_than_two_hours_go_with_the_retention_pass_not_the_settle(
    open_database: OpenDatabase,
) -> None:
    database = open_database()
    minute = 60_000 * 1_000
    old = [PushOutcome("t", "a", minute, True)]
    database.write(lambda c: rates_sql.record(c, old))
    two_hours_on = minute + rates_sql.KEEP_MINUTES * 60_000
    database.write(lambda c: rates_sql.record(c, [PushOutcome("t", "a", two_hours_on, True)]))
    kept = database.read(lambda c: rates_sql.minute_counts(c, 0))
    assert set(kept) == {(1_000, rates_sql.PUSH_OK), (1_120, rates_sql.PUSH_OK)}

    retention.retain(database, two_hours_on + 60_000, 86_400)  # a minute later
    assert database.read(lambda c: rates_sql.minute_counts(c, 0)) == {(1_120, rates_sql.PUSH_OK): 1}
