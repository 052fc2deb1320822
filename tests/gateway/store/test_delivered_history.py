"""The delivered history (migration 9) on each backend: what a successful settle keeps, what a
message's deliveries read back, and the purge of rows older than a day in bounded batches."""

from __future__ import annotations

import pytest

from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from gateway.store.base import Store, compose_store
from gateway.store.sql import retention_sql
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock

DAY_S = 86_400


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> Store:
    made = compose_store(open_database(), clock=clock)
    made.topics.create_topic("t", 65536, False)
    for name in ("a", "b"):
        made.topics.subscribe(Subscription("t", name, f"http://{name}.test/"))
    return made


def publish(store: Store) -> str:
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "t", "body", "X", store.now_ms()))
    return message_id


def claim(store: Store, message_id: str, subscription: str) -> DeliveryJob:
    """Lease the one delivery; every other one claimed with it is handed back."""
    jobs = store.deliveries.claim("w", 60, 100, frozenset())
    (job,) = [j for j in jobs if (j.message.id, j.subscription.name) == (message_id, subscription)]
    store.deliveries.release("w", [j.delivery_id for j in jobs if j is not job])
    return job


def attempt(store: Store, number: int, status: int, error: str | None = None) -> Attempt:
    outcome = "success" if status < 300 else "http_error"
    return Attempt(number, store.now_ms(), outcome, status, error, 10.0 * number)


def count_rows(store: Store) -> int:
    return store.database.read(
        lambda c: int(c.execute("SELECT COUNT(*) AS n FROM delivered").fetchone()["n"])
    )


def test_fails_twice_then_succeeds_keeps_all_three_attempts(store: Store, clock: Clock) -> None:
    message_id = publish(store)
    for number in (1, 2):
        job = claim(store, message_id, "a")
        failure = attempt(store, number, 502, f"HTTP 502 #{number}")
        store.deliveries.settle("w", [Settlement(job, failure, retry_at_ms=store.now_ms())])
        clock.now += 1
    job = claim(store, message_id, "a")
    assert job.attempts == 2
    store.deliveries.settle("w", [Settlement(job, attempt(store, 3, 204))])

    found = store.deliveries.message_deliveries(message_id)
    (row,) = [r for r in found.by_subscription() if r.name == "a"]
    (delivered,) = row.delivered
    assert [(a.attempt, a.status_code, a.error) for a in delivered.attempts] == [
        (1, 502, "HTTP 502 #1"),
        (2, 502, "HTTP 502 #2"),
        (3, 204, None),
    ]
    assert delivered.success.latency_ms == 30.0 and delivered.success.outcome == "success"
    assert row.pending == [] and row.subscription is not None
    # Subscription b has not been pushed yet: it is pending, with no attempts so far.
    (other,) = [r for r in found.by_subscription() if r.name == "b"]
    assert other.delivered == [] and [p.attempts for p in other.pending] == [[]]
    # The delivery and its attempts are gone from the pending tables as before.
    assert (
        store.database.read(
            lambda c: c.execute("SELECT COUNT(*) AS n FROM delivery_attempts").fetchone()["n"]
        )
        == 0
    )


def test_a_batch_of_first_try_successes_and_a_lapsed_lease_settled_twice(
    store: Store,
) -> None:
    ids = [publish(store) for _ in range(3)]
    jobs = store.deliveries.claim("w", 60, 100, frozenset())
    assert len(jobs) == 6
    settlements = [Settlement(job, attempt(store, 1, 200)) for job in jobs]
    store.deliveries.settle("w", settlements)
    # A second worker whose lease had lapsed reports the same pushes: one row each all the same.
    store.deliveries.settle("other", settlements[:2])
    assert count_rows(store) == 6
    found = store.deliveries.message_deliveries(ids[1])
    assert [(r.name, len(r.delivered)) for r in found.by_subscription()] == [("a", 1), ("b", 1)]
    assert found.known() and found.topic_name == "t"


def test_failures_and_dead_letters_keep_no_delivered_row(store: Store) -> None:
    message_id = publish(store)
    job_a, job_b = claim(store, message_id, "a"), claim(store, message_id, "b")
    store.deliveries.settle(
        "w",
        [
            Settlement(job_a, attempt(store, 1, 500), retry_at_ms=store.now_ms() + 1000),
            Settlement(job_b, attempt(store, 1, 500), dead_reason="retries exhausted"),
        ],
    )
    assert count_rows(store) == 0
    rows = store.deliveries.message_deliveries(message_id).by_subscription()
    assert [(r.name, len(r.pending), len(r.dead_letters)) for r in rows] == [
        ("a", 1, 0),
        ("b", 0, 1),
    ]


def test_delivered_is_shown_after_the_topic_message_is_gone(store: Store, clock: Clock) -> None:
    message_id = publish(store)
    job = claim(store, message_id, "a")
    store.deliveries.settle("w", [Settlement(job, attempt(store, 1, 204))])
    store.database.write(lambda c: c.execute("DELETE FROM topic_messages"))
    found = store.deliveries.message_deliveries(message_id)
    assert found.message is None and found.topic_name == "t"
    assert [r.name for r in found.by_subscription()] == ["a"]


def test_purge_drops_history_older_than_a_day_in_bounded_batches(
    store: Store, clock: Clock
) -> None:
    old = [publish(store) for _ in range(5)]
    for job in store.deliveries.claim("w", 60, 100, frozenset()):
        store.deliveries.settle("w", [Settlement(job, attempt(store, 1, 204))])
    clock.now += DAY_S / 2
    fresh = publish(store)
    job = claim(store, fresh, "a")
    store.deliveries.settle("w", [Settlement(job, attempt(store, 1, 204))])
    # Just before the old rows are a day old: nothing goes.
    clock.now += DAY_S / 2 - 1
    assert store.deliveries.retain(store.now_ms()) == 0
    clock.now += 2
    now = store.now_ms()
    # Bounded: a batch of 3 stops after the third old row's message (both its rows go).
    cutoff = store.deliveries.history_kept_since(now)
    assert store.database.write(lambda c: retention_sql.purge_delivered(c, cutoff, limit=3)) == 4
    # The rest of the history, and the topic messages no delivery needs (6 + 5).
    assert store.deliveries.retain(now) == 11
    assert count_rows(store) == 1
    assert store.deliveries.message_deliveries(old[0]).delivered == []
    assert store.deliveries.message_deliveries(fresh).delivered


def test_purge_keeps_a_recent_push_of_an_old_message(store: Store, clock: Clock) -> None:
    """A dead letter replayed days later keeps its MessageId: its push is kept a day too."""
    message_id = publish(store)
    job = claim(store, message_id, "a")
    store.deliveries.settle("w", [Settlement(job, attempt(store, 1, 500), dead_reason="gone")])
    clock.now += 3 * DAY_S
    (letter,) = store.deliveries.list_dead_letters().items
    store.deliveries.replay_dead_letter(letter.id)
    job = claim(store, message_id, "a")
    store.deliveries.settle("w", [Settlement(job, attempt(store, 1, 204))])
    store.deliveries.expire()
    assert count_rows(store) == 1
    clock.now += DAY_S + 1
    store.deliveries.expire()
    assert count_rows(store) == 0


def test_deliver_again_after_a_success(store: Store, clock: Clock) -> None:
    message_id = publish(store)
    for name in ("a", "b"):
        store.deliveries.settle(
            "w", [Settlement(claim(store, message_id, name), attempt(store, 1, 204))]
        )
    clock.now += 1
    store.deliveries.deliver_again(message_id, "a")
    store.deliveries.settle(
        "w", [Settlement(claim(store, message_id, "a"), attempt(store, 1, 201))]
    )
    (row, _) = store.deliveries.message_deliveries(message_id).by_subscription()
    assert [d.success.status_code for d in row.delivered] == [204, 201]
